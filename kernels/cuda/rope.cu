// Rotary embedding of x (b, h, t, d) with cos/sin (b, t, d/2): INTERLEAVED 0 rotates the pairs
// (i, i + d/2), 1 the pairs (2i, 2i + 1). Any strides (stride-0 b for shared tables); the
// output is contiguous. A thread per output element.
// Bindings: 0 x, 1 cos, 2 sin, 3 y. Specialization: WICK_SPEC_0 INTERLEAVED.
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/rope.cuh"

#if DT_KIND != 0 && DT_KIND != 1
#error "rope.cu: DT is a float dtype"
#endif

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 0
#endif
constexpr uint32_t INTERLEAVED = WICK_SPEC_0;

WICK_PARAMS_STRUCT(RopeParams, WICK_PARAMS_ROPE(WICK_CU_FIELD, WICK_CU_ARRAY))

typedef STORAGE_T(DT) ST;
typedef COMPUTE_T(DT) CT;

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const RopeParams& pc = PARAMS(RopeParams, args);
  const ST* x = buffer_at<const ST>(args, 0);
  const ST* cs = buffer_at<const ST>(args, 1);
  const ST* sn = buffer_at<const ST>(args, 2);
  ST* y = buffer_at<ST>(args, 3);
  const uint32_t e = global_index();
  if (e >= pc.numel) return;
  const uint32_t d = pc.shape[3];
  uint32_t r = e;
  const uint32_t i = r % d;
  r /= d;
  const uint32_t ti = r % pc.shape[2];
  r /= pc.shape[2];
  const uint32_t hi = r % pc.shape[1];
  const uint32_t bi = r / pc.shape[1];
  const uint32_t row =
      pc.x_offset + bi * pc.x_strides[0] + hi * pc.x_strides[1] + ti * pc.x_strides[2];
  uint32_t pair, lo, hi_pos;
  rope_pair(i, d, INTERLEAVED == 1u, pair, lo, hi_pos);
  const CT a = LOAD(DT, x[row + lo * pc.x_strides[3]]);
  const CT b = LOAD(DT, x[row + hi_pos * pc.x_strides[3]]);
  const CT c = LOAD(
      DT, cs[pc.c_offset + bi * pc.c_strides[0] + ti * pc.c_strides[1] + pair * pc.c_strides[2]]);
  const CT s = LOAD(
      DT, sn[pc.s_offset + bi * pc.s_strides[0] + ti * pc.s_strides[1] + pair * pc.s_strides[2]]);
  y[e] = PACK(DT, rope_rotate(i == lo, a, b, c, s));
}
