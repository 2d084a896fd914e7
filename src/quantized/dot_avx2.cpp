// AVX2 kernels (with FMA and F16C), compiled per function with target attributes so the rest of
// the binary stays portable; picked at run time only on CPUs that report the three features.
// Products of unsigned weight codes and signed activations use maddubs (u8 x s8 -> i16 pairs,
// far from saturation for codes < 64) and madd (-> i32); offsets and mins are added per block.
#include "quantized/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "quantized/blocks.h"

#define WICK_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace wick::quantized {

namespace {

WICK_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

WICK_AVX2 inline float half_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

// 16 bytes of nibbles -> 32 codes in element order (low nibbles first, then high nibbles).
WICK_AVX2 inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

// 32 bits -> 32 bytes holding 0x10 where the bit is set (the fifth bit of Q5 codes).
WICK_AVX2 inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  // Byte j of the result starts as byte j/8 of `bits`, then keeps only bit j%8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// sum over pairs of 4 bytes: u8 codes x s8 activations -> 8 x i32.
WICK_AVX2 inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// Weight block -> (u8 codes, scale, the per-block additive coefficient of sum(x)).
struct Unpacked {
  __m256i codes;
  float d, m;
};

WICK_AVX2 inline Unpacked unpack(const BlockQ4_0& b) {
  const float d = half_to_float(b.d);
  return {unpack_nibbles(b.qs), d, -8.0f * d};
}
WICK_AVX2 inline Unpacked unpack(const BlockQ4_1& b) {
  return {unpack_nibbles(b.qs), half_to_float(b.d), half_to_float(b.m)};
}
WICK_AVX2 inline Unpacked unpack(const BlockQ5_0& b) {
  const float d = half_to_float(b.d);
  return {_mm256_or_si256(unpack_nibbles(b.qs), fifth_bits(b.qh)), d, -16.0f * d};
}
WICK_AVX2 inline Unpacked unpack(const BlockQ5_1& b) {
  return {_mm256_or_si256(unpack_nibbles(b.qs), fifth_bits(b.qh)), half_to_float(b.d),
          half_to_float(b.m)};
}

// x = d_w * d_x * sum(code * q_x) + m * s_x per block, with s_x = d_x * sum(q_x).
template <typename Block>
WICK_AVX2 void dot_rows_32(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                           const ActRow& x, float* out) {
  const int64_t nb = k / kQK;
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
    __m256 acc = _mm256_setzero_ps();
    float macc = 0;
    for (int64_t i = 0; i < nb; i++) {
      const Unpacked u = unpack(blocks[i]);
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + i * kQK));
      const __m256i p = dot_u8_s8(u.codes, xq);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(u.d * x.ds[2 * i]), acc);
      macc += u.m * x.ds[2 * i + 1];
    }
    out[r] = hsum(acc) + macc;
  }
}

// Q8_0: signed codes; |w| times x with w's sign moved onto x keeps maddubs' u8 x s8 form.
WICK_AVX2 void dot_rows_q8_0(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                             const ActRow& x, float* out) {
  const int64_t nb = k / kQK;
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(w + static_cast<size_t>(r) * row_bytes);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
      const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[i].qs));
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + i * kQK));
      const __m256i p = dot_u8_s8(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(xq, wq));
      const float s = half_to_float(blocks[i].d) * x.ds[2 * i];
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(s), acc);
    }
    out[r] = hsum(acc);
  }
}

