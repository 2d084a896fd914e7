// Elementary functions for the CPU kernels. The float versions are written without branches,
// calls or float -> int conversions so that loops over them vectorise (libm's are scalar calls).
// Both sides of every select are computed first: under -ftrapping-math (GCC's default) the
// vectoriser will not speculate float arithmetic that sits inside a conditional. They are
// always inlined: a call left in a loop (GCC's inliner gives up in big files) stops it vectorising.
// they stay within a few ulp of the correctly rounded result, NaN, inf and subnormals included.
// The double versions are libm's. Kernels call vmath::exp(x) etc. for either compute type.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

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

WICK_ALWAYS_INLINE inline float exp(float x) {
  using namespace detail;
  // Beyond [-104, 89] the result is 0 or inf; clamping keeps n in range (NaN passes through).
  const float xc = std::min(std::max(x, -104.0f), 89.0f);
  const Reduced red = reduce_ln2(xc);
  const float p = 1.0f + expm1_small(red.r);
  // Scale by 2^n in two steps so that results in the subnormal range round only once.
  const int32_t n1 = red.ni >> 1;
  return p * pow2i(n1) * pow2i(red.ni - n1);
}
WICK_ALWAYS_INLINE inline double exp(double x) {
  return std::exp(x);
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

// 1 / (1 + exp(-x)), accurate on both tails.
template <typename C>
WICK_ALWAYS_INLINE inline C sigmoid(C x) {
  const C e = exp(-std::abs(x));
  const C s = C(1) / (C(1) + e);
  const C es = e * s;
  return x >= 0 ? s : es;
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

// exp(-a^2) for 0 <= a <= 11, with a^2 carried exactly as h + l (Dekker's product): rounding a^2
// first would cost up to 16 ulp of relative error at a = 4.
WICK_ALWAYS_INLINE inline float exp_neg_square(float a) {
  const float h = a * a;
  const float split = a * 4097.0f;  // 2^12 + 1: a = hi + lo with 12-bit halves
  const float hi = split - (split - a), lo = a - hi;
  const float l = ((hi * hi - h) + 2.0f * hi * lo) + lo * lo;
  return exp(-h) * (1.0f - l);  // exp(-l) = 1 - l for |l| < 2^-20
}

// Below kErfSplit, erf(a) = a P(a^2); above, erfc(a) = exp(-a^2) w Q(w), w = 1 / (1 + a/2).
// P and Q are least-squares fits on Chebyshev nodes against mpmath (scripts/fit_erf.py);
// erf is within 3 ulp and erfc within 5 ulp over all floats.
constexpr float kErfSplit = 0.75f;

WICK_ALWAYS_INLINE inline float erf_below_split(float a) {
  const float u = a * a;
  float p = 9.4729985e-05f;
  p = p * u - 0.000835735642f;
  p = p * u + 0.00521681644f;
  p = p * u - 0.0268647801f;
  p = p * u + 0.112837784f;
  p = p * u - 0.376126379f;
  p = p * u + 1.12837923f;
  return a * p;
}

WICK_ALWAYS_INLINE inline float erfc_above_split(float a) {
  const float ac = std::min(a, 10.5f);  // erfc is 0 in float beyond (NaN passes through)
  const float w = 1.0f / (1.0f + 0.5f * ac);
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
  return exp_neg_square(ac) * (w * q);
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

}  // namespace wick::cpu::vmath
