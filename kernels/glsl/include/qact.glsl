// One block of an x row quantized to 8 bits as the CPU's QMatMul does before its integer dot
// products (src/quantized: quantize_act_row_scalar / quantize_act_avx512), value for value:
//   ACT_BLOCK 32 (ggml's Q8_0/Q8_1): d = amax / 127, q = round(x * (1 / d)), s = d * sum(q); the
//     rounding is the CPU's of the moment (ties_away: its scalar quantizer rounds halves away
//     from zero, its AVX-512 one to even).
//   ACT_BLOCK 256 (ggml's Q8_K): max = the first element of largest magnitude with its sign,
//     iscale = -127 / max, q = min(127, round-to-even(iscale * x)), d = 1 / iscale. Q8_K's sums per
//     16 are not stored: the kernels sum the q they read (integers: the same values).
// Output row r of xq starts at word r * row_words: k / 4 words of q (4 per word, little-endian),
// then the scales as f32 bits: (d, s) per 32 (ACT_BLOCK 32) or d per 256.
// The includer declares ACT_BLOCK, a buffer `uint xq[]` and `float act_value(uint row, uint e)`:
// element e of x's row `row` as f32 (qact.comp: x itself, or a prologue's output as stored).

// a / b correctly rounded, as on the CPU: OpFDiv may be 2.5 ulp off (Vulkan's precision table),
// and fma() need not be fused (lavapipe's is not), so no residual test can fix it up in f32. A
// quotient of two floats is at least 2^-49 (relative) away from any midpoint between two floats,
// so the f64 quotient (a few 2^-53 off at worst) rounds to the right one. Devices without f64 get
// their f32 division.
#ifdef WICK_F64
float div_rn(float a, float b) { return float(double(a) / double(b)); }
#else
float div_rn(float a, float b) { return a / b; }
#endif

// Block b (elements b * ACT_BLOCK ..) of x's row `row` of k elements.
void quantize_act_block(uint row, uint b, uint k, uint row_words, bool ties_away) {
  const uint e0 = b * ACT_BLOCK;
  const uint out_q = row * row_words + e0 / 4u;
  const uint out_d = row * row_words + k / 4u;
#if ACT_BLOCK == 32
  float amax = 0.0;
  for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(act_value(row, e0 + j)));
  const float d = div_rn(amax, 127.0);
  const float inv = d != 0.0 ? div_rn(1.0, d) : 0.0;
  int sum = 0;
  for (uint w = 0u; w < 8u; w++) {
    uint word = 0u;
    for (uint i = 0u; i < 4u; i++) {
      const float v = act_value(row, e0 + 4u * w + i) * inv;
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
    xq[out_q + w] = word;
  }
  xq[out_d + 2u * b] = floatBitsToUint(d);
  xq[out_d + 2u * b + 1u] = floatBitsToUint(d * float(sum));
#elif ACT_BLOCK == 256
  float amax = 0.0, mx = 0.0;
  for (uint j = 0u; j < 256u; j++) {
    const float v = act_value(row, e0 + j);
    if (abs(v) > amax) {
      amax = abs(v);
      mx = v;
    }
  }
  if (amax == 0.0) {
    for (uint w = 0u; w < 64u; w++) xq[out_q + w] = 0u;
    xq[out_d + b] = 0u;
    return;
  }
  const float iscale = div_rn(-127.0, mx);
  for (uint w = 0u; w < 64u; w++) {
    uint word = 0u;
    for (uint i = 0u; i < 4u; i++) {
      const int q = min(127, int(roundEven(iscale * act_value(row, e0 + 4u * w + i))));
      word |= (uint(q) & 0xffu) << (8u * i);
    }
    xq[out_q + w] = word;
  }
  xq[out_d + b] = floatBitsToUint(div_rn(1.0, iscale));
#else
#error "qact: ACT_BLOCK is 32 or 256"
#endif
}
