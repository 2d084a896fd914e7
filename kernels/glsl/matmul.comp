#version 450
#extension GL_EXT_control_flow_attributes : require
// Register-blocked GEMM: C (batch, m, n) = A (batch, m, k) x B (batch, k, n), any strides.
// 256 threads (16 x 16) compute a BM x BN tile of C, each thread TM x TN = (BM / 16) x (BN / 16)
// outputs (2, 4 or 8 each way) in strips of up to 4 rows (columns), two strips BM / 2 (BN / 2)
// apart when there are 8: a thread's operands for one k are whole vec4s in shared memory, and a
// subgroup's reads of them hit distinct banks. Both operands are staged k-major (As[k][m],
// Bs[k][n]; each k's row padded by 4 so transposing stores do not collide) in two stages: the
// next k-tile is fetched into registers while the current one is multiplied, then stored into
// the other stage, one barrier per k-tile. Tile sizes come from the host's table (vk_matmul.cpp).
// ALIGNED (bit 0: m % BM == 0, bit 1: n % BN, bit 2: k % BK) drops bound checks. LOADS (bits 0-1
// for A, 2-3 for B) says how an operand's k-tile is fetched: scalar with k or the outer dim
// (m of A, n of B) fastest, or vec4 along k or along the outer dim; the host picks vec4 only
// where that dim is contiguous and its length, the offset and every stride are multiples of 4.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/batch.glsl"

layout(constant_id = 0) const uint BM = 64u;
layout(constant_id = 1) const uint BN = 64u;
layout(constant_id = 2) const uint BK = 16u;
layout(constant_id = 3) const uint ALIGNED = 0u;
layout(constant_id = 4) const uint LOADS = 0u;
const uint K_SCALAR = 0u, OUTER_SCALAR = 1u, K_VEC = 2u, OUTER_VEC = 3u;
const uint A_MODE = LOADS & 3u, B_MODE = (LOADS >> 2u) & 3u;
const uint TM = BM / 16u, TN = BN / 16u;
const uint SA = BM + 4u, SB = BN + 4u;  // elements per k in shared memory

layout(set = 0, binding = 0) readonly buffer A { STORAGE_T(DT) a[]; };
layout(set = 0, binding = 0) readonly buffer A4 { STORAGE4_T(DT) a4[]; };
layout(set = 0, binding = 1) readonly buffer B { STORAGE_T(DT) b[]; };
layout(set = 0, binding = 1) readonly buffer B4 { STORAGE4_T(DT) b4[]; };
layout(set = 0, binding = 2) writeonly buffer C { STORAGE_T(DT) c[]; };

#define CT COMPUTE_T(DT)
#define CT4 COMPUTE4_T(DT)
shared CT4 As[2u * BK * SA / 4u];
shared CT4 Bs[2u * BK * SB / 4u];

CT acc[8][8];
// A thread's fetched elements of the next k-tile: vec4 fetch j in ra[j], scalar fetch j in
// ra[j / 4][j % 4] (the host's tiles need at most 2 vec4 or 8 scalar fetches per operand).
CT4 ra[2], rb[2];

bool vec_mode(uint mode) { return mode >= K_VEC; }
// Fetches (scalars or vec4s) in an operand's k-tile of outer x BK elements, and per thread.
uint fetch_total(uint mode, uint outer) { return outer * BK / (vec_mode(mode) ? 4u : 1u); }
uint fetch_count(uint mode, uint outer) {
  return (fetch_total(mode, outer) + WG_SIZE - 1u) / WG_SIZE;
}
// Tile coordinates (outer, k) of this thread's fetch j; false past the tile's last fetch.
bool fetch_at(uint mode, uint outer, uint j, out uvec2 at) {
  const uint e = gl_LocalInvocationID.x + j * WG_SIZE;
  if (mode == K_SCALAR) at = uvec2(e / BK, e % BK);
  if (mode == OUTER_SCALAR) at = uvec2(e % outer, e / outer);
  if (mode == K_VEC) at = uvec2(e / (BK / 4u), e % (BK / 4u) * 4u);
  if (mode == OUTER_VEC) at = uvec2(e % (outer / 4u) * 4u, e / (outer / 4u));
  return fetch_total(mode, outer) % WG_SIZE == 0u || e < fetch_total(mode, outer);
}

void fetch_a(uint base, uint row0, uint k0) {
  [[unroll]] for (uint j = 0u; j < fetch_count(A_MODE, BM); j++) {
    uvec2 at;
    const bool in_tile = fetch_at(A_MODE, BM, j, at);
    const uint r = row0 + at.x, k = k0 + at.y, i = base + r * pc.a_row + k * pc.a_k;
    const bool ok = in_tile && ((ALIGNED & 1u) != 0u || r < pc.rows) &&
                    ((ALIGNED & 4u) != 0u || k < pc.depth);
    if (vec_mode(A_MODE)) {
      ra[j] = CT4(0);
      if (ok) ra[j] = LOAD4(DT, a4[i / 4u]);
    } else {
      ra[j / 4u][j % 4u] = CT(0);
      if (ok) ra[j / 4u][j % 4u] = LOAD(DT, a[i]);
    }
  }
}

void fetch_b(uint base, uint col0, uint k0) {
  [[unroll]] for (uint j = 0u; j < fetch_count(B_MODE, BN); j++) {
    uvec2 at;
    const bool in_tile = fetch_at(B_MODE, BN, j, at);
    const uint col = col0 + at.x, k = k0 + at.y, i = base + k * pc.b_k + col * pc.b_col;
    const bool ok = in_tile && ((ALIGNED & 2u) != 0u || col < pc.cols) &&
                    ((ALIGNED & 4u) != 0u || k < pc.depth);
    if (vec_mode(B_MODE)) {
      rb[j] = CT4(0);
      if (ok) rb[j] = LOAD4(DT, b4[i / 4u]);
    } else {
      rb[j / 4u][j % 4u] = CT(0);
      if (ok) rb[j / 4u][j % 4u] = LOAD(DT, b[i]);
    }
  }
}

