#version 450
// f16 GEMM on cooperative matrices (tensor cores), VK_NV_cooperative_matrix: C (batch, m, n) =
// A (batch, m, k) x B (batch, k, n), f16 in, f32 sums, f16 out. WG_SIZE threads (128 or 256, a
// define) = subgroups of 32 as 2 x (WG_SIZE / 64); a workgroup computes a BM x BN tile, each
// subgroup (BM / 2) x (BN / (WG_SIZE / 64)) of it as 16 x 16 fragments. k advances by BK, 32 or
// 64 (the define BK_DEF), with both tiles staged in shared memory in units of 8 halves
// (uvec4) while the next k tile is already being read from global memory into registers. BK = 32
// uses two shared stages (one barrier per step); BK = 64, which reads an operand stored along k
// in 128-byte runs per row instead of 64, fits one stage in 48 KiB (two barriers per step). (On an
// H200, 64 against 32 measured +11-25% for those layouts and -19% for the others, with operands
// gathered element by element; not measured again since they arrive by vectors.)
//
// How an operand reaches shared memory (A_MODE, B_MODE; chosen by the host from its strides):
//   0: gathered element by element through its strides (any layout);
//   1: 16-byte vectors along k for A, along n for B (rows contiguous, 8-aligned);
//   2: 16-byte vectors along m for A, along k for B (the transposed layouts), kept in that
//      orientation and read as column-major fragments.
// ALIGNED (bit 0: m % BM == 0, bit 1: n % BN, bit 2: k % BK) drops bound checks; vector modes
// need the vector's dimension to be a multiple of 8, so a vector is wholly in range or out.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/batch.glsl"

layout(constant_id = 0) const uint BM = 128u;  // 64 or 128
layout(constant_id = 1) const uint BN = 128u;  // 64 or 128
layout(constant_id = 2) const uint ALIGNED = 0u;
layout(constant_id = 3) const uint A_MODE = 0u;
layout(constant_id = 4) const uint B_MODE = 0u;
// BK is a define, so the stage count, the shared sizes and the loop bounds it sets are plain
// constants in the module.
#ifndef BK_DEF
#define BK_DEF 32
#endif
const uint BK = BK_DEF;  // 32 or 64
const uint STAGES = BK == 32u ? 2u : 1u;
const uint WARPS_N = WG_SIZE / 64u;  // subgroups along n (2 along m)
const uint WM = BM / 2u, WN = BN / WARPS_N;  // a subgroup's part of the tile
const uint FM = WM / 16u, FN = WN / 16u;     // its 16 x 16 fragments
// Shared strides in uvec4 units, one vector of padding against bank conflicts.
const uint SK = BK / 8u + 1u;   // k-contiguous rows (A mode 0/1, B mode 2)
const uint SM = BM / 8u + 1u;   // m-contiguous rows (A mode 2)
const uint SN = BN / 8u + 1u;   // n-contiguous rows (B mode 0/1)
const uint A_STAGE = A_MODE == 2u ? BK * SM : BM * SK;  // uvec4 per stage
const uint B_STAGE = B_MODE == 2u ? BN * SK : BK * SN;
const uint A_VECS = BM * BK / 8u, B_VECS = BK * BN / 8u;  // vectors per tile
const uint A_PER = (A_VECS + WG_SIZE - 1u) / WG_SIZE, B_PER = (B_VECS + WG_SIZE - 1u) / WG_SIZE;

layout(set = 0, binding = 0) readonly buffer A { uint16_t a[]; };
layout(set = 0, binding = 0) readonly buffer A4 { uvec4 a4[]; };
layout(set = 0, binding = 1) readonly buffer B { uint16_t b[]; };
layout(set = 0, binding = 1) readonly buffer B4 { uvec4 b4[]; };
layout(set = 0, binding = 2) writeonly buffer C { uint16_t c[]; };
layout(set = 0, binding = 2) writeonly buffer CH { float16_t ch[]; };

// STAGES each. Edge tiles reuse As after the last step: a 16 x 16 f32 fragment per subgroup (at
// least 8 x 64 vectors: a stage holds 32 x 9 or more).
shared uvec4 As[STAGES * A_STAGE];
shared uvec4 Bs[STAGES * B_STAGE];

