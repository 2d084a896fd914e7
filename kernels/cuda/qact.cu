// Quantizes x (m, k) to 8 bits per block as the CPU's QMatMul does before its integer dot
// products (src/quantized: quantize_act_row_scalar / quantize_act_avx512), bit for bit, so that
// qmatvec.cu and qmatmul.cu (ACT_Q8) compute the CPU's math. A thread per block of x:
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
// Bindings: 0 x, 1 xq.
#include "include/common.cuh"
#include "include/dtype.cuh"

#if ACT_BLOCK != 32 && ACT_BLOCK != 256
#error "qact.cu: ACT_BLOCK is 32 or 256"
#endif

WICK_PARAMS_STRUCT(QActParams, WICK_PARAMS_QACT(WICK_CU_FIELD, WICK_CU_ARRAY))

typedef STORAGE_T(DT) ST;

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  const QActParams& pc = PARAMS(QActParams, args);
  const ST* x = buffer_at<const ST>(args, 0);
  uint32_t* xq = buffer_at<uint32_t>(args, 1);
  const uint32_t blocks_per_row = pc.k / ACT_BLOCK;
  const uint32_t id = global_index();
  if (id >= pc.m * blocks_per_row) return;
  const uint32_t row = id / blocks_per_row, b = id % blocks_per_row, e0 = b * ACT_BLOCK;
  const uint32_t out_q = row * pc.row_words + e0 / 4u;
  const uint32_t out_d = row * pc.row_words + pc.k / 4u;
  const ST* xb = x + pc.x_offset + row * pc.x_row + e0 * pc.x_k;
  auto load_x = [&](uint32_t e) { return float(LOAD(DT, xb[e * pc.x_k])); };
#if ACT_BLOCK == 32
  float amax = 0.0f;
  for (uint32_t j = 0u; j < 32u; j++) amax = fmaxf(amax, fabsf(load_x(j)));
  const float d = __fdiv_rn(amax, 127.0f);
  const float inv = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  int sum = 0;
  for (uint32_t w = 0u; w < 8u; w++) {
    uint32_t word = 0u;
    for (uint32_t i = 0u; i < 4u; i++) {
      const float v = __fmul_rn(load_x(4u * w + i), inv);
      float r;
      if (pc.ties_away != 0u) {  // std::round
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
    const float v = load_x(j);
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
      const int q = min(127, __float2int_rn(__fmul_rn(iscale, load_x(4u * w + i))));
      word |= (uint32_t(q) & 0xffu) << (8u * i);
    }
    xq[out_q + w] = word;
  }
  xq[out_d + b] = __float_as_uint(__fdiv_rn(1.0f, iscale));
#endif
}
