// Float math with the CPU backend's semantics (the twin of include/math.glsl and math64.glsl),
// for float and double alike. CUDA's own functions (exp, log, sin, tanh, erf, expm1, pow, sqrt
// and their float overloads) are accurate to a few ulp without --use_fast_math, handle NaN, inf
// and subnormals, and the double ones are accurate too, so the GLSL workarounds and series are
// not needed here. Kernels are compiled without flush-to-zero (src/cuda/cu_compiler.cpp says
// why), so comparisons see subnormals exactly.
#pragma once

#include "include/dtype.cuh"

// Special values and the sign bit of float and double, for code written once for both.
template <typename T>
struct FloatBits;
template <>
struct FloatBits<float> {
  static WICK_DEV float nan() { return __uint_as_float(0x7fc00000u); }
  static WICK_DEV float inf() { return __uint_as_float(0x7f800000u); }
  static WICK_DEV bool sign_bit(float v) { return (__float_as_uint(v) >> 31) != 0u; }
  static WICK_DEV bool signaling(float v) {
    const uint32_t u = __float_as_uint(v);
    return (u & 0x7fc00000u) == 0x7f800000u && (u & 0x3fffffu) != 0u;
  }
  static WICK_DEV float all_even() { return 16777216.0f; }  // 2^24: every float from here is even
};
template <>
struct FloatBits<double> {
  static WICK_DEV double nan() { return __longlong_as_double(0x7ff8000000000000ll); }
  static WICK_DEV double inf() { return __longlong_as_double(0x7ff0000000000000ll); }
  static WICK_DEV bool sign_bit(double v) { return __double_as_longlong(v) < 0; }
  static WICK_DEV bool signaling(double v) {
    const uint64_t u = static_cast<uint64_t>(__double_as_longlong(v));
    return (u & 0x7ff8000000000000ull) == 0x7ff0000000000000ull && (u & 0x7ffffffffffffull) != 0u;
  }
  static WICK_DEV double all_even() { return 9007199254740992.0; }  // 2^53
};

// Sign flips on the bits: PTX leaves the NaN that neg/abs return unspecified, the CPU keeps it.
WICK_DEV float neg_c(float v) {
  return __uint_as_float(__float_as_uint(v) ^ 0x80000000u);
}
WICK_DEV double neg_c(double v) {
  return __longlong_as_double(__double_as_longlong(v) ^
                              static_cast<long long>(0x8000000000000000ull));
}
WICK_DEV float abs_c(float v) {
  return __uint_as_float(__float_as_uint(v) & 0x7fffffffu);
}
WICK_DEV double abs_c(double v) {
  return __longlong_as_double(__double_as_longlong(v) & 0x7fffffffffffffffll);
}

// As the CPU writes them: -0 and NaN pass through relu, sign and clamp.
template <typename T>
WICK_DEV T relu_c(T v) {
  return v < T(0) ? T(0) : v;
}
template <typename T>
WICK_DEV T sign_c(T v) {
  return v > T(0) ? T(1) : v < T(0) ? T(-1) : v;
}
template <typename T>
WICK_DEV T clamp_c(T v, T lo, T hi) {
  const T above_lo = v < lo ? lo : v;
  return above_lo > hi ? hi : above_lo;
}
// maximum / minimum propagating NaN (as PyTorch and the CPU do); on ties the second operand.
template <typename T>
WICK_DEV T maximum_c(T a, T b) {
  return a > b || is_nan(a) ? a : b;
}
template <typename T>
WICK_DEV T minimum_c(T a, T b) {
  return a < b || is_nan(a) ? a : b;
}

// Rounds half away from zero (x - trunc(x) is exact; -0 and the sign of small values stay).
template <typename T>
WICK_DEV T round_away(T x) {
  const T t = trunc(x);
  return abs_c(x - t) >= T(0.5) ? t + (x < T(0) ? T(-1) : T(1)) : t;
}

// 1 / (1 + exp(-x)), accurate on both tails (exp never overflows).
template <typename T>
WICK_DEV T sigmoid_c(T x) {
  const T e = exp(-abs_c(x));
  const T s = T(1) / (T(1) + e);
  return x >= T(0) ? s : e * s;
}
// x sigmoid(x): unary.cu's silu, and qact.cu's swiglu prologue.
template <typename T>
WICK_DEV T silu_c(T x) {
  return x * sigmoid_c(x);
}

// a * b as hi + lo exactly, and a + b likewise. The rounded operations are explicit (__dmul_rn,
// __dadd_rn): PTX's plain mul/add may be fused into an fma by ptxas under --fmad=true, which broke
// these error-free transformations on the H200 (gelu's f64 tail 290 ulp off).
struct DoublePair {
  double hi, lo;
};
WICK_DEV DoublePair two_prod(double a, double b) {
  const double p = __dmul_rn(a, b);
  return {p, fma(a, b, -p)};
}
WICK_DEV DoublePair two_sum(double a, double b) {
  const double s = __dadd_rn(a, b), bb = __dsub_rn(s, a);
  return {s, __dadd_rn(__dsub_rn(a, __dsub_rn(s, bb)), __dsub_rn(b, bb))};
}

