// Register-blocked GEMM for every dtype and any strides: C (batch, m, n) = A (batch, m, k) x
// B (batch, k, n), integers wrapping. 256 threads (16 x 16) compute a BM x BN tile of C, each
// thread TM x TN = (BM / 16) x (BN / 16) outputs (2, 4 or 8 each way) in strips of up to 4 rows
// (columns), two strips BM / 2 (BN / 2) apart when there are 8: a thread's operands for one k are
// whole vectors in shared memory, and a warp's reads of them hit distinct banks. Both operands
// are staged k-major (As[k][m], Bs[k][n]; each k's row padded by 4 so transposing stores do not
// collide) in two stages: the next k-tile is fetched into registers while the current one is
// multiplied, then stored into the other stage, one barrier per k-tile.
// Specialization: WICK_SPEC_0 BM, _1 BN, _2 BK, _3 ALIGNED (bit 0: m % BM == 0, bit 1: n % BN,
// bit 2: k % BK: no bound checks there), _4 LOADS (bits 0-1 for A, 2-3 for B): how an operand's
// k-tile is fetched: scalar with k (0) or the outer dim (1: m of A, n of B) fastest, or 4-element
// vectors along k (2) or along the outer dim (3); the host picks vectors only where that dim is
// contiguous and its length, the offset and every stride are multiples of 4.
// Bindings: 0 A, 1 B, 2 C (contiguous).
#include "include/accumulate.cuh"
#include "include/batch.cuh"
#include "include/common.cuh"
#include "include/dtype.cuh"

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 64
#endif
#ifndef WICK_SPEC_1
#define WICK_SPEC_1 64
#endif
#ifndef WICK_SPEC_2
#define WICK_SPEC_2 16
#endif
#ifndef WICK_SPEC_3
#define WICK_SPEC_3 0
#endif
#ifndef WICK_SPEC_4
#define WICK_SPEC_4 0
#endif
constexpr uint32_t BM = WICK_SPEC_0, BN = WICK_SPEC_1, BK = WICK_SPEC_2;
constexpr uint32_t ALIGNED = WICK_SPEC_3, LOADS = WICK_SPEC_4;
constexpr uint32_t K_SCALAR = 0u, OUTER_SCALAR = 1u, K_VEC = 2u, OUTER_VEC = 3u;
constexpr uint32_t A_MODE = LOADS & 3u, B_MODE = (LOADS >> 2u) & 3u;
constexpr uint32_t TM = BM / 16u, TN = BN / 16u;
constexpr uint32_t SA = BM + 4u, SB = BN + 4u;  // elements per k in shared memory
constexpr bool FULL_M = (ALIGNED & 1u) != 0u, FULL_N = (ALIGNED & 2u) != 0u;
constexpr bool FULL_K = (ALIGNED & 4u) != 0u;

static_assert(WG_SIZE == 256, "matmul.cu runs 16 x 16 threads");
static_assert((BM == 32 || BM == 64 || BM == 128) && (BN == 32 || BN == 64 || BN == 128),
              "tile sides are 32, 64 or 128");
static_assert(BK % 4u == 0u && BK >= 4u && BK <= 32u, "BK is a multiple of 4, at most 32");

typedef STORAGE_T(DT) ST;
typedef COMPUTE_T(DT) CT;
// Vectors of consecutive elements, aligned to their size (shared memory and vector loads).
template <typename T, int N>
struct alignas(N * sizeof(T)) Vec {
  T v[N];
};

__device__ constexpr bool vec_mode(uint32_t mode) {
  return mode >= K_VEC;
}
// Fetches (scalars or vectors) in an operand's k-tile of outer x BK elements, and per thread.
__device__ constexpr uint32_t fetch_total(uint32_t mode, uint32_t outer) {
  return outer * BK / (vec_mode(mode) ? 4u : 1u);
}
__device__ constexpr uint32_t fetch_count(uint32_t mode, uint32_t outer) {
  return (fetch_total(mode, outer) + WG_SIZE - 1u) / WG_SIZE;
}
// Elements of a thread's fetched k-tile kept in registers.
__device__ constexpr uint32_t fetch_regs(uint32_t mode, uint32_t outer) {
  return fetch_count(mode, outer) * (vec_mode(mode) ? 4u : 1u);
}

