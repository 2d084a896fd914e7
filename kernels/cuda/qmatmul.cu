// y (m, n_out) = x (m, k) @ W^T for longer x (prompts), W in a block format (QTYPE, see
// include/quant.cuh). A block of 256 threads computes a BM x BN tile of y.
// ACT_Q8 (x quantized to 8 bits by qact.cu): on the tensor cores, as the CPU's dot kernels
// compute (src/quantized/dot_scalar.cpp). Each step stages UNITS units of 32 elements of x's
// and W's rows as 8-bit integers (W decoded by decode_unit), their scales beside; each warp
// multiplies its 16 x (BN / WARPS_N) part with 8-bit MMAs (two of k = 16 per unit), so every
// block (32-element formats) or super-block (K formats) sum is exact in integers, then scaled
// and added in the CPU's order: y = sum over blocks of dw dx isum (+ mw sx), or sum over
// super-blocks of dx dw isum - dx dmin msum, explicitly rounded (no FMA contraction).
// Otherwise: matmul.cu's SIMT tiling in f32, x (DT) read through its strides, W's tile decoded
// into shared memory 8 elements at a time; each thread (BM/16) x (BN/16) outputs, k by BK = 32.
// k is a multiple of every block size, so only m and n_out need bound checks.
// Bindings: 0 the weight's blocks, 1 x (ACT_Q8: its quantized rows), 2 y (f32).
// Specialization: WICK_SPEC_0 BM, _1 BN (32 or 64), _2 ALIGNED (bit 0: m % BM == 0, bit 1:
// n_out % BN == 0).
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/quant.cuh"
#ifdef ACT_Q8
#include "include/mma.cuh"
#endif

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 64
#endif
#ifndef WICK_SPEC_1
#define WICK_SPEC_1 64
#endif
#ifndef WICK_SPEC_2
#define WICK_SPEC_2 0
#endif
constexpr uint32_t BM = WICK_SPEC_0, BN = WICK_SPEC_1, ALIGNED = WICK_SPEC_2;
constexpr bool FULL_M = (ALIGNED & 1u) != 0u, FULL_N = (ALIGNED & 2u) != 0u;
static_assert(WG_SIZE == 256, "qmatmul.cu runs 256 threads");
static_assert((BM == 32 || BM == 64) && (BN == 32 || BN == 64), "tile sides are 32 or 64");

WICK_PARAMS_STRUCT(QMatmulParams, WICK_PARAMS_QMATMUL(WICK_CU_FIELD, WICK_CU_ARRAY))

#ifdef ACT_Q8

constexpr uint32_t UNITS = 4;                 // units of 32 elements per step
constexpr uint32_t STRIDE = 8u * UNITS + 4u;  // words per staged row (padded: no bank conflicts)
constexpr uint32_t WARPS_M = BM / 16u, WARPS_N = 8u / WARPS_M;
constexpr uint32_t NT = BN / WARPS_N / 8u;  // 8-column MMA tiles per warp
#ifdef QUANT_K
constexpr uint32_t UNITS_PER_SUM = 8u;  // a super-block of 256: the CPU's integer sum
#endif

// A unit's x scales: dx, and sx = dx sum(q) (32-element formats with a min) or the sums of its
// two halves of q (K formats with a min).
struct XScale {
  float d, s;
  int sum[2];
};
struct WScale {
  float d, m;
  int sc[2], mn[2];
};

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const QMatmulParams& pc = PARAMS(QMatmulParams, args);
  const uint8_t* w = buffer_at<const uint8_t>(args, 0);
  const uint32_t* xq = buffer_at<const uint32_t>(args, 1);
  float* y = buffer_at<float>(args, 2);
  __shared__ uint32_t Xs[BM * STRIDE];
  __shared__ uint32_t Ws[BN * STRIDE];
  __shared__ XScale s_xs[BM][UNITS];
  __shared__ WScale s_ws[BN][UNITS];

  const uint32_t t = threadIdx.x, lane = t % 32u, warp = t / 32u;
  const uint32_t g = lane / 4u, q = lane % 4u;
  const uint32_t wm = warp % WARPS_M * 16u, wn = warp / WARPS_M * (BN / WARPS_N);
  const uint32_t row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const uint32_t units = pc.k / 32u;

  float acc[NT][4];
#ifdef QUANT_K
  int isum[NT][4];  // the super-block's integer sums, as the CPU's
#ifdef QUANT_MIN
  int msum[NT][4];
#endif
#endif
#pragma unroll
  for (uint32_t n = 0u; n < NT; n++)