uint row0, col0;
uvec2 base;
bool full_m, full_n, full_k;

uint pack2(uint lo, uint hi) { return lo | (hi << 16); }

// Vector v of the A tile at k0: where it lives in shared memory, and its 8 halves.
uint a_slot(uint v) {
  if (A_MODE == 2u) {  // v = kk * (BM / 8) + i8: 8 rows at one k
    const uint kk = v / (BM / 8u), i8 = v % (BM / 8u);
    return kk * SM + i8;
  }
  const uint i = v / (BK / 8u), k8 = v % (BK / 8u);  // one row, 8 k
  return i * SK + k8;
}
uvec4 a_load(uint v, uint k0) {
  if (A_MODE == 2u) {
    const uint kk = v / (BM / 8u), i = (v % (BM / 8u)) * 8u, r = row0 + i, k = k0 + kk;
    if ((!full_m && r >= pc.rows) || (!full_k && k >= pc.depth)) return uvec4(0u);
    return a4[(base.x + r + k * pc.a_k) / 8u];
  }
  const uint i = v / (BK / 8u), kk = (v % (BK / 8u)) * 8u, r = row0 + i, k = k0 + kk;
  if (!full_m && r >= pc.rows) return uvec4(0u);
  if (A_MODE == 1u) {
    if (!full_k && k >= pc.depth) return uvec4(0u);
    return a4[(base.x + r * pc.a_row + k) / 8u];
  }
  uint h[8];
  for (uint e = 0u; e < 8u; e++)
    h[e] = (full_k || k + e < pc.depth) ? uint(a[base.x + r * pc.a_row + (k + e) * pc.a_k]) : 0u;
  return uvec4(pack2(h[0], h[1]), pack2(h[2], h[3]), pack2(h[4], h[5]), pack2(h[6], h[7]));
}

uint b_slot(uint v) {
  if (B_MODE == 2u) {  // v = j * (BK / 8) + k8: one column, 8 k
    const uint j = v / (BK / 8u), k8 = v % (BK / 8u);
    return j * SK + k8;
  }
  const uint kk = v / (BN / 8u), j8 = v % (BN / 8u);  // one k, 8 columns
  return kk * SN + j8;
}
uvec4 b_load(uint v, uint k0) {
  if (B_MODE == 2u) {
    const uint j = v / (BK / 8u), kk = (v % (BK / 8u)) * 8u, col = col0 + j, k = k0 + kk;
    if ((!full_n && col >= pc.cols) || (!full_k && k >= pc.depth)) return uvec4(0u);
    return b4[(base.y + col * pc.b_col + k) / 8u];
  }
  const uint kk = v / (BN / 8u), j = (v % (BN / 8u)) * 8u, col = col0 + j, k = k0 + kk;
  if (!full_k && k >= pc.depth) return uvec4(0u);
  if (B_MODE == 1u) {
    if (!full_n && col >= pc.cols) return uvec4(0u);
    return b4[(base.y + k * pc.b_k + col) / 8u];
  }
  uint h[8];
  for (uint e = 0u; e < 8u; e++)
    h[e] = (full_n || col + e < pc.cols) ? uint(b[base.y + k * pc.b_k + (col + e) * pc.b_col]) : 0u;
  return uvec4(pack2(h[0], h[1]), pack2(h[2], h[3]), pack2(h[4], h[5]), pack2(h[6], h[7]));
}

