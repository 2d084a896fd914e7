// One block of an x row quantized to 8 bits as the CPU's QMatMul does before its integer dot
// products (src/quantized: quantize_act_row_scalar / _avx2 / _avx512), bit for bit (the twin
// of include/qact.glsl):
//   ACT_BLOCK 32 (ggml's Q8_0/Q8_1): d = amax / 127, q = round(x * (1 / d)), s = d * sum(q); the
//     rounding is the CPU's of the moment (ties_away: its scalar quantizer rounds halves away
//     from zero, its AVX2 and AVX-512 ones to even).
//   ACT_BLOCK 256 (ggml's Q8_K): max = the first element of largest magnitude with its sign,
//     iscale = -127 / max, q = min(127, round-to-even(iscale * x)), d = 1 / iscale. Q8_K's sums per
//     16 are not stored: the kernels sum the q they read (integers: the same values).
// Every f32 operation is explicitly rounded (no contraction into fma, no approximate division
// under fast math), as the CPU computes it.
// Output row r of xq starts at word r * row_words: k / 4 words of q (4 per word, little-endian),
// then the scales as f32 bits: (d, s) per 32 (ACT_BLOCK 32) or d per 256.
#pragma once

#include "include/common.cuh"
#include "include/warp.cuh"

#if ACT_BLOCK != 32 && ACT_BLOCK != 256
#error "qact: ACT_BLOCK is 32 or 256"
#endif

// Block b (elements b * ACT_BLOCK ..) of x's row `row` of k elements, quantized by the 32 lanes of
// a warp together: every lane calls it (lane = its lane), and value(e), element e of the row as
// f32 (x itself, or a prologue's output as stored), is asked once per element. A thread per block
// left each thread 32 or 256 elements in a row, and every value computed twice (the decode step's
// longest kernels on the H200).
template <typename Value>
WICK_DEV void quantize_act_block(Value value, uint32_t* xq, uint32_t row, uint32_t b, uint32_t k,
                                 uint32_t row_words, bool ties_away, uint32_t lane) {
  const uint32_t e0 = b * ACT_BLOCK;
  const uint32_t out_q = row * row_words + e0 / 4u;
  const uint32_t out_d = row * row_words + k / 4u;
#if ACT_BLOCK == 32
  const float v = value(e0 + lane);
  // max is exact in any order; the CPU's starts from 0 (so NaNs drop out there too).
  const float amax = fmaxf(0.0f, warp_allreduce(fabsf(v), MaxOp()));
  const float d = __fdiv_rn(amax, 127.0f);
  const float inv = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  const float scaled = __fmul_rn(v, inv);
  float r;
  if (ties_away) {  // std::round
    r = truncf(scaled);
    if (fabsf(__fsub_rn(scaled, r)) >= 0.5f) r = __fadd_rn(r, copysignf(1.0f, scaled));
  } else {  // _mm512_cvtps_epi32
    r = rintf(scaled);
  }
  const int q = int(r);
  const int sum = warp_sum(q);  // integers: exact in any order
  uint32_t word = (uint32_t(q) & 0xffu) << (8u * (lane % 4u));
  word |= __shfl_xor_sync(WICK_FULL_MASK, word, 1);
  word |= __shfl_xor_sync(WICK_FULL_MASK, word, 2);
  if (lane % 4u == 0u) xq[out_q + lane / 4u] = word;
  if (lane == 0u) {
    xq[out_d + 2u * b] = __float_as_uint(d);
    xq[out_d + 2u * b + 1u] = __float_as_uint(__fmul_rn(d, float(sum)));
  }
#else
  // Lane l holds elements 8 l .. 8 l + 7: two output words.
  float v[8];
  float amax = 0.0f, mx = 0.0f;
  uint32_t at = 256u;  // the index of mx in the block; 256: none yet
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++) {
    v[i] = value(e0 + 8u * lane + i);
    if (fabsf(v[i]) > amax) {
      amax = fabsf(v[i]);
      mx = v[i];
      at = 8u * lane + i;
    }
  }
  // The first element of largest magnitude: larger wins, the smaller index among equals.
#pragma unroll
  for (int lanes = 16; lanes > 0; lanes >>= 1) {
    const float o_amax = __shfl_xor_sync(WICK_FULL_MASK, amax, lanes);
    const float o_mx = __shfl_xor_sync(WICK_FULL_MASK, mx, lanes);
    const uint32_t o_at = __shfl_xor_sync(WICK_FULL_MASK, at, lanes);
    if (o_amax > amax || (o_amax == amax && o_at < at)) {
      amax = o_amax;
      mx = o_mx;
      at = o_at;
    }
  }
  if (amax == 0.0f) {
    xq[out_q + 2u * lane] = 0u;
    xq[out_q + 2u * lane + 1u] = 0u;
    if (lane == 0u) xq[out_d + b] = 0u;
    return;
  }
  const float iscale = __fdiv_rn(-127.0f, mx);
#pragma unroll
  for (uint32_t w = 0u; w < 2u; w++) {
    uint32_t word = 0u;
#pragma unroll
    for (uint32_t i = 0u; i < 4u; i++) {
      const int q = min(127, __float2int_rn(__fmul_rn(iscale, v[4u * w + i])));
      word |= (uint32_t(q) & 0xffu) << (8u * i);
    }
    xq[out_q + 2u * lane + w] = word;
  }
  if (lane == 0u) xq[out_d + b] = __float_as_uint(__fdiv_rn(1.0f, iscale));
#endif
}
