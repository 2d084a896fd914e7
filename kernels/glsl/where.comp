#version 450
// y = cond != 0 ? t : f, broadcasting all three through strides. COND_DT: u8/u32/i64; DT: values.
#include "include/common.glsl"
#include "include/dtype.glsl"

#define N_INPUTS 3
#define OUT_STRIDED 0
#include "include/strided.glsl"

layout(set = 0, binding = 0) readonly buffer Cond { STORAGE_T(COND_DT) c[]; };
layout(set = 0, binding = 1) readonly buffer OnTrue { STORAGE_T(DT) t[]; };
layout(set = 0, binding = 2) readonly buffer OnFalse { STORAGE_T(DT) f[]; };
layout(set = 0, binding = 3) writeonly buffer Out { STORAGE_T(DT) y[]; };

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint off[N_STRIDED];
  strided_offsets(i, off);
  // Plain loads and stores: the values are copied bit for bit, in any dtype.
  if (LOAD(COND_DT, c[off[0]]) != COMPUTE_T(COND_DT)(0)) y[out_offset(i)] = t[off[1]];
  else y[out_offset(i)] = f[off[2]];
}
