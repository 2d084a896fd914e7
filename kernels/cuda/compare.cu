// y (u8) = a cmp b ? 1 : 0 for one dtype DT, broadcasting through strides; OP (WICK_SPEC_0) is
// wick's CmpOp value. Bindings: 0 a, 1 b, 2 y (contiguous).
#include "include/common.cuh"
#include "include/dtype.cuh"

#define N_INPUTS 2
#define OUT_STRIDED 0
#include "include/strided.cuh"

#ifndef WICK_SPEC_0
#error "compare.cu needs WICK_SPEC_0, the op"
#endif
constexpr uint32_t OP = WICK_SPEC_0;

// wick::backend::CmpOp
#define EQ 0u
#define NE 1u
#define LT 2u
#define LE 3u
#define GT 4u
#define GE 5u

typedef COMPUTE_T(DT) CT;

// IEEE comparisons (NaN is unordered: only NE holds), exact on f16/bf16 widened to float.
WICK_DEV bool apply(CT u, CT v) {
  if (OP == EQ) return u == v;
  if (OP == NE) return u != v;
  if (OP == LT) return u < v;
  if (OP == LE) return u <= v;
  if (OP == GT) return u > v;
  return u >= v;
}

extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const Push& pc = PARAMS(Push, args);
  const uint32_t i = global_index();
  if (i >= pc.numel) return;
  uint32_t off[N_STRIDED];
  strided_offsets(pc, i, off);
  const STORAGE_T(DT)* a = buffer_at<const STORAGE_T(DT)>(args, 0);
  const STORAGE_T(DT)* b = buffer_at<const STORAGE_T(DT)>(args, 1);
  uint8_t* y = buffer_at<uint8_t>(args, 2);
  y[out_offset(pc, i)] = apply(LOAD(DT, a[off[0]]), LOAD(DT, b[off[1]])) ? 1 : 0;
}
