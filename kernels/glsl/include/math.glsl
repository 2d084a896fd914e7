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

// pow with C's rules for negative bases (integer exponents only) and zeros.
float pow_c(float a, float b) {
  if (b == 0.0) return 1.0;
  if (a == 0.0) return b > 0.0 ? 0.0 : inf_f32();
  if (a > 0.0) return pow(a, b);
  if (floor(b) != b) return nan_f32();
  const float r = pow(-a, b);
  const bool odd = abs(b) < 16777216.0 && (int(abs(b)) & 1) == 1;
  return odd ? -r : r;
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
