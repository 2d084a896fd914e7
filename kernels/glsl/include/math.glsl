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

// erf, Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7).
float erf_approx(float x) {
  const float a = abs(x);
  const float t = 1.0 / (1.0 + 0.3275911 * a);
  const float poly =
      t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(x) * (1.0 - poly * exp(-a * a));
}

// C99's pow edge cases around a base power function POW_POS (for a > 0, b finite): NaN, zeros,
// infinities, negative bases with integer exponents. Instantiated for float and double.
#define DEFINE_POW_C(T, NAME, POW_POS, IS_NAN, INF, NAN_VALUE, ODD_LIMIT)             \
  T NAME(T a, T b) {                                                                  \
    if (b == T(0) || a == T(1)) return T(1);                                          \
    if (IS_NAN(a) || IS_NAN(b)) return a + b;                                         \
    const bool b_int = floor(b) == b;                                                 \
    const bool b_odd = b_int && abs(b) < ODD_LIMIT && mod(b, T(2)) == T(1);           \
    if (abs(b) == INF) {                                                              \
      if (abs(a) == T(1)) return T(1);                                                \
      return (abs(a) > T(1)) == (b > T(0)) ? INF : T(0);                              \
    }                                                                                 \
    if (a == T(0) || abs(a) == INF) {                                                 \
      /* +-0 and +-inf: the magnitude from b's sign, the sign from a's for odd b */   \
      const T mag = (a == T(0)) == (b > T(0)) ? T(0) : INF;                           \
      return b_odd && (a < T(0) || T(1) / a < T(0)) ? -mag : mag;                     \
    }                                                                                 \
    if (a > T(0)) return POW_POS(a, b);                                               \
    if (!b_int) return NAN_VALUE;                                                     \
    const T r = POW_POS(-a, b);                                                       \
    return b_odd ? -r : r;                                                            \
  }

DEFINE_POW_C(float, pow_c, pow, is_nan, inf_f32(), nan_f32(), 16777216.0)

// log, also for subnormal inputs (some drivers mishandle them): scaled into the normal range.
float log_c(float x) {
  if (x > 0.0 && x < 1.17549435e-38) return log(x * 16777216.0) - 16.635532333438687;
  return log(x);
}

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