// Tile coordinates (outer, k) of this thread's fetch j; false past the tile's last fetch.
template <uint32_t MODE, uint32_t OUTER>
WICK_DEV bool fetch_at(uint32_t j, uint32_t& o, uint32_t& k) {
  const uint32_t e = threadIdx.x + j * WG_SIZE;
  if (MODE == K_SCALAR) {
    o = e / BK;
    k = e % BK;
  } else if (MODE == OUTER_SCALAR) {
    o = e % OUTER;
    k = e / OUTER;
  } else if (MODE == K_VEC) {
    o = e / (BK / 4u);
    k = e % (BK / 4u) * 4u;
  } else {
    o = e % (OUTER / 4u) * 4u;
    k = e / (OUTER / 4u);
  }
  return fetch_total(MODE, OUTER) % WG_SIZE == 0u || e < fetch_total(MODE, OUTER);
}

// Fetches this thread's part of the k-tile at (outer0, k0) of an operand whose element (o, k) is
// src[o * s_outer + k * s_k] into registers (zeros outside the matrix).
template <uint32_t MODE, uint32_t OUTER, bool OUTER_FULL>
WICK_DEV void fetch_tile(const ST* src, uint32_t s_outer, uint32_t s_k, uint32_t outer0,
                         uint32_t k0, uint32_t n_outer, uint32_t depth,
                         CT (&reg)[fetch_regs(MODE, OUTER)]) {
#pragma unroll
  for (uint32_t j = 0u; j < fetch_count(MODE, OUTER); j++) {
    uint32_t ox, kx;
    const bool in_tile = fetch_at<MODE, OUTER>(j, ox, kx);
    const uint32_t o = outer0 + ox, k = k0 + kx;
    const bool ok = in_tile && (OUTER_FULL || o < n_outer) && (FULL_K || k < depth);
    const uint32_t i = o * s_outer + k * s_k;
    if (vec_mode(MODE)) {
      Vec<ST, 4> v;
      if (ok) v = *reinterpret_cast<const Vec<ST, 4>*>(src + i);
#pragma unroll
      for (uint32_t q = 0u; q < 4u; q++) reg[4u * j + q] = ok ? CT(LOAD(DT, v.v[q])) : CT(0);
    } else {
      reg[j] = ok ? CT(LOAD(DT, src[i])) : CT(0);
    }
  }
}

// Stores the fetched k-tile into a shared stage (element (o, k) at k * S + o).
template <uint32_t MODE, uint32_t OUTER, uint32_t S>
WICK_DEV void stage_tile(CT* stage, const CT (&reg)[fetch_regs(MODE, OUTER)]) {
#pragma unroll
  for (uint32_t j = 0u; j < fetch_count(MODE, OUTER); j++) {
    uint32_t ox, kx;
    if (!fetch_at<MODE, OUTER>(j, ox, kx)) continue;
    const uint32_t e = kx * S + ox;
    if (MODE == OUTER_VEC) {
      Vec<CT, 4> v;
#pragma unroll
      for (uint32_t q = 0u; q < 4u; q++) v.v[q] = reg[4u * j + q];
      *reinterpret_cast<Vec<CT, 4>*>(stage + e) = v;
    } else if (MODE == K_VEC) {  // four consecutive k: a column of the k-major tile
#pragma unroll
      for (uint32_t q = 0u; q < 4u; q++) stage[e + q * S] = reg[4u * j + q];
    } else {
      stage[e] = reg[j];
    }
  }
}

// A thread's outputs: strips of W = min(T, 4) rows (columns), T / W strips `extent / strips`
// apart; output i of thread `id` is at strip i / W, offset id * W + i % W.
__device__ constexpr uint32_t strip_width(uint32_t t) {
  return t < 4u ? t : 4u;
}
__device__ constexpr uint32_t strip_offset(uint32_t extent, uint32_t t, uint32_t id, uint32_t i) {
  return i / strip_width(t) * (extent / (t / strip_width(t))) + id * strip_width(t) +
         i % strip_width(t);
}

// One strip of W consecutive shared elements (aligned: strips start at multiples of W).
template <uint32_t W>
WICK_DEV void read_strip(const CT* p, CT* out) {
  const Vec<CT, W> v = *reinterpret_cast<const Vec<CT, W>*>(p);
#pragma unroll
  for (uint32_t q = 0u; q < W; q++) out[q] = v.v[q];
}

