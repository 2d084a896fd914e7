#version 450
// Rotary embedding of x (b, h, t, d) with cos/sin (b, t, d/2): INTERLEAVED 0 rotates the pairs
// (i, i + d/2), 1 the pairs (2i, 2i + 1). Any strides (stride-0 b for shared tables); the
// output is contiguous.
#include "include/common.glsl"
#include "include/dtype.glsl"

#include "include/params.glsl"
layout(push_constant) uniform Push {
  WICK_PARAMS_ROPE(WICK_FIELD, WICK_ARRAY)  // x: b, h, t, d; cos/sin strides: b, t, i
} pc;

layout(constant_id = 0) const uint INTERLEAVED = 0u;
layout(set = 0, binding = 0) readonly buffer X { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 1) readonly buffer Cos { STORAGE_T(DT) cs[]; };
layout(set = 0, binding = 2) readonly buffer Sin { STORAGE_T(DT) sn[]; };
layout(set = 0, binding = 3) writeonly buffer Out { STORAGE_T(DT) y[]; };

#define CT COMPUTE_T(DT)
#include "include/rope.glsl"

void main() {
  const uint e = global_index();
  if (e >= pc.numel) return;
  const uint d = pc.shape[3];
  uint r = e;
  const uint i = r % d;
  r /= d;
  const uint ti = r % pc.shape[2];
  r /= pc.shape[2];
  const uint hi = r % pc.shape[1];
  const uint bi = r / pc.shape[1];
  const uint row = pc.x_offset + bi * pc.x_strides[0] + hi * pc.x_strides[1] + ti * pc.x_strides[2];
  uint pair, lo, hi_pos;
  rope_pair(i, d, INTERLEAVED == 1u, pair, lo, hi_pos);
  const CT a = LOAD(DT, x[row + lo * pc.x_strides[3]]);
  const CT b = LOAD(DT, x[row + hi_pos * pc.x_strides[3]]);
  const CT c = LOAD(DT, cs[pc.c_offset + bi * pc.c_strides[0] + ti * pc.c_strides[1] + pair * pc.c_strides[2]]);
  const CT s = LOAD(DT, sn[pc.s_offset + bi * pc.s_strides[0] + ti * pc.s_strides[1] + pair * pc.s_strides[2]]);
  y[e] = PACK(DT, rope_rotate(i == lo, a, b, c, s));
}
