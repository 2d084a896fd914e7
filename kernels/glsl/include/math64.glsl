// Double-precision exp, log, sin, cos, tanh, erf, erfc, sigmoid, gelu and pow (GLSL has them for
// float only), each within a few ulp of the correctly rounded result over all doubles, small
// arguments and tails included: range reduction plus Taylor / atanh / continued-fraction
// series, double-doubles where a later exponential or cancellation would expose rounding
// (the same constructions as include/math.glsl's f32 versions). Needs WICK_F64 and
// include/math.glsl (DEFINE_POW_C, the 2/pi table).

double inf64() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
double nan64() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
bool is_inf64(double v) {
  const uvec2 w = unpackDouble2x32(v);
  return (w.y & 0x7fffffffu) == 0x7ff00000u && w.x == 0u;
}
bool is_zero64(double v) { return v == 0.0LF; }
bool sign_bit64(double v) { return (unpackDouble2x32(v).y & 0x80000000u) != 0u; }

// ---- double-doubles (see two_sum / two_prod in include/math.glsl; 27-bit halves here, for
// |a|, |b| < 2^995) ------------------------------------------------------------------------------
dvec2 two_sum(double a, double b) {
  precise double s = a + b;
  precise double bb = s - a;
  precise double e = (a - (s - bb)) + (b - bb);
  return dvec2(s, e);
}
dvec2 split_halves(double a) {
  precise double c = 134217729.0LF * a;  // 2^27 + 1
  precise double hi = c - (c - a);
  precise double lo = a - hi;
  return dvec2(hi, lo);
}
dvec2 two_prod(double a, double b) {
  precise double p = a * b;
  const dvec2 x = split_halves(a), y = split_halves(b);
  precise double e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
  return dvec2(p, e);
}

// ---- exp ----------------------------------------------------------------------------------------
// ln 2 in two parts (fdlibm's split): k * kLn2Hi is exact for |k| < 2^20.
const double kLn2Hi = 6.93147180369123816490e-01LF, kLn2Lo = 1.90821492927058770002e-10LF;

// 2^k * p without ldexp's undefined range (|k| > 1022): in two steps.
double scale2(double p, int k) { return ldexp(ldexp(p, k / 2), k - k / 2); }

// exp(hi + lo) for a double-double argument (lo may be 0).
double exp64_parts(double hi, double lo) {
  if (is_nan(hi)) return hi;
  if (hi > 709.782712893384LF) return inf64();
  if (hi < -745.1332191019412LF) return 0.0LF;
  const double k = round(hi * 1.4426950408889634LF);
  const double r = ((hi - k * kLn2Hi) - k * kLn2Lo) + lo;  // |r| <= ln2 / 2
  double p = 1.0LF;                                        // Taylor: 1 + r (1 + r/2 (1 + r/3 (...)))
  for (int n = 16; n >= 1; n--) p = 1.0LF + r * p / double(n);
  return scale2(p, int(k));
}
double exp64(double x) { return exp64_parts(x, 0.0LF); }

// exp(x) - 1 without cancellation near 0.
double expm1_64(double x) {
  if (abs(x) >= 0.5LF) return exp64(x) - 1.0LF;
  double p = 1.0LF;  // x (1 + x/2 (1 + x/3 (...)))
  for (int n = 20; n >= 2; n--) p = 1.0LF + x * p / double(n);
  return x * p;
}

double tanh64(double x) {
  if (is_nan(x)) return x;
  const double a = abs(x);
  if (a > 22.0LF) return sign(x);
  const double e = expm1_64(2.0LF * a);
  return sign(x) * (e / (e + 2.0LF));
}

// 1 / (1 + exp(-x)) for x = hi + lo: see sigmoid_parts in include/math.glsl.
double sigmoid64_parts(double hi, double lo) {
  if (is_nan(hi)) return hi;
  const bool neg = sign_bit64(hi);
  const double e = neg ? exp64_parts(hi, lo) : exp64_parts(-hi, -lo);
  const double s = 1.0LF / (1.0LF + e);
  return neg ? e * s : s;
}
double sigmoid64(double x) { return sigmoid64_parts(x, 0.0LF); }

// x sigmoid(2u), 2u = x (A + B x^2) as a double-double: see gelu_tanh in include/math.glsl.
const double kGeluAHi = 1.5957691216057308LF, kGeluALo = -9.9693088091109202e-17LF;
const double kGeluBHi = 0.071354816272600249LF, kGeluBLo = -6.175149918155315e-19LF;
double gelu_tanh64(double x) {
  const double xc = clamp(x, -40.0LF, 40.0LF);  // sigmoid(2u) is 0 or 1 beyond
  const dvec2 x2 = two_prod(xc, xc);
  dvec2 bx2 = two_prod(kGeluBHi, x2.x);
  bx2.y += kGeluBHi * x2.y + kGeluBLo * x2.x;
  dvec2 c = two_sum(kGeluAHi, bx2.x);
  c.y += kGeluALo + bx2.y;
  dvec2 t = two_prod(xc, c.x);
  t.y += xc * c.y;
  return x * sigmoid64_parts(t.x, t.y);
}