// exp(hi + lo) for |lo| <= ulp(hi), hi <= 0: 2^n exp(r) with hi + lo = n ln 2 + r reduced here
// in two parts (the H200's exp of large arguments was measured ~150 ulp off: 249 ulp in gelu's
// tail), so the library's exp only sees |r| <= ln 2 / 2.
WICK_DEV double exp_parts(double hi, double lo) {
  if (hi < -746.0) return 0.0;  // exp underflows (-inf too)
  const double ln2_hi = 0.69314718055994529, ln2_lo = 2.3190468138462996e-17;
  const double n = rint(hi * 1.4426950408889634);
  const double r = fma(-n, ln2_lo, fma(-n, ln2_hi, hi)) + lo;
  return scalbn(exp(r), static_cast<int>(fmax(n, -2000.0)));
}

// sigmoid(hi + lo) for |lo| <= ulp(hi): from e = exp(-|x|), neither tail overflows or cancels.
WICK_DEV double sigmoid_parts(double hi, double lo) {
  const double e = exp_parts(-fabs(hi), hi < 0.0 ? lo : -lo);
  const double s = 1.0 / (1.0 + e);
  return hi >= 0.0 ? s : e * s;
}

// gelu's tanh form 0.5 x (1 + tanh u) = x sigmoid(2u), 2u = x (A + B x^2), A = 2 sqrt(2/pi),
// B = 0.044715 A. In the negative tail sigmoid(2u) ~ exp(2u), whose relative error is the
// absolute error of 2u (up to ~90 in f32, ~1400 in f64): floats compute in double, doubles
// carry 2u in two parts (the constants' parts as in src/cpu/float_math.h).
WICK_DEV double gelu_tanh(double x) {
  const double a_hi = 1.5957691216057308, a_lo = -9.9693088091109202e-17;
  const double b_hi = 0.071354816272600249, b_lo = -6.175149918155315e-19;
  const double xc = fmin(fmax(x, -40.0), 40.0);  // sigmoid(2u) is 0 or 1 beyond
  const DoublePair x2 = two_prod(xc, xc);
  const DoublePair bx2 = two_prod(b_hi, x2.hi);
  const DoublePair c = two_sum(a_hi, bx2.hi);
  const double c_lo = c.lo + (a_lo + (bx2.lo + (b_hi * x2.lo + b_lo * x2.hi)));
  const DoublePair t = two_prod(xc, c.hi);
  return x * sigmoid_parts(t.hi, t.lo + xc * c_lo);  // NaN x stays NaN through the product
}
WICK_DEV float gelu_tanh(float x) {
  // As the CPU: the argument clamped to +-20 (sigmoid(2u) is 0 or 1 beyond), and -inf * 0 = NaN
  // (sigmoid(2u(-20)) is 0 in float; in double it is not, so infinities are decided here).
  if (isinf(x)) return x > 0.0f ? x : x * 0.0f;
  const double d = x, dc = fmin(fmax(d, -20.0), 20.0);
  return static_cast<float>(
      d * sigmoid_parts(dc * (1.5957691216057308 + 0.071354816272600249 * dc * dc), 0.0));
}

// 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(z), z = -x / sqrt 2 (no cancellation for x < 0). erfc
// of z rounded would be off by up to 2 z^2 ulp in the tail: floats compute in double, doubles
// correct erfc(z.hi) to first order in z's low part (erfc' = -2/sqrt(pi) e^(-z^2)).
WICK_DEV double gelu_erf(double x) {
  const double inv_sqrt2_hi = 0.70710678118654757, inv_sqrt2_lo = -4.8336466567264567e-17;
  const double two_over_sqrt_pi = 1.1283791670955126;
  const double xc = fmin(fmax(x, -40.0), 40.0);
  const DoublePair z = two_prod(-xc, inv_sqrt2_hi);
  const double z_lo = z.lo - xc * inv_sqrt2_lo;
  return 0.5 * x * (erfc(z.hi) - z_lo * two_over_sqrt_pi * exp(-z.hi * z.hi));
}
WICK_DEV float gelu_erf(float x) {
  const double d = x;
  return static_cast<float>(0.5 * d * erfc(-d * 0.70710678118654752440));
}

// C99's pow (the CPU calls std::pow): the edge cases are decided here, so they do not rest on
// the library's, and CUDA's pow computes the rest.
template <typename T>
WICK_DEV T pow_c(T a, T b) {
  using B = FloatBits<T>;
  // 1 even for a quiet NaN operand; a signaling one gives NaN (IEEE 754, and the CPU's libm).
  if (b == T(0) || a == T(1)) return B::signaling(a) || B::signaling(b) ? a + b : T(1);
  if (is_nan(a) || is_nan(b)) return a + b;
  const bool b_int = floor(b) == b;
  const bool b_odd = b_int && abs_c(b) < B::all_even() && fmod(b, T(2)) != T(0);
  const bool a_neg = B::sign_bit(a);
  if (abs_c(b) == B::inf()) {
    if (abs_c(a) == T(1)) return T(1);
    return (abs_c(a) > T(1)) == (b > T(0)) ? B::inf() : T(0);
  }
  if (a == T(0) || abs_c(a) == B::inf()) {
    // +-0 and +-inf: the magnitude from b's sign, the sign from a's for odd b.
    const T mag = (a == T(0)) == (b > T(0)) ? T(0) : B::inf();
    return b_odd && a_neg ? -mag : mag;
  }
  if (!a_neg) return pow(a, b);
  if (!b_int) return B::nan();
  const T r = pow(-a, b);
  return b_odd ? -r : r;
}
