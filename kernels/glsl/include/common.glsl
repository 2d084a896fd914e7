// Included first by every kernel (right after #version): extensions, workgroup size, indexing.
// The host defines WICK_F64 / WICK_I64 when the device has 64-bit floats / integers.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#ifdef WICK_I64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif

#define WG_SIZE 256
layout(local_size_x = WG_SIZE) in;

// The host launches ceil(n / WG_SIZE) groups as a 2-D grid (x <= 65535): this is the linear index.
uint global_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WG_SIZE;
}

// The workgroup's linear index in that 2-D grid (kernels with a workgroup per output).
uint group_index() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
