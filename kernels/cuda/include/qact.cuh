// One block of an x row quantized to 8 bits as the CPU's QMatMul does before its integer dot
// products (src/quantized: quantize_act_row_scalar / quantize_act_avx512), bit for bit (the twin
// of include/qact.glsl):
//   ACT_BLOCK 32 (ggml's Q8_0/Q8_1): d = amax / 127, q = round(x * (1 / d)), s = d * sum(q); the
//     rounding is the CPU's of the moment (ties_away: its scalar quantizer rounds halves away
//     from zero, its AVX-512 one to even).
//   ACT_BLOCK 256 (ggml's Q8_K): max = the first element of largest magnitude with its sign,
//     iscale = -127 / max, q = min(127, round-to-even(iscale * x)), d = 1 / iscale. Q8_K's sums per
//     16 are not stored: the kernels sum the q they read (integers: the same values).
// Every f32 operation is explicitly rounded (no contraction into fma, no approximate division
// under fast math), as the CPU computes it.
// Output row r of xq starts at word r * row_words: k / 4 words of q (4 per word, little-endian),
// then the scales as f32 bits: (d, s) per 32 (ACT_BLOCK 32) or d per 256.
#pragma once

#include "include/common.cuh"

#if ACT_BLOCK != 32 && ACT_BLOCK != 256
#error "qact: ACT_BLOCK is 32 or 256"
#endif

// Block b (elements b * ACT_BLOCK ..) of x's row `row` of k elements; value(e): element e of the
// row as f32 (x itself, or a prologue's output as stored).
template <typename Value>
WICK_DEV void quantize_act_block(Value value, uint32_t* xq, uint32_t row, uint32_t b, uint32_t k,
                                 uint32_t row_words, bool ties_away) {
  const uint32_t e0 = b * ACT_BLOCK;
  const uint32_t out_q = row * row_words + e0 / 4u;
  const uint32_t out_d = row * row_words + k / 4u;
#if ACT_BLOCK == 32
  float amax = 0.0f;
  for (uint32_t j = 0u; j < 32u; j++) amax = fmaxf(amax, fabsf(value(e0 + j)));
  const float d = __fdiv_rn(amax, 127.0f);
  const float inv = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  int sum = 0;
  for (uint32_t w = 0u; w < 8u; w++) {
    uint32_t word = 0u;
    for (uint32_t i = 0u; i < 4u; i++) {
      const float v = __fmul_rn(value(e0 + 4u * w + i), inv);
      float r;
      if (ties_away) {  // std::round
        r = truncf(v);
        if (fabsf(__fsub_rn(v, r)) >= 0.5f) r = __fadd_rn(r, copysignf(1.0f, v));
      } else {  // _mm512_cvtps_epi32
        r = rintf(v);
      }
      const int q = int(r);
      sum += q;
      word |= (uint32_t(q) & 0xffu) << (8u * i);
    }
    xq[out_q + w] = word;
  }
  xq[out_d + 2u * b] = __float_as_uint(d);
  xq[out_d + 2u * b + 1u] = __float_as_uint(__fmul_rn(d, float(sum)));
#else
  float amax = 0.0f, mx = 0.0f;
  for (uint32_t j = 0u; j < 256u; j++) {
    const float v = value(e0 + j);
    if (fabsf(v) > amax) {
      amax = fabsf(v);
      mx = v;
    }
  }
  if (amax == 0.0f) {
    for (uint32_t w = 0u; w < 64u; w++) xq[out_q + w] = 0u;
    xq[out_d + b] = 0u;
    return;
  }
  const float iscale = __fdiv_rn(-127.0f, mx);
  for (uint32_t w = 0u; w < 64u; w++) {
    uint32_t word = 0u;
    for (uint32_t i = 0u; i < 4u; i++) {
      const int q = min(127, __float2int_rn(__fmul_rn(iscale, value(e0 + 4u * w + i))));
      word |= (uint32_t(q) & 0xffu) << (8u * i);
    }
    xq[out_q + w] = word;
  }
  xq[out_d + b] = __float_as_uint(__fdiv_rn(1.0f, iscale));
#endif
}
