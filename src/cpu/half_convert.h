// f16 / bf16 <-> f32 conversions written without branches or calls (and always inlined), so that
// loops over rows of them vectorise. Results are bit-identical to f16/bf16's own conversions
// (wick/dtype.h), NaN payloads included; tests/conformance/test_elementwise_math.cpp checks every
// f16 and bf16 value.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "cpu/isa.h"
#include "wick/dtype.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 reports the intrinsics' own _mm512_undefined_* placeholders as possibly uninitialized
// once they are inlined (vcvtph2ps' 512-bit form); silenced for the header's lines only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace wick::cpu {

WICK_ALWAYS_INLINE inline float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;                   // exponent and mantissa
  const uint32_t normal = (em << 13) + 0x38000000u;  // rebias the exponent 15 -> 127
  const uint32_t inf_nan = (em << 13) | 0x7f800000u;
  // Zero and subnormals are mantissa * 2^-24, which an int -> float conversion gets exactly.
  const float tiny = static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f;
  uint32_t bits = em >= 0x7c00u ? inf_nan : normal;
  bits = em < 0x0400u ? std::bit_cast<uint32_t>(tiny) : bits;
  return std::bit_cast<float>(bits | sign);
}

// Rounds to nearest even.
WICK_ALWAYS_INLINE inline uint16_t float_to_f16_bits(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  // Normal results: rebias, then round the 13 dropped mantissa bits (a carry may bump the
  // exponent).
  const uint32_t normal = (a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13;
  // |v| < 2^-14: adding 0.5 puts the f16 subnormal step 2^-24 at f32's ulp, so the FPU's own
  // round-to-nearest-even does the rounding; the low bits are then the f16 encoding.
  const uint32_t tiny = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - 0x3f000000u;
  const uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  uint32_t h = a < 0x38800000u ? tiny : normal;
  h = a >= 0x477ff000u ? 0x7c00u : h;  // 65520 and up round to inf
  h = a > 0x7f800000u ? nan : h;
  return static_cast<uint16_t>(h | sign);
}

WICK_ALWAYS_INLINE inline float bf16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// Rounds to nearest even; NaN stays a quiet NaN.
WICK_ALWAYS_INLINE inline uint16_t float_to_bf16_bits(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// One element of a 16-bit float type to and from f32.
template <typename T>
WICK_ALWAYS_INLINE inline float half_to_float(T v) {
  if constexpr (std::is_same_v<T, f16>)
    return f16_bits_to_float(v.bits);
  else
    return bf16_bits_to_float(v.bits);
}
template <typename T>
WICK_ALWAYS_INLINE inline T float_to_half(float v) {
  if constexpr (std::is_same_v<T, f16>)
    return T::from_bits(float_to_f16_bits(v));
  else
    return T::from_bits(float_to_bf16_bits(v));
}

// dst[j] = float(src[j * stride]) for j < n.
template <typename T>
WICK_ALWAYS_INLINE inline void widen_row(const T* src, int64_t stride, float* dst, int64_t n) {
  if (stride == 1)
    for (int64_t j = 0; j < n; j++) dst[j] = half_to_float(src[j]);
  else
    for (int64_t j = 0; j < n; j++) dst[j] = half_to_float(src[j * stride]);
}

#if defined(__x86_64__) && defined(__GNUC__)
// Eight 16-bit floats (the bits of H = f16 or bf16) to f32 in one register: vcvtph2ps, or a
// shift for bf16. Exact, as half_to_float (an f16 signalling NaN comes back quiet).
template <typename H>
WICK_AVX2_F16C inline __m256 widen8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<H, f16>)
    return _mm256_cvtph_ps(h);
  else
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
#endif

// dst[j] = T(src[j]) for j < n.
template <typename T>
WICK_ALWAYS_INLINE inline void narrow_row(const float* src, T* dst, int64_t n) {
  for (int64_t j = 0; j < n; j++) dst[j] = float_to_half<T>(src[j]);
}

}  // namespace wick::cpu