void main() {
  const uint t = gl_LocalInvocationID.x, sg = gl_SubgroupID;
  const uint z = pc.batch_base + gl_WorkGroupID.z;
  base = batch_offsets(z);
  row0 = gl_WorkGroupID.y * BM;
  col0 = gl_WorkGroupID.x * BN;
  full_m = (ALIGNED & 1u) != 0u;
  full_n = (ALIGNED & 2u) != 0u;
  full_k = (ALIGNED & 4u) != 0u;
  const uint wm = (sg / WARPS_N) * WM, wn = (sg % WARPS_N) * WN;  // the subgroup's corner

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN];
  [[unroll]] for (uint i = 0u; i < FM; i++)
    [[unroll]] for (uint j = 0u; j < FN; j++) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  uvec4 ra[A_PER], rb[B_PER];
  [[unroll]] for (uint p = 0u; p < A_PER; p++)
    if (t + p * WG_SIZE < A_VECS) As[a_slot(t + p * WG_SIZE)] = a_load(t + p * WG_SIZE, 0u);
  [[unroll]] for (uint p = 0u; p < B_PER; p++)
    if (t + p * WG_SIZE < B_VECS) Bs[b_slot(t + p * WG_SIZE)] = b_load(t + p * WG_SIZE, 0u);
  barrier();

  uint stage = 0u;
  for (uint k0 = 0u; k0 < pc.depth; k0 += BK) {
    const bool more = k0 + BK < pc.depth;
    if (more) {  // the next tile's loads are in flight during this tile's products
      [[unroll]] for (uint p = 0u; p < A_PER; p++)
        if (t + p * WG_SIZE < A_VECS) ra[p] = a_load(t + p * WG_SIZE, k0 + BK);
      [[unroll]] for (uint p = 0u; p < B_PER; p++)
        if (t + p * WG_SIZE < B_VECS) rb[p] = b_load(t + p * WG_SIZE, k0 + BK);
    }
    const uint ab = stage * A_STAGE, bb = stage * B_STAGE;
    [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM];
      [[unroll]] for (uint i = 0u; i < FM; i++) {
        const uint r = wm + 16u * i;
        if (A_MODE == 2u)
          coopMatLoadNV(fa[i], As, ab + kk * SM + r / 8u, SM, true);
        else
          coopMatLoadNV(fa[i], As, ab + r * SK + kk / 8u, SK, false);
      }
      [[unroll]] for (uint j = 0u; j < FN; j++) {
        const uint col = wn + 16u * j;
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb;
        if (B_MODE == 2u)
          coopMatLoadNV(fb, Bs, bb + col * SK + kk / 8u, SK, true);
        else
          coopMatLoadNV(fb, Bs, bb + kk * SN + col / 8u, SN, false);
        [[unroll]] for (uint i = 0u; i < FM; i++) acc[i][j] = coopMatMulAddNV(fa[i], fb, acc[i][j]);
      }
    }
    if (STAGES == 1u) barrier();  // one stage: everyone is done reading it
    if (more) {
      stage = (stage + 1u) % STAGES;
      const uint na = stage * A_STAGE, nb = stage * B_STAGE;
      [[unroll]] for (uint p = 0u; p < A_PER; p++)
        if (t + p * WG_SIZE < A_VECS) As[na + a_slot(t + p * WG_SIZE)] = ra[p];
      [[unroll]] for (uint p = 0u; p < B_PER; p++)
        if (t + p * WG_SIZE < B_VECS) Bs[nb + b_slot(t + p * WG_SIZE)] = rb[p];
    }
    barrier();
  }

  const uint dst = z * pc.rows * pc.cols;
  if (full_m && full_n) {  // whole fragments straight to memory
    [[unroll]] for (uint i = 0u; i < FM; i++)
      [[unroll]] for (uint j = 0u; j < FN; j++) {
        const uint r = row0 + wm + 16u * i, col = col0 + wn + 16u * j;
        const fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> h =
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>(acc[i][j]);
        coopMatStoreNV(h, ch, dst + r * pc.cols + col, pc.cols, false);
      }
    return;
  }
  // Edge tiles: each fragment through the subgroup's 64 vectors of As (f32 bits; every subgroup
  // passed the last barrier, so the stages are free), written where it is in range.
  const uint lane = gl_SubgroupInvocationID, own = sg * 64u;
  [[unroll]] for (uint i = 0u; i < FM; i++)
    [[unroll]] for (uint j = 0u; j < FN; j++) {
      coopMatStoreNV(acc[i][j], As, own, 4u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = lane; e < 256u; e += 32u) {
        const uint r = row0 + wm + 16u * i + e / 16u, col = col0 + wn + 16u * j + e % 16u;
        if (r < pc.rows && col < pc.cols)
          c[dst + r * pc.cols + col] = uint16_t(pack_f16(uintBitsToFloat(As[own + e / 4u][e % 4u])));
      }
      subgroupBarrier();
    }
}
