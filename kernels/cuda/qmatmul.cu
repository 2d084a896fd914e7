// y (m, n_out) = x (m, k) @ W^T for longer x (prompts), W in a block format (QTYPE, see
// include/quant.cuh): matmul.cu's tiling, with W's tile decoded from its blocks as it is staged
// in shared memory. A block of 16 x 16 threads computes a BM x BN tile of y, each thread
// (BM/16) x (BN/16) outputs, stepping through k by BK = 32 (k is a multiple of every block size,
// so only m and n_out need bound checks). ACT_Q8: x comes quantized to 8 bits by qact.cu and is
// staged as d_x * q (the CPU's values); otherwise x (DT) is read through its strides in f32.
// Bindings: 0 the weight's blocks, 1 x (ACT_Q8: its quantized rows), 2 y (f32).
// Specialization: WICK_SPEC_0 BM, _1 BN (32 or 64), _2 ALIGNED (bit 0: m % BM == 0, bit 1:
// n_out % BN == 0).
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/quant.cuh"

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
constexpr uint32_t BK = 32u;
constexpr uint32_t TM = BM / 16u, TN = BN / 16u;
// Shared rows padded by one: the staging stores of a warp fall in distinct banks.
constexpr uint32_t SX = BM + 1u, SW = BN + 1u;
constexpr bool FULL_M = (ALIGNED & 1u) != 0u, FULL_N = (ALIGNED & 2u) != 0u;
static_assert(WG_SIZE == 256, "qmatmul.cu runs 16 x 16 threads");
static_assert((BM == 32 || BM == 64) && (BN == 32 || BN == 64), "tile sides are 32 or 64");

WICK_PARAMS_STRUCT(QMatmulParams, WICK_PARAMS_QMATMUL(WICK_CU_FIELD, WICK_CU_ARRAY))

#ifdef ACT_Q8
typedef uint32_t XT;  // x quantized by qact.cu (row r at word r * x_row)
#else
typedef STORAGE_T(DT) XT;
#endif

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
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
      if (FULL_M || r < pc.m) {
#ifdef ACT_Q8
        const uint32_t ex = k0 + kk, base = r * pc.x_row;
        const int q = sext8(__ldg(x + base + ex / 4u) >> (8u * (ex & 3u)));
        v = __uint_as_float(__ldg(x + base + act_scale_word(pc.k, ex))) * float(q);
#else
        v = LOAD(DT, x[pc.x_offset + r * pc.x_row + (k0 + kk) * pc.x_k]);
#endif
      }
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