// ---- log and pow --------------------------------------------------------------------------------
// x > 0 finite = 2^e m with m in [sqrt(1/2), sqrt(2)); returns e.
double log64_split(double x, out double m) {
  double e_adj = 0.0LF;
  if (x < 2.2250738585072014e-308LF) {  // subnormal: scaled up exactly first
    x *= 18014398509481984.0LF;          // 2^54
    e_adj = -54.0LF;
  }
  int e;
  m = frexp(x, e);  // [0.5, 1)
  if (m < 0.7071067811865476LF) {
    m *= 2.0LF;
    e -= 1;
  }
  return double(e) + e_adj;
}
// log x (x > 0 finite) as a double-double: log m = 2 atanh(s) = 2s + 2s s^2 T(s^2) with
// s = (m - 1) / (m + 1) in two parts (|s| <= 0.1716, T to s^26).
dvec2 log64_parts(double x) {
  double m;
  const double e = log64_split(x, m);
  const double f = m - 1.0LF;  // exact
  const dvec2 u = two_sum(m, 1.0LF);
  const double s = f / u.x;
  const dvec2 su = two_prod(s, u.x);
  const double s_lo = ((f - su.x) - su.y - s * u.y) / u.x;
  const double s2 = s * s;
  double t = 0.0LF;
  for (int k = 27; k >= 3; k -= 2) t = t * s2 + 1.0LF / double(k);
  const dvec2 hi = two_sum(e * kLn2Hi, 2.0LF * s);
  return dvec2(hi.x, hi.y + (e * kLn2Lo + (2.0LF * s_lo + (2.0LF * s) * (s2 * t))));
}
double log64(double x) {
  if (is_nan(x) || x < 0.0LF) return nan64();
  if (x == 0.0LF) return -inf64();
  if (is_inf64(x)) return x;
  const dvec2 l = log64_parts(x);
  return l.x + l.y;
}

// a^b for a > 0, b finite: exp(b log a) with b log a as a double-double (see pow_pos).
double pow_pos64(double a, double b) {
  const dvec2 l = log64_parts(a);
  const double y = b * l.x;
  if (abs(y) > 1500.0LF) return y > 0.0LF ? inf64() : 0.0LF;  // beyond f64's range either way
  const dvec2 p = two_prod(b, l.x);
  return exp64_parts(p.x, p.y + b * l.y);
}
DEFINE_POW_C(double, pow64, pow_pos64, is_nan, is_zero64, sign_bit64, inf64(), nan64(),
             9007199254740992.0LF)

// ---- sin and cos --------------------------------------------------------------------------------
const double kPio2Hi = 1.5707963267948966LF, kPio2Lo = 6.123233995736766e-17LF;

