// Double-precision exp, log, sin, cos, tanh, erf and pow (GLSL has them for float only), accurate
// to a few ulp over the ranges wick's ops use: range reduction plus Taylor / atanh series, with
// Cody-Waite splits of ln 2 and pi/2 (the split constants are fdlibm's). Needs WICK_F64 and
// include/math.glsl (DEFINE_POW_C).

double inf64() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
double nan64() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
bool is_inf64(double v) {
  const uvec2 w = unpackDouble2x32(v);
  return (w.y & 0x7fffffffu) == 0x7ff00000u && w.x == 0u;
}

const double kLn2Hi = 6.93147180369123816490e-01LF, kLn2Lo = 1.90821492927058770002e-10LF;

// 2^k * p without ldexp's undefined range (|k| > 1022): in two steps.
double scale2(double p, int k) { return ldexp(ldexp(p, k / 2), k - k / 2); }

double exp64(double x) {
  if (is_nan(x)) return x;
  if (x > 709.782712893384LF) return inf64();
  if (x < -745.1332191019412LF) return 0.0LF;
  const double k = round(x * 1.4426950408889634LF);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= ln2 / 2
  double p = 1.0LF;                                // Taylor: 1 + r (1 + r/2 (1 + r/3 (...)))
  for (int n = 16; n >= 1; n--) p = 1.0LF + r * p / double(n);
  return scale2(p, int(k));
}

// exp(x) - 1 without cancellation near 0.
double expm1_64(double x) {
  if (abs(x) >= 0.5LF) return exp64(x) - 1.0LF;
  double p = 1.0LF;  // x (1 + x/2 (1 + x/3 (...)))
  for (int n = 20; n >= 2; n--) p = 1.0LF + x * p / double(n);
  return x * p;
}

double log64(double x) {
  if (is_nan(x) || x < 0.0LF) return nan64();
  if (x == 0.0LF) return -inf64();
  if (is_inf64(x)) return x;
  int e;
  double m = frexp(x, e);  // [0.5, 1)
  if (m < 0.7071067811865476LF) {
    m *= 2.0LF;
    e -= 1;
  }
  // log m = 2 atanh(s), s = (m - 1) / (m + 1), s^2 <= 0.0295.
  const double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s;
  double p = 0.0LF;
  for (int k = 29; k >= 3; k -= 2) p = (p + 1.0LF / double(k)) * s2;
  return double(e) * kLn2Hi + (double(e) * kLn2Lo + (2.0LF * s + 2.0LF * s * p));
}

// x = q pi/2 + r with |r| <= pi/4 (two-part pi/2: exact enough for |x| up to ~1e5).
double reduce_half_pi(double x, out int quadrant) {
  const double k = round(x * 0.6366197723675814LF);
  quadrant = int(k) & 3;
  return (x - k * 1.57079632673412561417e+00LF) - k * 6.07710050650619224932e-11LF;
}
double sin_poly(double r) {  // r (1 - r^2/(2*3) (1 - r^2/(4*5) (...)))
  const double r2 = r * r;
  double p = 1.0LF;
  for (int n = 23; n >= 3; n -= 2) p = 1.0LF - r2 * p / double(n * (n - 1));
  return r * p;
}
double cos_poly(double r) {  // 1 - r^2/(1*2) (1 - r^2/(3*4) (...))
  const double r2 = r * r;
  double p = 1.0LF;
  for (int n = 22; n >= 2; n -= 2) p = 1.0LF - r2 * p / double(n * (n - 1));
  return p;
}
double sin64(double x) {
  if (is_nan(x) || is_inf64(x)) return nan64();
  int q;
  const double r = reduce_half_pi(x, q);
  return q == 0 ? sin_poly(r) : q == 1 ? cos_poly(r) : q == 2 ? -sin_poly(r) : -cos_poly(r);
}
double cos64(double x) {
  if (is_nan(x) || is_inf64(x)) return nan64();
  int q;
  const double r = reduce_half_pi(x, q);
  return q == 0 ? cos_poly(r) : q == 1 ? -sin_poly(r) : q == 2 ? -cos_poly(r) : sin_poly(r);
}

double tanh64(double x) {
  if (is_nan(x)) return x;
  const double a = abs(x);
  if (a > 22.0LF) return sign(x);
  const double e = expm1_64(2.0LF * a);
  return sign(x) * (e / (e + 2.0LF));
}

// erf through the all-positive series erf a = 2/sqrt(pi) e^(-a^2) sum 2^n a^(2n+1) / (2n+1)!!.
double erf64(double x) {
  if (is_nan(x)) return x;
  const double a = abs(x);
  if (a > 6.0LF) return sign(x);
  const double a2 = a * a;
  double term = a, sum = a;
  for (int n = 1; n < 400 && term > sum * 1e-17LF; n++) {
    term *= 2.0LF * a2 / double(2 * n + 1);
    sum += term;
  }
  return sign(x) * min(1.0LF, 1.1283791670955126LF * exp64(-a2) * sum);
}

double pow_pos64(double a, double b) { return exp64(b * log64(a)); }
bool is_zero64(double v) { return v == 0.0LF; }
bool sign_bit64(double v) { return (unpackDouble2x32(v).y & 0x80000000u) != 0u; }
DEFINE_POW_C(double, pow64, pow_pos64, is_nan, is_zero64, sign_bit64, inf64(), nan64(),
             9007199254740992.0LF)
