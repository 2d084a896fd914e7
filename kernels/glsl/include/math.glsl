// Float math the GLSL built-ins lack or get wrong at the edges. WICK_FAST_MATH (defined by the
// host when fast math is on; part of the kernel cache key) selects the plain built-ins.

float nan_f32() { return uintBitsToFloat(0x7fc00000u); }
float inf_f32() { return uintBitsToFloat(0x7f800000u); }

// tanh without inf/inf = NaN for large |x| (some drivers expand tanh through exp).
float tanh_stable(float x) {
#ifdef WICK_FAST_MATH
  return tanh(x);
#else
  const float t = exp(-2.0 * abs(x));
  return sign(x) * (1.0 - t) / (1.0 + t);
#endif
}

// exp within ~2 ulp over f32's range. GLSL promises only 3 + 2|x| ulp (35 at |x| = 16), which
// softmax's exp(x - max) shows. x = k ln2 + r with |r| <= ln2/2 (ln2 in two parts so k ln2 is
// exact enough), exp(r) by its Taylor series to r^7 (truncation < 0.1 ulp), then scaled by 2^k.
// Not switched off by WICK_FAST_MATH: where it is used (softmax) memory, not the ALU, is the cost.
float exp_accurate(float x) {
  if (x > 88.72284) return inf_f32();
  if (x < -103.97208) return 0.0;  // below half the smallest subnormal; also -inf
  if (is_nan(x)) return x;
  const float k = round(x * 1.44269504);
  const float r = fma(k, -1.4286068e-6, fma(k, -0.693145751953125, x));
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

// erf, Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7).
float erf_approx(float x) {
  const float a = abs(x);
  const float t = 1.0 / (1.0 + 0.3275911 * a);
  const float poly =
      t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(x) * (1.0 - poly * exp(-a * a));
}

// Ops exact on subnormals even where the device flushes them to zero (NVIDIA has no f32
// DenormPreserve): they decide on the bits, not on flushed comparisons.
float neg_bits(float v) { return uintBitsToFloat(floatBitsToUint(v) ^ 0x80000000u); }
float abs_bits(float v) { return uintBitsToFloat(floatBitsToUint(v) & 0x7fffffffu); }
bool is_zero_bits(float v) { return (floatBitsToUint(v) & 0x7fffffffu) == 0u; }
bool sign_bit(float v) { return (floatBitsToUint(v) & 0x80000000u) != 0u; }
bool negative_nonzero(float v) { return sign_bit(v) && !is_zero_bits(v) && !is_nan(v); }
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
// log2 of x >= 0, subnormals through their integer significand (x = m 2^-149).
float log2_full(float x) {
  const uint b = floatBitsToUint(x);
  return b == 0u || b >= 0x00800000u ? log2(x) : log2(float(b)) - 149.0;
}
float log_c(float x) {
  if (negative_nonzero(x)) return nan_f32();
  return floatBitsToUint(x) < 0x00800000u && !is_zero_bits(x) ? log2_full(x) * 0.6931471805599453
                                                               : log(x);
}
float sqrt_c(float x) {
  if (negative_nonzero(x)) return nan_f32();
  const uint b = floatBitsToUint(x);
  if (b == 0u || b >= 0x00800000u || sign_bit(x)) return sqrt(x);
  return sqrt(float(b) * 2.0) * 2.6469779601696886e-23;  // sqrt(m 2^-149) = sqrt(2m) 2^-75
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

float pow_pos(float a, float b) { return exp2(b * log2_full(a)); }
DEFINE_POW_C(float, pow_c, pow_pos, is_nan, is_zero_bits, sign_bit, inf_f32(), nan_f32(), 16777216.0)

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
