// Float math the GLSL built-ins lack or get wrong at the edges. Vulkan allows exp 3 + 2|x| ulp,
// log and sin/cos only an absolute error near 1 and within [-pi, pi], and tanh is a formula over
// exp, so the transcendental ops are wick's own: range reduction and short polynomials, within a
// few ulp of the correctly rounded result over all floats, the small arguments (relative error
// near 0) and the tails (no cancellation) included. They cost little beside the memory traffic of
// an element-wise kernel, so WICK_FAST_MATH (defined by the host when fast math is on; part of
// the kernel cache key) does not switch them off. include/math64.glsl has the f64 versions;
// scripts/gen_math_constants.py computes the two-part constants and the 2/pi table.

float nan_f32() { return uintBitsToFloat(0x7fc00000u); }
float inf_f32() { return uintBitsToFloat(0x7f800000u); }

// ---- bits ---------------------------------------------------------------------------------------
// Ops exact on subnormals even where the device flushes them to zero (NVIDIA has no f32
// DenormPreserve): they decide on the bits, not on flushed comparisons.
float neg_bits(float v) { return uintBitsToFloat(floatBitsToUint(v) ^ 0x80000000u); }
float abs_bits(float v) { return uintBitsToFloat(floatBitsToUint(v) & 0x7fffffffu); }
bool is_zero_bits(float v) { return (floatBitsToUint(v) & 0x7fffffffu) == 0u; }
bool sign_bit(float v) { return (floatBitsToUint(v) & 0x80000000u) != 0u; }
bool is_inf_bits(float v) { return (floatBitsToUint(v) & 0x7fffffffu) == 0x7f800000u; }
bool negative_nonzero(float v) { return sign_bit(v) && !is_zero_bits(v) && !is_nan(v); }
// |mag| with the sign of s.
float copysign_bits(float mag, float s) {
  return uintBitsToFloat((floatBitsToUint(mag) & 0x7fffffffu) | (floatBitsToUint(s) & 0x80000000u));
}
float relu_bits(float v) { return negative_nonzero(v) ? 0.0 : v; }  // -0 and NaN stay
float sign_bits(float v) {
  if (is_nan(v) || is_zero_bits(v)) return v;
  return sign_bit(v) ? -1.0 : 1.0;
}
// An unsigned key in the values' order (NaN excluded).
uint order_key(float v) {
  const uint b = floatBitsToUint(v);
  return (b & 0x80000000u) != 0u ? ~b : b | 0x80000000u;
}
float clamp_bits(float v, float lo, float hi) {
  if (is_nan(v)) return v;
  if (order_key(v) < order_key(lo)) return lo;
  return order_key(v) > order_key(hi) ? hi : v;
}
float sqrt_c(float x) {
  if (negative_nonzero(x)) return nan_f32();
  const uint b = floatBitsToUint(x);
  if (b == 0u || b >= 0x00800000u || sign_bit(x)) return sqrt(x);
  return sqrt(float(b) * 2.0) * 2.6469779601696886e-23;  // sqrt(m 2^-149) = sqrt(2m) 2^-75
}

// ---- double-floats --------------------------------------------------------------------------
// A value carried as hi + lo (|lo| <= ulp(hi) / 2) where f32 alone would lose the digits that an
// exponential or a cancellation later exposes. two_sum / two_prod return a + b and a * b exactly
// as such a pair (Knuth's sum; Dekker's product with 12-bit halves, for |a|, |b| < 2^115).
// `precise` forbids the fusing and reassociation that would make them inexact.
vec2 two_sum(float a, float b) {
  precise float s = a + b;
  precise float bb = s - a;
  precise float e = (a - (s - bb)) + (b - bb);
  return vec2(s, e);
}
vec2 split_halves(float a) {
  precise float c = 4097.0 * a;  // 2^12 + 1
  precise float hi = c - (c - a);
  precise float lo = a - hi;
  return vec2(hi, lo);
}
vec2 two_prod(float a, float b) {
  precise float p = a * b;
  const vec2 x = split_halves(a), y = split_halves(b);
  precise float e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
  return vec2(p, e);
}