#pragma unroll
    for (uint32_t i = 0u; i < 4u; i++) {
      acc[n][i] = 0.0f;
#ifdef QUANT_K
      isum[n][i] = 0;
#ifdef QUANT_MIN
      msum[n][i] = 0;
#endif
#endif
    }

  for (uint32_t u0 = 0u; u0 < units; u0 += UNITS) {
    // x: BM rows of UNITS * 8 words (zeros past m or k), and each unit's scales.
    for (uint32_t e = t; e < BM * 8u * UNITS; e += WG_SIZE) {
      const uint32_t i = e / (8u * UNITS), word = e % (8u * UNITS), r = row0 + i;
      const bool ok = (FULL_M || r < pc.m) && u0 + word / 8u < units;
      Xs[i * STRIDE + word] = ok ? __ldg(xq + r * pc.x_row + u0 * 8u + word) : 0u;
    }
    for (uint32_t e = t; e < BM * UNITS; e += WG_SIZE) {
      const uint32_t i = e / UNITS, uu = e % UNITS, r = row0 + i, u = u0 + uu;
      XScale s = {0.0f, 0.0f, {0, 0}};
      if ((FULL_M || r < pc.m) && u < units) {
        const uint32_t* xr = xq + r * pc.x_row;
        const uint32_t sw = act_scale_word(pc.k, 32u * u);
        s.d = __uint_as_float(__ldg(xr + sw));
#if defined(QUANT_MIN) && !defined(QUANT_K)
        s.s = __uint_as_float(__ldg(xr + sw + 1u));
#elif defined(QUANT_MIN)
#pragma unroll
        for (uint32_t i8 = 0u; i8 < 8u; i8++)
          s.sum[i8 / 4u] = __dp4a(0x01010101, int(__ldg(xr + 8u * u + i8)), s.sum[i8 / 4u]);
#endif
      }
      s_xs[i][uu] = s;
    }
    // W: BN rows of UNITS units, decoded to signed bytes, and their scales.
    for (uint32_t e = t; e < BN * UNITS; e += WG_SIZE) {
      const uint32_t j = e / UNITS, uu = e % UNITS, col = col0 + j, u = u0 + uu;
      uint32_t* dst = Ws + j * STRIDE + 8u * uu;
      WScale s = {0.0f, 0.0f, {0, 0}, {0, 0}};
      if ((FULL_N || col < pc.n_out) && u < units) {
        const uint32_t e0 = 32u * u;
        const WeightUnit wu = decode_unit(w, col * pc.row_bytes + (e0 / QK) * BLOCK_BYTES, e0 % QK);
#pragma unroll
        for (uint32_t i = 0u; i < 8u; i++) dst[i] = wu.q[i];
        s = {wu.d, wu.m, {wu.sc[0], wu.sc[1]}, {wu.mn[0], wu.mn[1]}};
      } else {
#pragma unroll
        for (uint32_t i = 0u; i < 8u; i++) dst[i] = 0u;
      }
      s_ws[j][uu] = s;
    }
    __syncthreads();

    for (uint32_t uu = 0u; uu < UNITS && u0 + uu < units; uu++) {
      uint32_t a[2][2];  // [half of the unit][row g, row g + 8]
#pragma unroll
      for (uint32_t h = 0u; h < 2u; h++) {
        a[h][0] = Xs[(wm + g) * STRIDE + 8u * uu + 4u * h + q];
        a[h][1] = Xs[(wm + g + 8u) * STRIDE + 8u * uu + 4u * h + q];
      }
#ifdef QUANT_K
      const bool sum_ends = (u0 + uu + 1u) % UNITS_PER_SUM == 0u;
#endif
      // This thread's rows of c are g and g + 8, its columns 2q and 2q + 1 of each tile.
      const XScale xr[2] = {s_xs[wm + g][uu], s_xs[wm + g + 8u][uu]};
#pragma unroll
      for (uint32_t n = 0u; n < NT; n++) {
        const uint32_t jb = wn + 8u * n;  // the tile's first column in the block
        int c[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
        for (uint32_t h = 0u; h < 2u; h++)
          mma_m16n8k16_s8(c[h], a[h], Ws[(jb + g) * STRIDE + 8u * uu + 4u * h + q]);
        const WScale wc[2] = {s_ws[jb + 2u * q][uu], s_ws[jb + 2u * q + 1u][uu]};
#pragma unroll
        for (uint32_t i = 0u; i < 4u; i++) {
          const XScale& xs = xr[i / 2u];
          const WScale& ws = wc[i % 2u];
#ifndef QUANT_K
          float s = __fmul_rn(__fmul_rn(ws.d, xs.d), float(c[0][i] + c[1][i]));
#ifdef QUANT_MIN
          s = __fadd_rn(s, __fmul_rn(ws.m, xs.s));
#endif
          acc[n][i] = __fadd_rn(acc[n][i], s);
#else
          isum[n][i] += ws.sc[0] * c[0][i] + ws.sc[1] * c[1][i];
#ifdef QUANT_MIN
          msum[n][i] += ws.mn[0] * xs.sum[0] + ws.mn[1] * xs.sum[1];
#endif
          if (sum_ends) {
            float s = __fmul_rn(__fmul_rn(xs.d, ws.d), float(isum[n][i]));
#ifdef QUANT_MIN
            s = __fsub_rn(s, __fmul_rn(__fmul_rn(xs.d, ws.m), float(msum[n][i])));
#endif
            acc[n][i] = __fadd_rn(acc[n][i], s);
            isum[n][i] = 0;
#ifdef QUANT_MIN
            msum[n][i] = 0;
#endif
          }
#endif
        }
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (uint32_t n = 0u; n < NT; n++)
#pragma unroll
    for (uint32_t i = 0u; i < 4u; i++) {
      const uint32_t r = row0 + wm + g + (i >= 2u ? 8u : 0u);
      const uint32_t col = col0 + wn + 8u * n + 2u * q + (i & 1u);
      if ((FULL_M || r < pc.m) && (FULL_N || col < pc.n_out)) y[r * pc.n_out + col] = acc[n][i];
    }
}

#else  // x in f32

constexpr uint32_t BK = 32u;
constexpr uint32_t TM = BM / 16u, TN = BN / 16u;
// Shared rows padded by one: the staging stores of a warp fall in distinct banks.
constexpr uint32_t SX = BM + 1u, SW = BN + 1u;

typedef STORAGE_T(DT) XT;

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const QMatmulParams& pc = PARAMS(QMatmulParams, args);
  const uint8_t* w = buffer_at<const uint8_t>(args, 0);
  const XT* x = buffer_at<const XT>(args, 1);
  float* y = buffer_at<float>(args, 2);
  __shared__ float Xs[BK * SX];
  __shared__ float Ws[BK * SW];
  const uint32_t t = threadIdx.x, tx = t % 16u, ty = t / 16u;
  const uint32_t row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (uint32_t i = 0u; i < TM; i++)
#pragma unroll
    for (uint32_t j = 0u; j < TN; j++) acc[i][j] = 0.0f;

  for (uint32_t k0 = 0u; k0 < pc.k; k0 += BK) {
    for (uint32_t e = t; e < BM * BK; e += WG_SIZE) {
      const uint32_t i = e / BK, kk = e % BK, r = row0 + i;
      float v = 0.0f;
      if (FULL_M || r < pc.m) v = LOAD(DT, x[pc.x_offset + r * pc.x_row + (k0 + kk) * pc.x_k]);
      Xs[kk * SX + i] = v;
    }
    // BN rows of W, BK / 8 runs of 8 elements each.
    for (uint32_t u = t; u < BN * (BK / 8u); u += WG_SIZE) {
      const uint32_t j = u / (BK / 8u), run = u % (BK / 8u), col = col0 + j, e = k0 + 8u * run;
      float wv[8];
      if (FULL_N || col < pc.n_out) {
        dequant8(w, col * pc.row_bytes + (e / QK) * BLOCK_BYTES, e % QK, wv);
      } else {
#pragma unroll
        for (uint32_t i = 0u; i < 8u; i++) wv[i] = 0.0f;
      }
#pragma unroll
      for (uint32_t i = 0u; i < 8u; i++) Ws[(8u * run + i) * SW + j] = wv[i];
    }
    __syncthreads();
#pragma unroll 8
    for (uint32_t kk = 0u; kk < BK; kk++) {
      float av[TM], bv[TN];
#pragma unroll
      for (uint32_t i = 0u; i < TM; i++) av[i] = Xs[kk * SX + ty + 16u * i];
#pragma unroll
      for (uint32_t j = 0u; j < TN; j++) bv[j] = Ws[kk * SW + tx + 16u * j];
#pragma unroll
      for (uint32_t i = 0u; i < TM; i++)
#pragma unroll
        for (uint32_t j = 0u; j < TN; j++) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (uint32_t i = 0u; i < TM; i++) {
    const uint32_t r = row0 + ty + 16u * i;
    if (!FULL_M && r >= pc.m) continue;
#pragma unroll
    for (uint32_t j = 0u; j < TN; j++) {
      const uint32_t col = col0 + tx + 16u * j;
      if (FULL_N || col < pc.n_out) y[r * pc.n_out + col] = acc[i][j];
    }
  }
}

#endif
