// One block of an x row quantized to 8 bits as the CPU's QMatMul does before its integer dot
// products (src/quantized: quantize_act_row_scalar / _avx2 / _avx512), value for value:
//   ACT_BLOCK 32 (ggml's Q8_0/Q8_1): d = amax / 127, q = round(x * (1 / d)), s = d * sum(q); the
//     rounding is the CPU's of the moment (ties_away: its scalar quantizer rounds halves away
//     from zero, its AVX2 and AVX-512 ones to even).
//   ACT_BLOCK 256 (ggml's Q8_K): max = the first element of largest magnitude with its sign,
//     iscale = -127 / max, q = min(127, round-to-even(iscale * x)), d = 1 / iscale. Q8_K's sums per
//     16 are not stored: the kernels sum the q they read (integers: the same values).
// Output row r of xq starts at word r * row_words: k / 4 words of q (4 per word, little-endian),
// then the scales as f32 bits: (d, s) per 32 (ACT_BLOCK 32) or d per 256.
// The includer declares ACT_BLOCK, a buffer (or shared array) `uint xq[]` and
// `float act_value(uint row, uint e)`: element e of x's row `row` as f32 (include/qact_value.glsl:
// x itself, or a prologue's output as stored).
// quantize_act_block: 32 invocations quantize a block together (8 blocks per workgroup of 256),
// through shared memory (lavapipe's subgroups are narrower than 32): a block per invocation left
// each one 32 or 256 elements in a row and every value computed twice (the twin of
// include/qact.cuh). ACT_SERIAL: quantize_act_block_serial instead, a block per invocation, for
// workgroups of any size (qmatvec.comp's ACT_INLINE); max and integer sums are exact in any
// order and every other operation is the same, so the bits are the same.

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

// x * (1 / d) rounded to an integer as the CPU rounds it (32-element blocks).
int act_round(float scaled, bool ties_away) {
  float r;
  if (ties_away) {  // std::round
    r = trunc(scaled);
    if (abs(scaled - r) >= 0.5) r += sign(scaled);
  } else {  // _mm512_cvtps_epi32
    r = roundEven(scaled);
  }
  return int(r);
}

// Where they write: xq, or the includer's ACT_OUT (qmatvec.comp's SWIGLU_Q8 staging).
#ifndef ACT_OUT
#define ACT_OUT xq
#endif
#ifdef ACT_SERIAL
// The values it reads: act_value, or the includer's ACT_SERIAL_VALUE (qmatvec.comp's staged rows).
#ifndef ACT_SERIAL_VALUE
#define ACT_SERIAL_VALUE act_value
#endif
// Block b of row `row`, by the invocation that calls it (no barriers).
void quantize_act_block_serial(uint row, uint b, uint k, uint row_words, bool ties_away) {
  const uint e0 = b * ACT_BLOCK;
  const uint out_q = row * row_words + e0 / 4u;
  const uint out_d = row * row_words + k / 4u;
#if ACT_BLOCK == 32
  float v[32];
  float amax = 0.0;
  for (uint i = 0u; i < 32u; i++) {
    v[i] = ACT_SERIAL_VALUE(row, e0 + i);
    amax = max(amax, abs(v[i]));
  }
  const float d = div_rn(amax, 127.0);
  const float inv = d != 0.0 ? div_rn(1.0, d) : 0.0;
  int sum = 0;
  for (uint w = 0u; w < 8u; w++) {
    uint word = 0u;
    for (uint i = 0u; i < 4u; i++) {
      const int q = act_round(v[4u * w + i] * inv, ties_away);
      sum += q;
      word |= (uint(q) & 0xffu) << (8u * i);
    }
    ACT_OUT[out_q + w] = word;
  }
  ACT_OUT[out_d + 2u * b] = floatBitsToUint(d);
  ACT_OUT[out_d + 2u * b + 1u] = floatBitsToUint(d * float(sum));
#elif ACT_BLOCK == 256
  // The first element of largest magnitude; the values are asked twice (256 would not stay in
  // registers), the same bits both times.
  float amax = 0.0, mx = 0.0;
  for (uint i = 0u; i < 256u; i++) {
    const float v = ACT_SERIAL_VALUE(row, e0 + i);
    if (abs(v) > amax) {
      amax = abs(v);
      mx = v;
    }
  }
  if (amax == 0.0) {
    for (uint w = 0u; w < 64u; w++) ACT_OUT[out_q + w] = 0u;
    ACT_OUT[out_d + b] = 0u;
    return;
  }
  const float iscale = div_rn(-127.0, mx);
  for (uint w = 0u; w < 64u; w++) {
    uint word = 0u;
    for (uint i = 0u; i < 4u; i++) {
      const int q = min(127, int(roundEven(iscale * ACT_SERIAL_VALUE(row, e0 + 4u * w + i))));
      word |= (uint(q) & 0xffu) << (8u * i);
    }
    ACT_OUT[out_q + w] = word;
  }
  ACT_OUT[out_d + b] = floatBitsToUint(div_rn(1.0, iscale));
#else
#error "qact: ACT_BLOCK is 32 or 256"
#endif
}
#endif  // ACT_SERIAL
// ACT_GROUPED (with ACT_SERIAL): quantize_act_block too (qmatvec.comp's SWIGLU_Q8 tail).
#if !defined(ACT_SERIAL) || defined(ACT_GROUPED)
// The values it reads: act_value, or the includer's ACT_GROUP_VALUE.
#ifndef ACT_GROUP_VALUE
#define ACT_GROUP_VALUE act_value
#endif