// a / b to within about half an ulp (Vulkan allows a division 2.5): the quotient corrected by its
// exactly computed residual. For finite a, b with a moderate quotient.
float div_close(float a, float b) {
  const float q = a / b;
  const vec2 qb = two_prod(q, b);
  return q + ((a - qb.x) - qb.y) / b;
}

// ---- exp ----------------------------------------------------------------------------------------
// ln 2 in two parts: k * LN2_HI is exact for |k| < 2^9 (Cody-Waite reduction).
const float LN2_HI = 0.693145751953125, LN2_LO = 1.42860682030941723e-6, LOG2E = 1.44269504;

// exp(hi + lo) for a double-float argument (lo may be 0), within ~2 ulp over f32's range:
// x = k ln2 + r with |r| <= ln2/2, exp(r) by its Taylor series to r^7 (truncation < 0.1 ulp),
// scaled by 2^k.
float exp_parts(float hi, float lo) {
  if (hi > 88.72284) return inf_f32();
  if (hi < -103.97208) return 0.0;  // below half the smallest subnormal; also -inf
  if (is_nan(hi)) return hi;
  const float k = round(hi * LOG2E);
  const float r = fma(k, -LN2_LO, fma(k, -LN2_HI, hi)) + lo;
  float p = 1.0 / 5040.0;
  p = fma(p, r, 1.0 / 720.0);
  p = fma(p, r, 1.0 / 120.0);
  p = fma(p, r, 1.0 / 24.0);
  p = fma(p, r, 1.0 / 6.0);
  p = fma(p, r, 0.5);
  p = fma(p, r, 1.0);
  p = fma(p, r, 1.0);
  // ldexp's exponent stays within the normal range: 2^k itself need not be a float.
  const int e = int(k);
  if (e < -120) return ldexp(p, e + 64) * 5.421010862427522e-20;  // 2^-64
  if (e > 127) return ldexp(p, e - 1) * 2.0;
  return ldexp(p, e);
}
float exp_accurate(float x) { return exp_parts(x, 0.0); }

// exp(r) - 1 for |r| <= ln2/2: Taylor to r^8 (truncation < 1e-9 relative), r kept exact.
float expm1_reduced(float r) {
  float p = 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  return r + (r * r) * p;
}
// exp(x) - 1 for x <= 0 (or NaN) without cancellation near 0: 2^k (1 + q) - 1 = 2^k q + (2^k - 1),
// the second term exact.
float expm1_nonpositive(float x) {
  if (is_nan(x) || is_zero_bits(x)) return x;
  const float xc = max(x, -30.0);  // expm1 is -1 in f32 below
  const float k = round(xc * LOG2E);
  const float r = fma(k, -LN2_LO, fma(k, -LN2_HI, xc));
  const float s = ldexp(1.0, int(k));
  return s * expm1_reduced(r) + (s - 1.0);
}

// tanh|x| = -e / (e + 2) with e = expm1(-2|x|) in (-1, 0]: no overflow, no cancellation.
float tanh_accurate(float x) {
  if (is_nan(x)) return x;
  const float e = expm1_nonpositive(-2.0 * abs(x));
  return copysign_bits(div_close(-e, e + 2.0), x);
}

// 1 / (1 + exp(-x)) for x = hi + lo, from e = exp(-|x|) in (0, 1]: 1 / (1 + e) for x >= 0,
// e / (1 + e) below; neither tail overflows or cancels.
float sigmoid_parts(float hi, float lo) {
  if (is_nan(hi)) return hi;
  const bool neg = sign_bit(hi);
  const float e = neg ? exp_parts(hi, lo) : exp_parts(-hi, -lo);
  const float s = div_close(1.0, 1.0 + e);
  return neg ? e * s : s;
}
float sigmoid_accurate(float x) { return sigmoid_parts(x, 0.0); }
// x sigmoid(x): unary.comp's silu, and qact.comp's swiglu prologue.
float silu_accurate(float x) { return x * sigmoid_accurate(x); }