// Stores the fetched k-tile into shared stage `stage` (element index k * stride + outer).
void stage_a(uint stage) {
  [[unroll]] for (uint j = 0u; j < fetch_count(A_MODE, BM); j++) {
    uvec2 at;
    if (!fetch_at(A_MODE, BM, j, at)) continue;
    const uint e = stage * BK * SA + at.y * SA + at.x;
    if (A_MODE == OUTER_VEC) {
      As[e / 4u] = ra[j];
    } else if (A_MODE == K_VEC) {  // four consecutive k: a column of the k-major tile
      [[unroll]] for (uint q = 0u; q < 4u; q++) As[(e + q * SA) / 4u][e % 4u] = ra[j][q];
    } else {
      As[e / 4u][e % 4u] = ra[j / 4u][j % 4u];
    }
  }
}

void stage_b(uint stage) {
  [[unroll]] for (uint j = 0u; j < fetch_count(B_MODE, BN); j++) {
    uvec2 at;
    if (!fetch_at(B_MODE, BN, j, at)) continue;
    const uint e = stage * BK * SB + at.y * SB + at.x;
    if (B_MODE == OUTER_VEC) {
      Bs[e / 4u] = rb[j];
    } else if (B_MODE == K_VEC) {
      [[unroll]] for (uint q = 0u; q < 4u; q++) Bs[(e + q * SB) / 4u][e % 4u] = rb[j][q];
    } else {
      Bs[e / 4u][e % 4u] = rb[j / 4u][j % 4u];
    }
  }
}

// A thread's outputs: strips of W = min(T, 4) rows (columns), T / W strips `extent / strips`
// apart; output i of thread `id` is at strip i / W, offset id * W + i % W.
uint strip_width(uint t) { return t < 4u ? t : 4u; }
uint strip_offset(uint extent, uint t, uint id, uint i) {
  const uint w = strip_width(t), strips = t / w;
  return i / w * (extent / strips) + id * w + i % w;
}

void multiply(uint stage, uint ty, uint tx) {
  const uint wm = strip_width(TM), wn = strip_width(TN);
  // A strip's first element within its vec4: 0 for 4-wide strips, 0 or 2 for 2-wide ones.
  const uint am = wm == 4u ? 0u : ty % 2u * 2u, bn = wn == 4u ? 0u : tx % 2u * 2u;
  [[unroll]] for (uint kk = 0u; kk < BK; kk++) {
    CT av[8], bv[8];
    [[unroll]] for (uint s = 0u; s < TM / wm; s++) {
      const CT4 v = As[((stage * BK + kk) * SA + strip_offset(BM, TM, ty, s * wm)) / 4u];
      [[unroll]] for (uint q = 0u; q < wm; q++) av[s * wm + q] = v[am + q];
    }
    [[unroll]] for (uint s = 0u; s < TN / wn; s++) {
      const CT4 v = Bs[((stage * BK + kk) * SB + strip_offset(BN, TN, tx, s * wn)) / 4u];
      [[unroll]] for (uint q = 0u; q < wn; q++) bv[s * wn + q] = v[bn + q];
    }
    [[unroll]] for (uint i = 0u; i < TM; i++)
      [[unroll]] for (uint j = 0u; j < TN; j++) acc[i][j] += av[i] * bv[j];
  }
}

void main() {
  // Each subgroup of 32 covers 4 x 8 threads of the 16 x 16 grid: fewer distinct shared reads.
  const uint t = gl_LocalInvocationID.x, lane = t % 32u, warp = t / 32u;
  const uint ty = warp / 2u * 4u + lane / 8u, tx = warp % 2u * 8u + lane % 8u;
  const uint z = pc.batch_base + gl_WorkGroupID.z;
  const uvec2 base = batch_offsets(z);
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  [[unroll]] for (uint i = 0u; i < TM; i++)
    [[unroll]] for (uint j = 0u; j < TN; j++) acc[i][j] = CT(0);

  const uint tiles = (pc.depth + BK - 1u) / BK;
  if (tiles > 0u) {
    fetch_a(base.x, row0, 0u);
    fetch_b(base.y, col0, 0u);
    stage_a(0u);
    stage_b(0u);
  }
  barrier();
  for (uint kt = 0u; kt < tiles; kt++) {
    const bool more = kt + 1u < tiles;
    if (more) {
      fetch_a(base.x, row0, (kt + 1u) * BK);
      fetch_b(base.y, col0, (kt + 1u) * BK);
    }
    multiply(kt & 1u, ty, tx);
    if (more) {
      stage_a((kt + 1u) & 1u);
      stage_b((kt + 1u) & 1u);
    }
    barrier();
  }

  const uint dst = z * pc.rows * pc.cols;
  [[unroll]] for (uint i = 0u; i < TM; i++) {
    const uint r = row0 + strip_offset(BM, TM, ty, i);
    if ((ALIGNED & 1u) == 0u && r >= pc.rows) continue;
    [[unroll]] for (uint j = 0u; j < TN; j++) {
      const uint col = col0 + strip_offset(BN, TN, tx, j);
      if ((ALIGNED & 2u) != 0u || col < pc.cols) c[dst + r * pc.cols + col] = PACK(DT, acc[i][j]);
    }
  }
}
