// y = cond != 0 ? t : f, broadcasting all three through strides. COND_DT: u8/u32/i64; DT: the
// values, copied bit for bit. Bindings: 0 cond, 1 t, 2 f, 3 y (contiguous).
#include "include/common.cuh"
#include "include/dtype.cuh"

#define N_INPUTS 3
#define OUT_STRIDED 0
#include "include/strided.cuh"

extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const Push& pc = PARAMS(Push, args);
  const uint32_t i = global_index();
  if (i >= pc.numel) return;
  uint32_t off[N_STRIDED];
  strided_offsets(pc, i, off);
  const STORAGE_T(COND_DT)* c = buffer_at<const STORAGE_T(COND_DT)>(args, 0);
  const STORAGE_T(DT)* t = buffer_at<const STORAGE_T(DT)>(args, 1);
  const STORAGE_T(DT)* f = buffer_at<const STORAGE_T(DT)>(args, 2);
  STORAGE_T(DT)* y = buffer_at<STORAGE_T(DT)>(args, 3);
  y[out_offset(pc, i)] = LOAD(COND_DT, c[off[0]]) != COMPUTE_T(COND_DT)(0) ? t[off[1]] : f[off[2]];
}