// x - q pi/2 as a double-double r (|r| <= pi/4) for x >= 0 finite; q mod 4 in `q`
// (reduce_half_pi_bits in include/math.glsl, with 6 words of 2/pi).
dvec2 reduce_half_pi64(double x, out uint q) {
  q = 0u;
  if (x < 0.78539816339744828LF) return dvec2(x, 0.0LF);
  const uvec2 b = unpackDouble2x32(x);
  uvec2 f;
  int fe;
  bool neg;
  q = reduce_half_pi_bits((b.y & 0xfffffu) | 0x100000u, b.x, int(b.y >> 20) - 1075, 6, f, fe,
                          neg);
  // f = (f.x 2^32 + f.y) 2^-fe: its top 53 bits exactly, the next 11 in f_lo.
  double f_hi = ldexp(double(f.x) * 4294967296.0LF + double(f.y & 0xfffff800u), -fe);
  double f_lo = ldexp(double(f.y & 0x7ffu), -fe);
  if (neg) {
    f_hi = -f_hi;
    f_lo = -f_lo;
  }
  dvec2 r = two_prod(f_hi, kPio2Hi);
  r.y += f_hi * kPio2Lo + f_lo * kPio2Hi;
  return two_sum(r.x, r.y);
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
double sin_cos64(double x, bool cos_of) {
  if (is_nan(x) || is_inf64(x)) return nan64();
  uint q;
  const dvec2 r = reduce_half_pi64(abs(x), q);
  if (cos_of) q += 1u;  // cos x = sin(|x| + pi/2)
  const double v = (q & 1u) == 0u ? sin_poly(r.x) + r.y * (1.0LF - 0.5LF * r.x * r.x)
                                  : cos_poly(r.x) - r.y * r.x;
  const bool negate = ((q & 2u) != 0u) != (!cos_of && sign_bit64(x));
  return negate ? -v : v;
}
double sin64(double x) { return sin_cos64(x, false); }
double cos64(double x) { return sin_cos64(x, true); }

// ---- erf and erfc -------------------------------------------------------------------------------
const double kTwoOverSqrtPi = 1.1283791670955126LF;

// erf a for 0 <= a < 1/2 by its Maclaurin series 2/sqrt(pi) a sum (-a^2)^n / (n! (2n + 1)), in
// Horner form from the smallest term (|a^2| <= 1/4: the alternating sum cancels little).
double erf64_series(double a) {
  const double u = -a * a;
  double factorial = 6402373705728000.0LF;  // 18!, exact; n! for each n below, by exact division
  double p = 0.0LF;
  for (int n = 18; n >= 0; n--) {
    p = p * u + 1.0LF / (factorial * double(2 * n + 1));
    factorial /= double(max(n, 1));
  }
  return kTwoOverSqrtPi * (a * p);
}

// erfc and 2/sqrt(pi) e^(-c^2) at the centres c = 0.625 + 0.25 j of the Taylor series that
// cover [1/2, 2) (erfc(c) in two parts; scripts/gen_math_constants.py).
const dvec3 kErfcCentres[6] = dvec3[6](
    dvec3(0.376759117811582LF, 2.7016816836135297e-17LF, 0.76349953576060492LF),
    dvec3(0.21592493894014034LF, 4.2898741732745691e-18LF, 0.5247450452901482LF),
    dvec3(0.11161176829829224LF, -2.291347870416768e-18LF, 0.31827395850076928LF),
    dvec3(0.051829927217909674LF, 3.1608724726153371e-18LF, 0.17035977368751559LF),
    dvec3(0.021556266760016336LF, -3.1872158084248303e-19LF, 0.080472259022511164LF),
    dvec3(0.0080099423298800303LF, -6.3647995397700611e-19LF, 0.033545828424216072LF));

// erfc(a) for a = hi + lo >= 0 (lo tiny beside hi) with a^2 = sq.x + sq.y:
//   a < 1/2:     1 - erf(a) (erf a <= 0.53: no cancellation);
//   1/2 <= a < 2: Taylor at the nearest centre c, h = a - c (|h| <= 1/8), with the derivatives
//                 erfc^(n)(c) = -2/sqrt(pi) e^(-c^2) (-1)^(n-1) H_(n-1)(c) (Hermite polynomials);
//   a >= 2:       e^(-a^2) / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) / (a + ...)))), the
//                 continued fraction, with e^(-a^2) from the exact square.
double erfc64_nonneg(double hi, double lo, dvec2 sq) {
  if (hi < 0.5LF) return 1.0LF - (erf64_series(hi) + lo * kTwoOverSqrtPi * (1.0LF - hi * hi));
  if (hi < 2.0LF) {
    const int j = min(int((hi - 0.5LF) * 4.0LF), 5);
    const dvec3 centre = kErfcCentres[j];
    const double c = 0.625LF + 0.25LF * double(j);
    const double h = (hi - c) + lo;  // hi - c exact
    // sum over n >= 1 of (-1)^(n-1) H_(n-1)(c) h^n / n!
    double h_prev = 0.0LF, h_cur = 1.0LF;  // H_(n-2), H_(n-1)
    double g = h, sum = 0.0LF, sign_n = 1.0LF;
    for (int n = 1; n <= 20; n++) {
      sum += sign_n * h_cur * g;
      const double h_next = 2.0LF * c * h_cur - 2.0LF * double(n - 1) * h_prev;
      h_prev = h_cur;
      h_cur = h_next;
      g *= h / double(n + 1);
      sign_n = -sign_n;
    }
    return centre.x + (centre.y - centre.z * sum);
  }
  if (hi > 27.3LF) return 0.0LF;  // below f64's subnormals
  double t = 0.0LF;
  for (int k = hi < 3.0LF ? 64 : 32; k >= 1; k--) t = (0.5LF * double(k)) / (hi + t);
  return exp64_parts(-sq.x, -sq.y) * 0.56418958354775628LF / (hi + t);  // 1 / sqrt(pi)
}
double erf64(double x) {
  if (is_nan(x)) return x;
  const double a = abs(x);
  const double r = a < 0.5LF ? erf64_series(a) : 1.0LF - erfc64_nonneg(a, 0.0LF, two_prod(a, a));
  return sign_bit64(x) ? -r : r;
}
// 0.5 x erfc(-x / sqrt 2) with the argument as a double-double: see gelu_erf in
// include/math.glsl.
const double kInvSqrt2Hi = 0.70710678118654757LF, kInvSqrt2Lo = -4.8336466567264567e-17LF;
double gelu_erf64(double x) {
  const double xc = clamp(x, -40.0LF, 40.0LF);  // erfc is 0 or 2 beyond
  dvec2 z = two_prod(-xc, kInvSqrt2Hi);
  z.y -= xc * kInvSqrt2Lo;
  const dvec2 sq = 0.5LF * two_prod(xc, xc);
  const double e = sign_bit64(z.x) ? 2.0LF - erfc64_nonneg(-z.x, -z.y, sq)
                                   : erfc64_nonneg(z.x, z.y, sq);
  return 0.5LF * x * e;
}