// gelu's tanh form 0.5 x (1 + tanh u) = x sigmoid(2u), 2u = x (A + B x^2), A = 2 sqrt(2/pi),
// B = 0.044715 A. In the negative tail sigmoid(2u) ~ exp(2u), whose relative error is the
// absolute error of 2u (up to ~90 there): 2u is carried as a double-float.
const float GELU_A_HI = 1.59576917, GELU_A_LO = -4.53406805e-08;
const float GELU_B_HI = 0.0713548139, GELU_B_LO = 2.39883247e-09;
float gelu_tanh(float x) {
  const float xc = clamp(x, -20.0, 20.0);  // sigmoid(2u) is 0 or 1 beyond; NaN: see below
  const vec2 x2 = two_prod(xc, xc);
  vec2 bx2 = two_prod(GELU_B_HI, x2.x);
  bx2.y += GELU_B_HI * x2.y + GELU_B_LO * x2.x;
  vec2 c = two_sum(GELU_A_HI, bx2.x);
  c.y += GELU_A_LO + bx2.y;
  vec2 t = two_prod(xc, c.x);
  t.y += xc * c.y;
  return x * sigmoid_parts(t.x, t.y);  // NaN x stays NaN through the product
}

// ---- erf ----------------------------------------------------------------------------------------
// The CPU's fits (src/cpu/float_math.h, scripts/fit_erf.py): below ERF_SPLIT erf(a) = a P(a^2);
// above, erfc(a) = exp(-a^2) w Q(w) with w = 1 / (1 + a/2). erf within 3 ulp, erfc within 5.
const float ERF_SPLIT = 0.75;
float erf_p(float u) {  // P(u), u = a^2
  float p = 9.4729985e-05;
  p = p * u - 0.000835735642;
  p = p * u + 0.00521681644;
  p = p * u - 0.0268647801;
  p = p * u + 0.112837784;
  p = p * u - 0.376126379;
  return p * u + 1.12837923;
}
// erfc(a) for a >= ERF_SPLIT, with a^2 = sq.x + sq.y exactly: exp(-a^2) from a rounded square
// would be off by up to a^2 ulp.
float erfc_above_split(float a, vec2 sq) {
  if (a > 10.5) return 0.0;  // below f32's subnormals
  const float w = div_close(1.0, 1.0 + 0.5 * a);
  float q = 0.062642552;
  q = q * w - 0.328546166;
  q = q * w + 0.689795732;
  q = q * w - 0.687822044;
  q = q * w + 0.305222601;
  q = q * w - 0.142864719;
  q = q * w + 0.11996229;
  q = q * w + 0.169907555;
  q = q * w + 0.247563928;
  q = q * w + 0.282046199;
  q = q * w + 0.282096207;
  return exp_parts(-sq.x, -sq.y) * (w * q);
}
float erf_accurate(float x) {
  if (is_nan(x)) return x;
  const float a = abs(x);
  const float r = a < ERF_SPLIT ? a * erf_p(a * a) : 1.0 - erfc_above_split(a, two_prod(a, a));
  return copysign_bits(r, x);
}
// erfc(z) for z = hi + lo with z^2 = sq.x + sq.y: the low part enters erf's a P(a^2) and the
// exponent of erfc's tail, where an argument rounded to f32 would cost up to 2 a^2 ulp.
float erfc_parts(float hi, float lo, vec2 sq) {
  const float a = abs(hi);
  if (a < ERF_SPLIT) {
    const float p = erf_p(hi * hi);
    return 1.0 - (hi * p + lo * p);
  }
  const float c = erfc_above_split(a, sq);
  return sign_bit(hi) ? 2.0 - c : c;
}
// 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(z), z = -x / sqrt 2 (no cancellation for x < 0), with
// z as a double-float and z^2 = x^2 / 2 exactly.
const float INV_SQRT2_HI = 0.707106769, INV_SQRT2_LO = 1.21016175e-08;
float gelu_erf(float x) {
  const float xc = clamp(x, -20.0, 20.0);  // erfc(z) is 0 or 2 beyond; NaN stays through x
  vec2 z = two_prod(-xc, INV_SQRT2_HI);
  z.y -= xc * INV_SQRT2_LO;
  return 0.5 * x * erfc_parts(z.x, z.y, 0.5 * two_prod(xc, xc));
}