#if WG_SIZE % 32 != 0
#error "qact: WG_SIZE is a multiple of 32"
#endif
shared float s_amax[WG_SIZE];
#if ACT_BLOCK == 32
shared int s_q[WG_SIZE];
shared int s_sum[WG_SIZE];
#else
shared float s_mx[WG_SIZE];
shared uint s_at[WG_SIZE];
#endif

// Block b (elements b * ACT_BLOCK ..) of x's row `row` of k elements, by the 32 invocations
// t / 32 * 32 .. of the workgroup (lane t % 32). Every invocation calls it (it has barriers);
// `live` is false for those past the last block, which only join the barriers.
void quantize_act_block(uint row, uint b, bool live, uint k, uint row_words, bool ties_away) {
  const uint t = gl_LocalInvocationID.x, lane = t % 32u, first = t - lane;
  const uint e0 = b * ACT_BLOCK;
  const uint out_q = row * row_words + e0 / 4u;
  const uint out_d = row * row_words + k / 4u;
#if ACT_BLOCK == 32
  const float v = live ? ACT_GROUP_VALUE(row, e0 + lane) : 0.0;
  s_amax[t] = abs(v);
  barrier();
  for (uint step = 16u; step > 0u; step >>= 1) {  // max: exact in any order
    if (lane < step) s_amax[t] = max(s_amax[t], s_amax[t + step]);
    barrier();
  }
  const float amax = max(0.0, s_amax[first]);
  const float d = div_rn(amax, 127.0);
  const float inv = d != 0.0 ? div_rn(1.0, d) : 0.0;
  const int q = act_round(v * inv, ties_away);
  s_q[t] = q;
  s_sum[t] = q;
  barrier();
  for (uint step = 16u; step > 0u; step >>= 1) {  // integers: exact in any order
    if (lane < step) s_sum[t] += s_sum[t + step];
    barrier();
  }
  if (live) {
    if (lane % 4u == 0u) {
      uint word = 0u;
      for (uint i = 0u; i < 4u; i++) word |= (uint(s_q[t + i]) & 0xffu) << (8u * i);
      ACT_OUT[out_q + lane / 4u] = word;
    }
    if (lane == 0u) {
      ACT_OUT[out_d + 2u * b] = floatBitsToUint(d);
      ACT_OUT[out_d + 2u * b + 1u] = floatBitsToUint(d * float(s_sum[first]));
    }
  }
#elif ACT_BLOCK == 256
  // Lane l holds elements 8 l .. 8 l + 7: two output words.
  float v[8];
  float amax = 0.0, mx = 0.0;
  uint at = 256u;  // the index of mx in the block; 256: none yet
  for (uint i = 0u; i < 8u; i++) {
    v[i] = live ? ACT_GROUP_VALUE(row, e0 + 8u * lane + i) : 0.0;
    if (abs(v[i]) > amax) {
      amax = abs(v[i]);
      mx = v[i];
      at = 8u * lane + i;
    }
  }
  s_amax[t] = amax;
  s_mx[t] = mx;
  s_at[t] = at;
  barrier();
  // The first element of largest magnitude: larger wins, the smaller index among equals.
  for (uint step = 16u; step > 0u; step >>= 1) {
    if (lane < step) {
      const uint o = t + step;
      if (s_amax[o] > s_amax[t] || (s_amax[o] == s_amax[t] && s_at[o] < s_at[t])) {
        s_amax[t] = s_amax[o];
        s_mx[t] = s_mx[o];
        s_at[t] = s_at[o];
      }
    }
    barrier();
  }
  const float bmax = s_amax[first], bmx = s_mx[first];
  if (live) {
    if (bmax == 0.0) {
      ACT_OUT[out_q + 2u * lane] = 0u;
      ACT_OUT[out_q + 2u * lane + 1u] = 0u;
      if (lane == 0u) ACT_OUT[out_d + b] = 0u;
    } else {
      const float iscale = div_rn(-127.0, bmx);
      for (uint w = 0u; w < 2u; w++) {
        uint word = 0u;
        for (uint i = 0u; i < 4u; i++) {
          const int q = min(127, int(roundEven(iscale * v[4u * w + i])));
          word |= (uint(q) & 0xffu) << (8u * i);
        }
        ACT_OUT[out_q + 2u * lane + w] = word;
      }
      if (lane == 0u) ACT_OUT[out_d + b] = floatBitsToUint(div_rn(1.0, iscale));
    }
  }
#else
#error "qact: ACT_BLOCK is 32 or 256"
#endif
  barrier();  // the shared arrays are refilled by the next call
}
#endif  // !ACT_SERIAL || ACT_GROUPED
