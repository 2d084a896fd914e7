// Elementary functions for the CPU kernels. The float versions are written without branches,
// calls or float -> int conversions so that loops over them vectorise (libm's are scalar calls).
// Both sides of every select are computed first: under -ftrapping-math (GCC's default) the
// vectoriser will not speculate float arithmetic that sits inside a conditional. They are
// always inlined: a call left in a loop (GCC's inliner gives up in big files) stops it vectorising.
// They stay within a few ulp of the correctly rounded result, NaN, inf and subnormals included.
// The double versions are libm's, except where a formula over libm would cancel or round its
// argument first (sigmoid, gelu, gelu_erf). Kernels call vmath::exp(x) etc. for either type.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cpu/isa.h"

namespace wick::cpu::vmath {

namespace detail {

constexpr float kLog2e = 1.44269504088896341f;
// ln 2 split so that n * kLn2Hi is exact for |n| < 2^8 (Cody-Waite reduction).
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.42860682030941723e-6f;
// Adding 1.5 * 2^23 to |t| < 2^22 rounds t to an integer held in the low mantissa bits.
constexpr float kRoundMagic = 12582912.0f;

// 2^n as a float for n in [-126, 127].
WICK_ALWAYS_INLINE inline float pow2i(int32_t n) {
  return std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23);
}

// x = n ln2 + r with n integral (returned twice: as float and as int) and |r| <= ln2 / 2.
struct Reduced {
  float r, n;
  int32_t ni;
};
WICK_ALWAYS_INLINE inline Reduced reduce_ln2(float x) {
  const float k = x * kLog2e + kRoundMagic;
  const float n = k - kRoundMagic;
  const auto ni =
      static_cast<int32_t>(std::bit_cast<uint32_t>(k) - std::bit_cast<uint32_t>(kRoundMagic));
  return {(x - n * kLn2Hi) - n * kLn2Lo, n, ni};
}

// exp(r) - 1 for |r| <= ln2 / 2: Taylor to r^8 (truncation < 1e-9 relative).
WICK_ALWAYS_INLINE inline float expm1_small(float r) {
  float p = 1.0f / 40320;
  p = p * r + 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  return r + (r * r) * p;
}

}  // namespace detail

// exp(hi + lo) for an argument carried in two parts (lo tiny beside hi, or 0): lo joins the
// reduced argument, where it is not lost.
WICK_ALWAYS_INLINE inline float exp_parts(float hi, float lo) {
  using namespace detail;
  // Beyond [-104, 89] the result is 0 or inf; clamping keeps n in range (NaN passes through).
  const float xc = std::min(std::max(hi, -104.0f), 89.0f);
  const Reduced red = reduce_ln2(xc);
  const float p = 1.0f + expm1_small(red.r + lo);
  // Scale by 2^n in two steps so that results in the subnormal range round only once.
  const int32_t n1 = red.ni >> 1;
  return p * pow2i(n1) * pow2i(red.ni - n1);
}
WICK_ALWAYS_INLINE inline double exp_parts(double hi, double lo) {
  return std::exp(hi) * (1 + lo);  // exp(lo) to first order: |lo| <= 2^-53 |hi|
}
WICK_ALWAYS_INLINE inline float exp(float x) {
  return exp_parts(x, 0.0f);
}
WICK_ALWAYS_INLINE inline double exp(double x) {
  return std::exp(x);
}

