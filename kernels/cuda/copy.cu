// dst[view] = convert(src[view]): strided copies (copy, contiguous, slice_set), casts, and the
// gather of a view into a contiguous staging buffer for read-back. SRC_DT, DST_DT: the dtypes;
// SAME_DT: 1 when they are equal. Bindings: 0 src, 1 dst (strided).
#include "include/common.cuh"
#include "include/dtype.cuh"

#define N_INPUTS 1
#define OUT_STRIDED 1
#include "include/strided.cuh"

extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const Push& pc = PARAMS(Push, args);
  const uint32_t i = global_index();
  if (i >= pc.numel) return;
  uint32_t off[N_STRIDED];
  strided_offsets(pc, i, off);
  const STORAGE_T(SRC_DT)* x = buffer_at<const STORAGE_T(SRC_DT)>(args, 0);
  STORAGE_T(DST_DT)* y = buffer_at<STORAGE_T(DST_DT)>(args, 1);
#if SAME_DT
  y[off[1]] = x[off[0]];  // bit-exact: NaN payloads and -0 survive
#else
  y[off[1]] = CONVERT(DST_DT, LOAD(SRC_DT, x[off[0]]));
#endif
}