// ---- log and pow --------------------------------------------------------------------------------
// x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals through their integer significand, so
// exact under flush-to-zero too); log m = 2 atanh(s) = 2s + 2s s^2 T(s^2), s = (m-1)/(m+1).
float log_split(float x, out float m) {  // x > 0 finite; returns e
  uint u = floatBitsToUint(x);
  int bias = 127;
  if (u < 0x00800000u) {  // m 2^-149 = float(m) 2^-149
    u = floatBitsToUint(float(u));
    bias += 149;
  }
  const uint mant = u & 0x7fffffu;
  const bool above = mant > 0x3504f3u;  // the significand of sqrt(2)
  m = uintBitsToFloat(mant | (above ? 0x3f000000u : 0x3f800000u));
  return float(int(u >> 23) - bias + (above ? 1 : 0));
}
float atanh_tail(float s2) {  // T(s^2) = 1/3 + s^2/5 + ... (|s| <= 0.1716: to s^10)
  float p = 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  return p * s2 + 1.0 / 3.0;
}
// log x (x > 0 finite) as a double-float, ~2^-36 relative: s and e ln2 carried in two parts
// (s's low part also absorbs a division that is not correctly rounded: Vulkan allows 2.5 ulp).
vec2 log_parts(float x) {
  float m;
  const float e = log_split(x, m);
  const float f = m - 1.0;  // exact
  const vec2 u = two_sum(m, 1.0);
  const float s = f / u.x;
  const vec2 su = two_prod(s, u.x);
  const float s_lo = ((f - su.x) - su.y - s * u.y) / u.x;  // f - s (m + 1), divided
  const vec2 hi = two_sum(e * LN2_HI, 2.0 * s);
  return vec2(hi.x, hi.y + (e * LN2_LO + (2.0 * s_lo + (2.0 * s) * ((s * s) * atanh_tail(s * s)))));
}
// log x within an ulp; log(0) = -inf, log of a negative number NaN.
float log_accurate(float x) {
  if (is_nan(x)) return x;
  if (is_zero_bits(x)) return -inf_f32();
  if (sign_bit(x)) return nan_f32();
  if (is_inf_bits(x)) return x;
  const vec2 l = log_parts(x);
  return l.x + l.y;
}
// a^b for a > 0 and b finite: exp(b log a) with b log a as a double-float, since the result's
// relative error is the absolute error of b log a.
float pow_pos(float a, float b) {
  const vec2 l = log_parts(a);
  const float y = b * l.x;
  if (abs(y) > 200.0) return y > 0.0 ? inf_f32() : 0.0;  // beyond f32's range either way
  const vec2 p = two_prod(b, l.x);
  return exp_parts(p.x, p.y + b * l.y);
}

// C99's pow edge cases around a base power function POW_POS (for a > 0, b finite): NaN, zeros,
// infinities, negative bases with integer exponents. Instantiated for float and double; IS_ZERO
// and IS_NEG see a's sign and zero-ness (on the bits for float, see above).
#define DEFINE_POW_C(T, NAME, POW_POS, IS_NAN, IS_ZERO, IS_NEG, INF, NAN_VALUE, ODD_LIMIT) \
  T NAME(T a, T b) {                                                                  \
    if (b == T(0) || a == T(1)) return T(1);                                          \
    if (IS_NAN(a) || IS_NAN(b)) return a + b;                                         \
    const bool b_int = floor(b) == b;                                                 \
    const bool b_odd = b_int && abs(b) < ODD_LIMIT && mod(b, T(2)) == T(1);           \
    if (abs(b) == INF) {                                                              \
      if (abs(a) == T(1)) return T(1);                                                \
      return (abs(a) > T(1)) == (b > T(0)) ? INF : T(0);                              \
    }                                                                                 \
    if (IS_ZERO(a) || abs(a) == INF) {                                                \
      /* +-0 and +-inf: the magnitude from b's sign, the sign from a's for odd b */   \
      const T mag = IS_ZERO(a) == (b > T(0)) ? T(0) : INF;                            \
      return b_odd && IS_NEG(a) ? -mag : mag;                                         \
    }                                                                                 \
    if (!IS_NEG(a)) return POW_POS(a, b);                                             \
    if (!b_int) return NAN_VALUE;                                                     \
    const T r = POW_POS(-a, b);                                                       \
    return b_odd ? -r : r;                                                            \
  }

