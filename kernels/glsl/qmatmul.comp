#version 450
// y (m, n_out) = x (m, k) @ W^T for longer x (prompts), W in a block format (QTYPE, see
// include/quant.glsl): matmul.comp's tiling, with W's tile decoded from its blocks as it is staged
// in shared memory. A workgroup of 16 x 16 threads computes a BM x BN tile of y, each thread
// (BM/16) x (BN/16) outputs, stepping through k by BK = 32 (k is a multiple of every block size,
// so only m and n_out need bound checks; ALIGNED bit 0: m % BM == 0, bit 1: n_out % BN == 0).
// ACT_Q8: x comes quantized to 8 bits by qact.comp and is staged as d_x * q (the CPU's values).
#include "include/common.glsl"
#include "include/dtype.glsl"
#define QUANT_BINDING 0
#include "include/quant.glsl"

layout(constant_id = 0) const uint BM = 64u;
layout(constant_id = 1) const uint BN = 64u;
layout(constant_id = 2) const uint ALIGNED = 0u;
#define BK 32u
const uint TM = BM / 16u, TN = BN / 16u;  // at most 4 each

#ifdef ACT_Q8
// x quantized by qact.comp (row r at word r * pc.x_row), staged as d_x * q: the CPU's products.
layout(set = 0, binding = 1) readonly buffer XQ { uint xq[]; };
#else
layout(set = 0, binding = 1) readonly buffer X { STORAGE_T(DT) x[]; };
#endif
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };

shared float Xs[BK * BM];
shared float Ws[BK * BN];

void main() {
  const uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  const bool full_m = (ALIGNED & 1u) != 0u, full_n = (ALIGNED & 2u) != 0u;
  float acc[4][4];
  for (uint i = 0u; i < 4u; i++)
    for (uint j = 0u; j < 4u; j++) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
    for (uint e = t; e < BM * BK; e += WG_SIZE) {
      const uint i = e / BK, kk = e % BK, r = row0 + i;
      float v = 0.0;
      if (full_m || r < pc.m) {
#ifdef ACT_Q8
        const uint ex = k0 + kk, base = r * pc.x_row;
        const int q = bitfieldExtract(int(xq[base + ex / 4u]), int(8u * (ex & 3u)), 8);
        v = uintBitsToFloat(xq[base + act_scale_word(pc.k, ex)]) * float(q);
#else
        v = LOAD(DT, x[pc.x_offset + r * pc.x_row + (k0 + kk) * pc.x_k]);
#endif
      }
      Xs[kk * BM + i] = v;
    }
    // BN rows of W, BK / 8 runs of 8 elements each.
    for (uint u = t; u < BN * (BK / 8u); u += WG_SIZE) {
      const uint j = u / (BK / 8u), run = u % (BK / 8u), col = col0 + j, e = k0 + 8u * run;
      float w[8];
      if (full_n || col < pc.n_out)
        dequant8(col * pc.row_bytes + (e / QK) * BLOCK_BYTES, e % QK, w);
      else
        for (uint i = 0u; i < 8u; i++) w[i] = 0.0;
      for (uint i = 0u; i < 8u; i++) Ws[(8u * run + i) * BN + j] = w[i];
    }
    barrier();
    for (uint kk = 0u; kk < BK; kk++) {
      float av[4], bv[4];
      for (uint i = 0u; i < TM; i++) av[i] = Xs[kk * BM + ty + 16u * i];
      for (uint j = 0u; j < TN; j++) bv[j] = Ws[kk * BN + tx + 16u * j];
      for (uint i = 0u; i < TM; i++)
        for (uint j = 0u; j < TN; j++) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (uint i = 0u; i < TM; i++) {
    const uint r = row0 + ty + 16u * i;
    if (!full_m && r >= pc.m) continue;
    for (uint j = 0u; j < TN; j++) {
      const uint col = col0 + tx + 16u * j;
      if (full_n || col < pc.n_out) y[r * pc.n_out + col] = acc[i][j];
    }
  }
}
