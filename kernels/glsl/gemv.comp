#version 450
// Matrix x vector for matmuls with m == 1 or n == 1: y[z, i] = sum_k A[z, i, k] * v[z, k], where
// "A" is the matrix operand (rows: a_row, along k: a_k) and v the vector (b_k). PER_GROUP 1: a
// workgroup per output, for rows contiguous along k (coalesced reads); 0: a thread per output.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/batch.glsl"

layout(constant_id = 0) const uint PER_GROUP = 0u;
layout(set = 0, binding = 0) readonly buffer A { STORAGE_T(DT) a[]; };
layout(set = 0, binding = 1) readonly buffer V { STORAGE_T(DT) v[]; };
layout(set = 0, binding = 2) writeonly buffer Y { STORAGE_T(DT) y[]; };

#define CT COMPUTE_T(DT)
shared CT s_sum[WG_SIZE];

void main() {
  const uint z = pc.batch_base + gl_WorkGroupID.z;
  const uvec2 base = batch_offsets(z);
  if (PER_GROUP == 0u) {
    const uint i = global_index();
    if (i >= pc.rows) return;
    CT acc = CT(0);
    const uint row = base.x + i * pc.a_row;
    for (uint k = 0u; k < pc.depth; k++) acc += LOAD(DT, a[row + k * pc.a_k]) * LOAD(DT, v[base.y + k * pc.b_k]);
    y[z * pc.rows + i] = PACK(DT, acc);
    return;
  }
  const uint i = group_index(), t = gl_LocalInvocationID.x;
  if (i >= pc.rows) return;  // uniform per workgroup
  const uint row = base.x + i * pc.a_row;
  CT acc = CT(0);
  for (uint k = t; k < pc.depth; k += WG_SIZE) acc += LOAD(DT, a[row + k * pc.a_k]) * LOAD(DT, v[base.y + k * pc.b_k]);
  s_sum[t] = acc;
  barrier();
  for (uint step = WG_SIZE / 2u; step > 0u; step >>= 1) {
    if (t < step) s_sum[t] += s_sum[t + step];
    barrier();
  }
  if (t == 0u) y[z * pc.rows + i] = PACK(DT, s_sum[0]);
}
