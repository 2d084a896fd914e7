// y = a op b for one dtype DT, broadcasting through strides; OP (WICK_SPEC_0) is wick's BinaryOp
// value. DT_KIND: 0 f32/f16/bf16, 1 f64, 2 u8/u32, 3 i64; DTYPE_CODE (integers): the DType,
// for the error record. Bindings: 0 a, 1 b, 2 y (contiguous), 3 the error record (integers).
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/math.cuh"

#define N_INPUTS 2
#define OUT_STRIDED 0
#include "include/strided.cuh"
#if DT_KIND >= 2
#include "include/errors.cuh"
#define ERROR_BINDING 3
#endif

#ifndef WICK_SPEC_0
#error "binary.cu needs WICK_SPEC_0, the op"
#endif
constexpr uint32_t OP = WICK_SPEC_0;

// wick::backend::BinaryOp
#define ADD 0u
#define SUB 1u
#define MUL 2u
#define DIV 3u
#define MAXIMUM 4u
#define MINIMUM 5u
#define POW 6u

typedef COMPUTE_T(DT) CT;

#if DT_KIND <= 1
// As the CPU computes them (src/cpu/binary.cpp); maximum and minimum propagate NaN.
WICK_DEV CT apply(CT u, CT v) {
  if (OP == ADD) return u + v;
  if (OP == SUB) return u - v;
  if (OP == MUL) return u * v;
  if (OP == DIV) return u / v;
  if (OP == MAXIMUM) return maximum_c(u, v);
  if (OP == MINIMUM) return minimum_c(u, v);
  if (OP == POW) return pow_c(u, v);
  return u;
}
#else
// Integers: add, sub and mul wrap (in WRAP_T: signed overflow is undefined), div truncates
// toward zero, i64 min / -1 wraps to i64 min, and a division by zero gives 0 and is refused like
// the CPU refuses it, at the host's next wait.
typedef WRAP_T(DT) WT;
WICK_DEV CT apply(CT u, CT v, uint32_t* err) {
  if (OP == ADD) return static_cast<CT>(static_cast<WT>(u) + static_cast<WT>(v));
  if (OP == SUB) return static_cast<CT>(static_cast<WT>(u) - static_cast<WT>(v));
  if (OP == MUL) return static_cast<CT>(static_cast<WT>(u) * static_cast<WT>(v));
  if (OP == DIV) {
    if (v == CT(0)) {
      report_error(err, WICK_ERROR_INT_DIV_BY_ZERO, DTYPE_CODE, 0u);
      return CT(0);
    }
#if DT_KIND == 3
    if (v == CT(-1)) return static_cast<CT>(WT(0) - static_cast<WT>(u));  // the division traps
#endif
    return u / v;
  }
  if (OP == MAXIMUM) return u > v ? u : v;
  if (OP == MINIMUM) return u < v ? u : v;
  return u;
}
#endif

extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const Push& pc = PARAMS(Push, args);
  const uint32_t i = global_index();
  if (i >= pc.numel) return;
  uint32_t off[N_STRIDED];
  strided_offsets(pc, i, off);
  const STORAGE_T(DT)* a = buffer_at<const STORAGE_T(DT)>(args, 0);
  const STORAGE_T(DT)* b = buffer_at<const STORAGE_T(DT)>(args, 1);
  STORAGE_T(DT)* y = buffer_at<STORAGE_T(DT)>(args, 2);
#if DT_KIND <= 1
  y[out_offset(pc, i)] = PACK(DT, apply(LOAD(DT, a[off[0]]), LOAD(DT, b[off[1]])));
#else
  uint32_t* err = buffer_at<uint32_t>(args, ERROR_BINDING);
  y[out_offset(pc, i)] = PACK(DT, apply(LOAD(DT, a[off[0]]), LOAD(DT, b[off[1]]), err));
#endif
}
