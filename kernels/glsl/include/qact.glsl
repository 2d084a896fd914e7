// Quantizing x to 8 bits per block as the CPU's QMatMul does before its integer dot products
// (src/quantized: quantize_act_row_scalar / quantize_act_avx512), value for value. Used by
// qact.comp (one invocation per block, into a buffer) and by qmatvec.comp's ACT_INLINE variant
// (each workgroup quantizes its x rows into shared memory: one dispatch fewer per matmul).
//   ACT_BLOCK 32 (ggml's Q8_0/Q8_1): d = amax / 127, q = round(x * (1 / d)), s = d * sum(q); the
//     rounding is the CPU's of the moment (ties_away: its scalar quantizer rounds halves away from
//     zero, its AVX-512 one to even).
//   ACT_BLOCK 256 (ggml's Q8_K): max = the first element of largest magnitude with its sign,
//     iscale = -127 / max, q = min(127, round-to-even(iscale * x)), d = 1 / iscale. Q8_K's sums per
//     16 are not stored: the kernels sum the q they read (integers: the same values).
// A row is k / 4 words of q (4 per word, little-endian), then the scales as f32 bits: (d, s) per
// 32 (ACT_BLOCK 32) or d per 256. The includer defines, before including this file:
//   float qact_load(uint row, uint e);            element e of x row `row`
//   void qact_store(uint row, uint word, uint v); word `word` of quantized row `row`
#ifndef WICK_QACT_GLSL
#define WICK_QACT_GLSL

// Words of one quantized row of k elements.
uint qact_row_words(uint k) { return k / 4u + (ACT_BLOCK == 32 ? 2u * (k / 32u) : k / 256u); }

// a / b correctly rounded, as on the CPU: OpFDiv may be 2.5 ulp off (Vulkan's precision table),
// and fma() need not be fused (lavapipe's is not), so no residual test can fix it up in f32. A
// quotient of two floats is at least 2^-49 (relative) away from any midpoint between two floats,
// so the f64 quotient (a few 2^-53 off at worst) rounds to the right one. Devices without f64 get
// their f32 division.
#ifdef WICK_F64
float qact_div_rn(float a, float b) { return float(double(a) / double(b)); }
#else
float qact_div_rn(float a, float b) { return a / b; }
#endif

// Quantizes block b (elements b * ACT_BLOCK ..) of row `row` of a k-element x.
void quantize_act_block(uint row, uint b, uint k, bool ties_away) {
  const uint e0 = b * ACT_BLOCK, out_q = e0 / 4u, out_d = k / 4u;
#if ACT_BLOCK == 32
  float amax = 0.0;
  for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(qact_load(row, e0 + j)));
  const float d = qact_div_rn(amax, 127.0);
  const float inv = d != 0.0 ? qact_div_rn(1.0, d) : 0.0;
  int sum = 0;
  for (uint w = 0u; w < 8u; w++) {
    uint word = 0u;
    for (uint i = 0u; i < 4u; i++) {
      const float v = qact_load(row, e0 + 4u * w + i) * inv;
      float r;
      if (ties_away) {  // std::round
        r = trunc(v);
        if (abs(v - r) >= 0.5) r += sign(v);
      } else {  // _mm512_cvtps_epi32
        r = roundEven(v);
      }
      const int q = int(r);
      sum += q;
      word |= (uint(q) & 0xffu) << (8u * i);
    }
    qact_store(row, out_q + w, word);
  }
  qact_store(row, out_d + 2u * b, floatBitsToUint(d));
  qact_store(row, out_d + 2u * b + 1u, floatBitsToUint(d * float(sum)));
#elif ACT_BLOCK == 256
  float amax = 0.0, mx = 0.0;
  for (uint j = 0u; j < 256u; j++) {
    const float v = qact_load(row, e0 + j);
    if (abs(v) > amax) {
      amax = abs(v);
      mx = v;
    }
  }
  if (amax == 0.0) {
    for (uint w = 0u; w < 64u; w++) qact_store(row, out_q + w, 0u);
    qact_store(row, out_d + b, 0u);
    return;
  }
  const float iscale = qact_div_rn(-127.0, mx);
  for (uint w = 0u; w < 64u; w++) {
    uint word = 0u;
    for (uint i = 0u; i < 4u; i++) {
      const int q = min(127, int(roundEven(iscale * qact_load(row, e0 + 4u * w + i))));
      word |= (uint(q) & 0xffu) << (8u * i);
    }
    qact_store(row, out_q + w, word);
  }
  qact_store(row, out_d + b, floatBitsToUint(qact_div_rn(1.0, iscale)));
#else
#error "qact.glsl: ACT_BLOCK is 32 or 256"
#endif
}

#endif  // WICK_QACT_GLSL