WICK_DEV void multiply(const CT* as, const CT* bs, uint32_t ty, uint32_t tx, CT (&acc)[TM][TN]) {
  constexpr uint32_t WM = strip_width(TM), WN = strip_width(TN);
#pragma unroll
  for (uint32_t kk = 0u; kk < BK; kk++) {
    CT av[TM], bv[TN];
#pragma unroll
    for (uint32_t s = 0u; s < TM / WM; s++)
      read_strip<WM>(as + kk * SA + strip_offset(BM, TM, ty, s * WM), av + s * WM);
#pragma unroll
    for (uint32_t s = 0u; s < TN / WN; s++)
      read_strip<WN>(bs + kk * SB + strip_offset(BN, TN, tx, s * WN), bv + s * WN);
#pragma unroll
    for (uint32_t i = 0u; i < TM; i++)
#pragma unroll
      for (uint32_t j = 0u; j < TN; j++) acc[i][j] = mul_add_wrap(acc[i][j], av[i], bv[j]);
  }
}

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const BatchParams& pc = PARAMS(BatchParams, args);
  __shared__ Vec<CT, 4> As4[2u * BK * SA / 4u];
  __shared__ Vec<CT, 4> Bs4[2u * BK * SB / 4u];
  CT* As = reinterpret_cast<CT*>(As4);
  CT* Bs = reinterpret_cast<CT*>(Bs4);

  // Each warp covers 4 x 8 threads of the 16 x 16 grid: fewer distinct shared reads.
  const uint32_t t = threadIdx.x, lane = t % 32u, warp = t / 32u;
  const uint32_t ty = warp / 2u * 4u + lane / 8u, tx = warp % 2u * 8u + lane % 8u;
  const uint32_t z = batch_index(pc);
  const BatchOffsets base = batch_offsets(pc, z);
  const ST* a = buffer_at<const ST>(args, 0) + base.a;
  const ST* b = buffer_at<const ST>(args, 1) + base.b;
  const uint32_t row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  CT acc[TM][TN];
#pragma unroll
  for (uint32_t i = 0u; i < TM; i++)
#pragma unroll
    for (uint32_t j = 0u; j < TN; j++) acc[i][j] = CT(0);

  CT ra[fetch_regs(A_MODE, BM)], rb[fetch_regs(B_MODE, BN)];
  const uint32_t tiles = (pc.depth + BK - 1u) / BK;
  if (tiles > 0u) {
    fetch_tile<A_MODE, BM, FULL_M>(a, pc.a_row, pc.a_k, row0, 0u, pc.rows, pc.depth, ra);
    fetch_tile<B_MODE, BN, FULL_N>(b, pc.b_col, pc.b_k, col0, 0u, pc.cols, pc.depth, rb);
    stage_tile<A_MODE, BM, SA>(As, ra);
    stage_tile<B_MODE, BN, SB>(Bs, rb);
  }
  __syncthreads();
  for (uint32_t kt = 0u; kt < tiles; kt++) {
    const bool more = kt + 1u < tiles;
    const uint32_t next = (kt + 1u) & 1u;
    if (more) {
      const uint32_t k0 = (kt + 1u) * BK;
      fetch_tile<A_MODE, BM, FULL_M>(a, pc.a_row, pc.a_k, row0, k0, pc.rows, pc.depth, ra);
      fetch_tile<B_MODE, BN, FULL_N>(b, pc.b_col, pc.b_k, col0, k0, pc.cols, pc.depth, rb);
    }
    multiply(As + (kt & 1u) * BK * SA, Bs + (kt & 1u) * BK * SB, ty, tx, acc);
    if (more) {
      stage_tile<A_MODE, BM, SA>(As + next * BK * SA, ra);
      stage_tile<B_MODE, BN, SB>(Bs + next * BK * SB, rb);
    }
    __syncthreads();
  }

  ST* c = buffer_at<ST>(args, 2) + uint64_t(z) * pc.rows * pc.cols;
#pragma unroll
  for (uint32_t i = 0u; i < TM; i++) {
    const uint32_t r = row0 + strip_offset(BM, TM, ty, i);
    if (!FULL_M && r >= pc.rows) continue;
#pragma unroll
    for (uint32_t j = 0u; j < TN; j++) {
      const uint32_t col = col0 + strip_offset(BN, TN, tx, j);
      if (FULL_N || col < pc.cols) c[r * pc.cols + col] = PACK(DT, acc[i][j]);
    }
  }
}
