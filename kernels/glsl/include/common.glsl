// Included first by every kernel (right after #version): extensions, workgroup size, indexing.
// The host defines WICK_F64 / WICK_I64 when the device has 64-bit floats / integers.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#ifdef WICK_I64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#if defined(WICK_PRESERVE_NAN32) || defined(WICK_PRESERVE_DENORM32) || \
    defined(WICK_PRESERVE_NAN64) || defined(WICK_PRESERVE_DENORM64)
#extension GL_EXT_spirv_intrinsics : require
#endif

// Float controls (SPIR-V 1.4): without them a driver may flush subnormals and assume no NaN,
// infinities or signed zeros (NVIDIA's does both: relu(NaN) came out 0). wick's CPU keeps all
// of them, so kernels ask for the same where the device offers it (the host defines these).
// glslang keeps one execution mode per kind, so a kernel asks for the width it computes in:
// 64 when any of its dtypes is f64, else 32.
#define WICK_WIDTH 32
#ifdef DT_KIND
#if DT_KIND == 1
#undef WICK_WIDTH
#define WICK_WIDTH 64
#endif
#endif
#ifdef SRC_DT_KIND
#if SRC_DT_KIND == 1 || DST_DT_KIND == 1
#undef WICK_WIDTH
#define WICK_WIDTH 64
#endif
#endif
#if WICK_WIDTH == 32 && defined(WICK_PRESERVE_NAN32) || WICK_WIDTH == 64 && defined(WICK_PRESERVE_NAN64)
spirv_execution_mode(capabilities = [4466], 4461, WICK_WIDTH);  // SignedZeroInfNanPreserve
#endif
#if WICK_WIDTH == 32 && defined(WICK_PRESERVE_DENORM32) || WICK_WIDTH == 64 && defined(WICK_PRESERVE_DENORM64)
spirv_execution_mode(capabilities = [4464], 4459, WICK_WIDTH);  // DenormPreserve
#endif

// A kernel may set its own workgroup size with -DWG_SIZE=n (the quantized matmuls do).
#ifndef WG_SIZE
#define WG_SIZE 256
#endif
layout(local_size_x = WG_SIZE) in;

// The host launches ceil(n / WG_SIZE) groups as a 2-D grid (x <= 65535): this is the linear index.
uint global_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WG_SIZE;
}

// The workgroup's linear index in that 2-D grid (kernels with a workgroup per output).
uint group_index() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