DEFINE_POW_C(float, pow_c, pow_pos, is_nan, is_zero_bits, sign_bit, inf_f32(), nan_f32(), 16777216.0)

// ---- sin and cos --------------------------------------------------------------------------------
// 2/pi in 32-bit words after two zero words, so that a window of it may start before the binary
// point: enough bits for every f32 and f64 (Payne-Hanek reduction, below). A private variable,
// not a constant: glslang copies a constant array into a local at each run-time index, which
// took lavapipe half a second to compile per kernel.
uint TWO_OVER_PI[42] = uint[42](
    0u, 0u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u, 0x3C439041u,
    0xFE5163ABu, 0xDEBBC561u, 0xB7246E3Au, 0x424DD2E0u, 0x06492EEAu, 0x09D1921Cu, 0xFE1DEB1Cu,
    0xB129A73Eu, 0xE88235F5u, 0x2EBB4484u, 0xE99C7026u, 0xB45F7E41u, 0x3991D639u, 0x835339F4u,
    0x9C845F8Bu, 0xBDF9283Bu, 0x1FF897FFu, 0xDE05980Fu, 0xEF2F118Bu, 0x5A0A6D1Fu, 0x6D367ECFu,
    0x27CB09B7u, 0x4F463F66u, 0x9E5FEA2Du, 0x7527BAC7u, 0xEBE5F17Bu, 0x3D0739F7u, 0x8A5292EAu,
    0x6BFB5FB1u, 0x1F8D5D08u, 0x56033046u, 0xFC7B6BABu, 0xF0CFBC20u, 0x9AF4361Du);

// 32 bits of the table from bit `pos` (bit 0: the top bit of word 0).
uint two_over_pi_bits(int pos) {
  const int w = pos >> 5, sh = pos & 31;
  const uint hi = TWO_OVER_PI[w];
  return sh == 0 ? hi : (hi << sh) | (TWO_OVER_PI[w + 1] >> (32 - sh));
}

// For |x| = M 2^e (M = m_hi 2^32 + m_lo, up to 64 bits): x 2/pi = q + f with q an integer and
// |f| <= 1/2. Returns q mod 4, and f as a 64-bit significand `frac` (high word first, top bit set)
// times 2^-frac_exp, negated when `neg`. Bits of 2/pi before index e - 1 only add multiples of 4
// to M 2^e 2/pi; the next 32 n (n = 3 words for f32, 6 for f64) give f to beyond 64 bits even
// for the floats closest to a multiple of pi/2. Loops have constant trip counts and arrays
// constant indices once inlined, so that drivers keep everything in registers.
uint reduce_half_pi_bits(uint m_hi, uint m_lo, int e, int n, out uvec2 frac, out int frac_exp,
                         out bool neg) {
  // Window word i starts at bit index e - 1 + 32 i of 2/pi, which is table bit e + 62 + 32 i.
  uint w[6];
  for (int i = 0; i < n; i++) w[i] = two_over_pi_bits(e + 62 + 32 * i);
  // p = M W mod 2^(32 n), little-endian: its top two bits are q mod 4, the rest f's bits.
  uint p[6];
  uint c = 0u;
  for (int i = 0; i < n; i++) {  // m_lo W
    uint hi, lo, k;
    umulExtended(m_lo, w[n - 1 - i], hi, lo);
    p[i] = uaddCarry(lo, c, k);
    c = hi + k;  // hi <= 2^32 - 2
  }
  c = 0u;
  for (int i = 0; i + 1 < n; i++) {  // + m_hi W 2^32
    uint hi, lo, k1, k2;
    umulExtended(m_hi, w[n - 1 - i], hi, lo);
    p[i + 1] = uaddCarry(uaddCarry(p[i + 1], lo, k1), c, k2);
    c = hi + k1 + k2;  // at most one carry when hi is at its largest
  }
  uint q = p[n - 1] >> 30;
  for (int i = n - 1; i > 0; i--) p[i] = (p[i] << 2) | (p[i - 1] >> 30);
  p[0] <<= 2;
  // f >= 1/2: round q up, f becomes negative; ~p is its magnitude within 2^-(32 n).
  neg = (p[n - 1] & 0x80000000u) != 0u;
  if (neg) {
    q += 1u;
    for (int i = 0; i < n; i++) p[i] = ~p[i];
  }
  // Normalise: whole words (twice at most: no float comes within 2^-64 of a multiple of pi/2),
  // then bits, until the top bit is set.
  frac_exp = 64;
  for (int s = 0; s < 2; s++) {
    if (p[n - 1] == 0u) {
      for (int i = n - 1; i > 0; i--) p[i] = p[i - 1];
      p[0] = 0u;
      frac_exp += 32;
    }
  }
  const uint w0 = p[n - 1], w1 = p[n - 2], w2 = n > 2 ? p[n - 3] : 0u;
  const int z = w0 == 0u ? 0 : 31 - findMSB(w0);
  frac = z == 0 ? uvec2(w0, w1) : uvec2((w0 << z) | (w1 >> (32 - z)), (w1 << z) | (w2 >> (32 - z)));
  frac_exp += z;
  return q & 3u;
}