// Q4_K / Q5_K: per 64-element chunk, two groups of 32 (low and high nibbles); the group scale
// multiplies the i16 pair sums in madd; mins use the activation group sums.
template <typename Block, bool kFifthBit>
WICK_AVX2 void dot_rows_k4(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                           const ActRow& x, float* out) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
    __m256 acc = _mm256_setzero_ps();
    float macc = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const Block& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      const int16_t* bs = x.bsums + i * 16;
      uint8_t sc[8], mn[8];
      k4_scales_mins(b.scales, sc, mn);
      int msum = 0;
      for (int g = 0; g < 8; g++) msum += mn[g] * (bs[2 * g] + bs[2 * g + 1]);
      __m256i qh = _mm256_setzero_si256();
      if constexpr (kFifthBit) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
      __m256i isum = _mm256_setzero_si256();
      for (int c = 0; c < 4; c++) {
        const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c));
        __m256i lo = _mm256_and_si256(qs, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qs, 4), m4);
        if constexpr (kFifthBit) {
          const __m256i one = _mm256_set1_epi8(1);
          lo = _mm256_or_si256(
              lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4));
          hi = _mm256_or_si256(
              hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4));
        }
        const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * c));
        const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * c + 32));
        const __m256i p0 =
            _mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0), _mm256_set1_epi16(sc[2 * c]));
        const __m256i p1 =
            _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1), _mm256_set1_epi16(sc[2 * c + 1]));
        isum = _mm256_add_epi32(isum, _mm256_add_epi32(p0, p1));
      }
      const float dx = x.ds[i];
      acc = _mm256_fmadd_ps(_mm256_set1_ps(dx * half_to_float(b.d)), _mm256_cvtepi32_ps(isum), acc);
      macc += dx * half_to_float(b.dmin) * static_cast<float>(msum);
    }
    out[r] = hsum(acc) - macc;
  }
}

// Q6_K: codes 0..63 (value + 32); the -32 offset comes back through the activation group sums.
WICK_AVX2 void dot_rows_q6_k(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                             const ActRow& x, float* out) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const BlockQ6_K*>(w + static_cast<size_t>(r) * row_bytes);
    __m256 acc = _mm256_setzero_ps();
    float macc = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const BlockQ6_K& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      const int16_t* bs = x.bsums + i * 16;
      int offset_sum = 0;
      for (int g = 0; g < 16; g++) offset_sum += b.scales[g] * bs[g];
      __m256i isum = _mm256_setzero_si256();
      for (int half = 0; half < 2; half++) {
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * half));
        const __m256i ql1 =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * half + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * half));
        for (int s = 0; s < 4; s++) {
          const __m256i src = s % 2 ? ql1 : ql0;
          const __m256i lo =
              s < 2 ? _mm256_and_si256(src, m4) : _mm256_and_si256(_mm256_srli_epi16(src, 4), m4);
          const __m256i high =
              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * s), m2), 4);
          const __m256i codes = _mm256_or_si256(lo, high);
          const __m256i xq =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 128 * half + 32 * s));
          const int g = 8 * half + 2 * s;  // elements 0..15 use scale g, 16..31 scale g + 1
          const __m256i scales =
              _mm256_set_m128i(_mm_set1_epi16(b.scales[g + 1]), _mm_set1_epi16(b.scales[g]));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(codes, xq), scales));
        }
      }
      const float d = x.ds[i] * half_to_float(b.d);
      acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
      macc += d * static_cast<float>(32 * offset_sum);
    }
    out[r] = hsum(acc) - macc;
  }
}

}  // namespace

DotRowsFn dot_kernel_avx2(QuantType t) {
  switch (t) {
    case QuantType::Q4_0:
      return dot_rows_32<BlockQ4_0>;
    case QuantType::Q4_1:
      return dot_rows_32<BlockQ4_1>;
    case QuantType::Q5_0:
      return dot_rows_32<BlockQ5_0>;
    case QuantType::Q5_1:
      return dot_rows_32<BlockQ5_1>;
    case QuantType::Q8_0:
      return dot_rows_q8_0;
    case QuantType::Q4_K:
      return dot_rows_k4<BlockQ4_K, false>;
    case QuantType::Q5_K:
      return dot_rows_k4<BlockQ5_K, true>;
    case QuantType::Q6_K:
      return dot_rows_q6_k;
    default:
      return nullptr;
  }
}

}  // namespace wick::quantized

#else
namespace wick::quantized {
DotRowsFn dot_kernel_avx2(QuantType) {
  return nullptr;
}
}  // namespace wick::quantized
#endif
