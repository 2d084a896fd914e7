#version 450
// Tiled GEMM: C (batch, m, n) = A (batch, m, k) x B (batch, k, n), any strides. A workgroup of
// 16 x 16 threads computes a BM x BN tile of C, each thread (BM/16) x (BN/16) outputs, stepping
// through k by BK with both tiles staged in shared memory. Tile sizes come from the host's table
// (vk_matmul.cpp); ALIGNED (bit 0: m % BM == 0, bit 1: n % BN, bit 2: k % BK) drops bound checks.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/batch.glsl"

layout(constant_id = 0) const uint BM = 64u;
layout(constant_id = 1) const uint BN = 64u;
layout(constant_id = 2) const uint BK = 16u;
layout(constant_id = 3) const uint ALIGNED = 0u;
const uint TM = BM / 16u, TN = BN / 16u;  // at most 4 each

layout(set = 0, binding = 0) readonly buffer A { STORAGE_T(DT) a[]; };
layout(set = 0, binding = 1) readonly buffer B { STORAGE_T(DT) b[]; };
layout(set = 0, binding = 2) writeonly buffer C { STORAGE_T(DT) c[]; };

#define CT COMPUTE_T(DT)
shared CT As[BK * BM];
shared CT Bs[BK * BN];

void main() {
  const uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
  const uint z = pc.batch_base + gl_WorkGroupID.z;
  const uvec2 base = batch_offsets(z);
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  const bool full_m = (ALIGNED & 1u) != 0u, full_n = (ALIGNED & 2u) != 0u, full_k = (ALIGNED & 4u) != 0u;
  CT acc[4][4];
  for (uint i = 0u; i < 4u; i++)
    for (uint j = 0u; j < 4u; j++) acc[i][j] = CT(0);

  for (uint k0 = 0u; k0 < pc.depth; k0 += BK) {
    for (uint e = t; e < BM * BK; e += WG_SIZE) {
      const uint i = e / BK, kk = e % BK, r = row0 + i, k = k0 + kk;
      CT v = CT(0);
      if ((full_m || r < pc.rows) && (full_k || k < pc.depth)) v = LOAD(DT, a[base.x + r * pc.a_row + k * pc.a_k]);
      As[kk * BM + i] = v;
    }
    for (uint e = t; e < BK * BN; e += WG_SIZE) {
      const uint kk = e / BN, j = e % BN, col = col0 + j, k = k0 + kk;
      CT v = CT(0);
      if ((full_n || col < pc.cols) && (full_k || k < pc.depth)) v = LOAD(DT, b[base.y + k * pc.b_k + col * pc.b_col]);
      Bs[kk * BN + j] = v;
    }
    barrier();
    for (uint kk = 0u; kk < BK; kk++) {
      CT av[4], bv[4];
      for (uint i = 0u; i < TM; i++) av[i] = As[kk * BM + ty + 16u * i];
      for (uint j = 0u; j < TN; j++) bv[j] = Bs[kk * BN + tx + 16u * j];
      for (uint i = 0u; i < TM; i++)
        for (uint j = 0u; j < TN; j++) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  const uint dst = z * pc.rows * pc.cols;
  for (uint i = 0u; i < TM; i++) {
    const uint r = row0 + ty + 16u * i;
    if (!full_m && r >= pc.rows) continue;
    for (uint j = 0u; j < TN; j++) {
      const uint col = col0 + tx + 16u * j;
      if (full_n || col < pc.cols) c[dst + r * pc.cols + col] = PACK(DT, acc[i][j]);
    }
  }
}