// x - q pi/2 as a double-float r (|r| <= pi/4) for x >= 0 finite; q mod 4 in `q`.
const float PIO2_HI = 1.57079637, PIO2_LO = -4.37113883e-08;
vec2 reduce_half_pi(float x, out uint q) {
  q = 0u;
  if (x < 0.785398163) return vec2(x, 0.0);
  const uint b = floatBitsToUint(x);
  uvec2 f;
  int fe;
  bool neg;
  q = reduce_half_pi_bits(0u, (b & 0x7fffffu) | 0x800000u, int(b >> 23) - 150, 3, f, fe, neg);
  // f = f.x 2^(32 - fe) + f.y 2^-fe: its top 24 bits exactly, the next 32 rounded.
  float f_hi = ldexp(float(f.x & 0xffffff00u), 32 - fe);
  float f_lo = ldexp(float(((f.x & 0xffu) << 24) | (f.y >> 8)), 8 - fe);
  if (neg) {
    f_hi = -f_hi;
    f_lo = -f_lo;
  }
  vec2 r = two_prod(f_hi, PIO2_HI);
  r.y += f_hi * PIO2_LO + f_lo * PIO2_HI;
  return two_sum(r.x, r.y);
}
// Taylor polynomials on |r| <= pi/4 (truncation < 0.05 ulp).
float sin_poly(float r) {
  const float r2 = r * r;
  float p = 1.0 / 362880.0;
  p = p * r2 - 1.0 / 5040.0;
  p = p * r2 + 1.0 / 120.0;
  p = p * r2 - 1.0 / 6.0;
  return r + r * (r2 * p);
}
float cos_poly(float r) {
  const float r2 = r * r;
  float p = -1.0 / 3628800.0;
  p = p * r2 + 1.0 / 40320.0;
  p = p * r2 - 1.0 / 720.0;
  p = p * r2 + 1.0 / 24.0;
  return 1.0 - 0.5 * r2 + (r2 * r2) * p;
}
// sin (cos_of = false) or cos of x.
float sin_cos(float x, bool cos_of) {
  if (is_nan(x) || is_inf_bits(x)) return nan_f32();
  uint q;
  const vec2 r = reduce_half_pi(abs(x), q);
  if (cos_of) q += 1u;  // cos x = sin(|x| + pi/2)
  // sin and cos of r.x + r.y, to first order in r.y.
  const float v = (q & 1u) == 0u ? sin_poly(r.x) + r.y * (1.0 - 0.5 * r.x * r.x)
                                 : cos_poly(r.x) - r.y * r.x;
  const bool negate = ((q & 2u) != 0u) != (!cos_of && sign_bit(x));
  return negate ? -v : v;
}
float sin_accurate(float x) { return sin_cos(x, false); }
float cos_accurate(float x) { return sin_cos(x, true); }

// Rounds half away from zero.
float round_away(float x) {
  const float t = trunc(x);
  return abs(x - t) >= 0.5 ? t + sign(x) : t;
}
#ifdef WICK_F64
double round_away(double x) {
  const double t = trunc(x);
  return abs(x - t) >= 0.5LF ? t + sign(x) : t;
}
#endif