// a + b and a * b exactly, as hi + lo (Knuth's sum; Dekker's product with halves of 12 / 27
// bits, for |a|, |b| below 2^115 / 2^995). Exact because the build does not contract a * b + c
// (-ffp-contract=off).
template <typename C>
struct Pair {
  C hi, lo;
};
template <typename C>
WICK_ALWAYS_INLINE inline Pair<C> two_sum(C a, C b) {
  const C s = a + b, bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
template <typename C>
WICK_ALWAYS_INLINE inline Pair<C> split_halves(C a) {
  const C c = (std::is_same_v<C, float> ? C(4097) : C(134217729)) * a;
  const C hi = c - (c - a);
  return {hi, a - hi};
}
template <typename C>
WICK_ALWAYS_INLINE inline Pair<C> two_prod(C a, C b) {
  const C p = a * b;
  const Pair<C> x = split_halves(a), y = split_halves(b);
  return {p, ((x.hi * y.hi - p) + x.hi * y.lo + x.lo * y.hi) + x.lo * y.lo};
}

// exp(x) - 1 for x <= 0 (or NaN), without cancellation near 0.
WICK_ALWAYS_INLINE inline float expm1_nonpositive(float x) {
  using namespace detail;
  const float xc = std::max(x, -88.0f);  // expm1 is -1 in float well before
  const Reduced red = reduce_ln2(xc);
  const float s = pow2i(std::max(red.ni, -126));
  // 2^n (1 + q) - 1 = 2^n q + (2^n - 1); the second term is exact for the n that matter.
  return s * expm1_small(red.r) + (s - 1.0f);
}
WICK_ALWAYS_INLINE inline double expm1_nonpositive(double x) {
  return std::expm1(x);
}

WICK_ALWAYS_INLINE inline float tanh(float x) {
  // tanh|x| = -e / (e + 2) with e = expm1(-2|x|) in (-1, 0]: no overflow, no cancellation.
  const float e = expm1_nonpositive(-2.0f * std::abs(x));
  return std::copysign(-e / (e + 2.0f), x);
}
WICK_ALWAYS_INLINE inline double tanh(double x) {
  return std::tanh(x);
}

// 1 / (1 + exp(-x)) for x = hi + lo, from e = exp(-|x|): 1 / (1 + e) for x >= 0, e / (1 + e)
// below; neither tail overflows or cancels.
template <typename C>
WICK_ALWAYS_INLINE inline C sigmoid_parts(C hi, C lo) {
  const C e = exp_parts(-std::abs(hi), hi < 0 ? lo : -lo);
  const C s = C(1) / (C(1) + e);
  const C es = e * s;
  return hi >= 0 ? s : es;
}
template <typename C>
WICK_ALWAYS_INLINE inline C sigmoid(C x) {
  return sigmoid_parts(x, C(0));
}

// gelu's tanh form 0.5 x (1 + tanh u) = x sigmoid(2u), 2u = x (A + B x^2), A = 2 sqrt(2/pi),
// B = 0.044715 A. In the negative tail sigmoid(2u) ~ exp(2u), whose relative error is the
// absolute error of 2u (up to ~90 in f32, ~1400 in f64): 2u is carried in two parts (the
// constants' parts: scripts/gen_math_constants.py).
template <typename C>
WICK_ALWAYS_INLINE inline C gelu_tanh(C x) {
  constexpr bool kF32 = std::is_same_v<C, float>;
  constexpr C kAHi = kF32 ? C(1.59576917f) : C(1.5957691216057308);
  constexpr C kALo = kF32 ? C(-4.53406805e-08f) : C(-9.9693088091109202e-17);
  constexpr C kBHi = kF32 ? C(0.0713548139f) : C(0.071354816272600249);
  constexpr C kBLo = kF32 ? C(2.39883247e-09f) : C(-6.175149918155315e-19);
  constexpr C kLimit = kF32 ? C(20) : C(40);            // sigmoid(2u) is 0 or 1 beyond
  const C xc = std::min(std::max(x, -kLimit), kLimit);  // NaN passes through
  const Pair<C> x2 = two_prod(xc, xc);
  const Pair<C> bx2 = two_prod(kBHi, x2.hi);
  const Pair<C> c = two_sum(kAHi, bx2.hi);
  const C c_lo = c.lo + (kALo + (bx2.lo + (kBHi * x2.lo + kBLo * x2.hi)));
  const Pair<C> t = two_prod(xc, c.hi);
  return x * sigmoid_parts(t.hi, t.lo + xc * c_lo);
}

WICK_ALWAYS_INLINE inline float log(float x) {
  using namespace detail;
  // x = 2^e m with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m - 1) / (m + 1).
  const bool subnormal = x < 0x1p-126f;  // scaled up first (negatives and 0 are replaced below)
  const float scaled = x * 0x1p23f;
  const uint32_t u = std::bit_cast<uint32_t>(subnormal ? scaled : x);
  const uint32_t mant = u & 0x7fffffu;
  const bool above_sqrt2 = mant > 0x3504f3u;  // the mantissa of sqrt(2)
  const int32_t e =
      static_cast<int32_t>(u >> 23) - 127 - (subnormal ? 23 : 0) + (above_sqrt2 ? 1 : 0);
  const float m = std::bit_cast<float>(mant | (above_sqrt2 ? 0x3f000000u : 0x3f800000u));
  const float s = (m - 1.0f) / (m + 1.0f);  // |s| <= 0.1716
  const float s2 = s * s;
  float p = 1.0f / 11;
  p = p * s2 + 1.0f / 9;
  p = p * s2 + 1.0f / 7;
  p = p * s2 + 1.0f / 5;
  p = p * s2 + 1.0f / 3;
  const float log_m = 2.0f * s + (2.0f * s) * (s2 * p);
  const auto ef = static_cast<float>(e);
  float y = ef * kLn2Hi + (ef * kLn2Lo + log_m);
  y = x == 0.0f ? -INFINITY : y;
  y = x < 0.0f ? NAN : y;
  return (x == INFINITY) | (x != x) ? x : y;
}
WICK_ALWAYS_INLINE inline double log(double x) {
  return std::log(x);
}

namespace detail {

// Below kErfSplit, erf(a) = a P(a^2); above, erfc(a) = exp(-a^2) w Q(w), w = 1 / (1 + a/2).
// P and Q are least-squares fits on Chebyshev nodes against mpmath (scripts/fit_erf.py);
// erf is within 3 ulp and erfc within 5 ulp over all floats.
constexpr float kErfSplit = 0.75f;

WICK_ALWAYS_INLINE inline float erf_poly(float u) {  // P(u), u = a^2
  float p = 9.4729985e-05f;
  p = p * u - 0.000835735642f;
  p = p * u + 0.00521681644f;
  p = p * u - 0.0268647801f;
  p = p * u + 0.112837784f;
  p = p * u - 0.376126379f;
  return p * u + 1.12837923f;
}
WICK_ALWAYS_INLINE inline float erf_below_split(float a) {
  return a * erf_poly(a * a);
}

// erfc(a) for ERF_SPLIT <= a <= 14.2 with a^2 = sq.hi + sq.lo exactly: exp(-a^2) of a rounded
// square would be off by up to a^2 ulp (16 at a = 4).
WICK_ALWAYS_INLINE inline float erfc_above_split(float a, Pair<float> sq) {
  const float w = 1.0f / (1.0f + 0.5f * a);
  float q = 0.062642552f;
  q = q * w - 0.328546166f;
  q = q * w + 0.689795732f;
  q = q * w - 0.687822044f;
  q = q * w + 0.305222601f;
  q = q * w - 0.142864719f;
  q = q * w + 0.11996229f;
  q = q * w + 0.169907555f;
  q = q * w + 0.247563928f;
  q = q * w + 0.282046199f;
  q = q * w + 0.282096207f;
  return exp_parts(-sq.hi, -sq.lo) * (w * q);
}
WICK_ALWAYS_INLINE inline float erfc_above_split(float a) {
  const float ac = std::min(a, 10.5f);  // erfc is 0 in float beyond (NaN passes through)
  return erfc_above_split(ac, two_prod(ac, ac));
}

}  // namespace detail

WICK_ALWAYS_INLINE inline float erf(float x) {
  using namespace detail;
  const float a = std::abs(x);
  const float below = erf_below_split(a);
  const float above = 1.0f - erfc_above_split(a);
  return std::copysign(a < kErfSplit ? below : above, x);
}
WICK_ALWAYS_INLINE inline double erf(double x) {
  return std::erf(x);
}

WICK_ALWAYS_INLINE inline float erfc(float x) {
  using namespace detail;
  const float a = std::abs(x);
  const float e = erf_below_split(a), c = erfc_above_split(a);
  const float at_a = a < kErfSplit ? 1.0f - e : c;               // erfc(|x|)
  const float at_minus_a = a < kErfSplit ? 1.0f + e : 2.0f - c;  // erfc(-|x|)
  return x < 0 ? at_minus_a : at_a;
}
WICK_ALWAYS_INLINE inline double erfc(double x) {
  return std::erfc(x);
}

// 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(z), z = -x / sqrt 2 (no cancellation for x < 0), with z
// in two parts: erfc of z rounded would be off by up to 2 z^2 ulp in the tail (100 at x = -10).
// f32: z's low part enters a P(a^2) and the exponent of the tail (z^2 = x^2 / 2 exactly);
// f64: libm's erfc at z's high part, corrected to first order by erfc' = -2/sqrt(pi) e^(-z^2).
WICK_ALWAYS_INLINE inline float gelu_erf(float x) {
  using namespace detail;
  constexpr float kInvSqrt2Hi = 0.707106769f, kInvSqrt2Lo = 1.21016175e-08f;
  const float xc = std::min(std::max(x, -20.0f), 20.0f);  // erfc is 0 or 2 beyond; NaN passes
  const Pair<float> z = two_prod(-xc, kInvSqrt2Hi);
  const float z_lo = z.lo - xc * kInvSqrt2Lo;
  const Pair<float> x2 = two_prod(xc, xc);
  const float p = erf_poly(z.hi * z.hi);
  const float below = 1.0f - (z.hi * p + z_lo * p);
  const float c = erfc_above_split(std::abs(z.hi), {0.5f * x2.hi, 0.5f * x2.lo});
  const float above = z.hi < 0 ? 2.0f - c : c;
  return 0.5f * x * (std::abs(z.hi) < kErfSplit ? below : above);
}
WICK_ALWAYS_INLINE inline double gelu_erf(double x) {
  constexpr double kInvSqrt2Hi = 0.70710678118654757, kInvSqrt2Lo = -4.8336466567264567e-17;
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;
  const double xc = std::min(std::max(x, -40.0), 40.0);
  const Pair<double> z = two_prod(-xc, kInvSqrt2Hi);
  const double z_lo = z.lo - xc * kInvSqrt2Lo;
  return 0.5 * x * (std::erfc(z.hi) - z_lo * kTwoOverSqrtPi * std::exp(-z.hi * z.hi));
}

}  // namespace wick::cpu::vmath
