// AVX-512 kernels with VNNI (vpdpbusd: u8 x s8 -> i32 in one instruction), two 32-element blocks
// per 512-bit register. Compiled per function with target attributes; picked at run time only.
// K formats have no kernel here yet: they run the AVX2 ones.
#include "quantized/kernels.h"

#if defined(__x86_64__)
// GCC 12 reports its own _mm512_undefined_* placeholders (inside the intrinsics) as possibly
// uninitialized once they are inlined; the pragma must precede the header to cover its lines.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "quantized/blocks.h"

#define WICK_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace wick::quantized {

namespace {

// Two blocks' 16 nibble bytes -> 64 codes laid out as [b0 low, b1 low, b0 high, b1 high] (16 bytes
// each). Activations are shuffled to the same order (see pair_order).
WICK_AVX512 inline __m512i unpack_nibble_pair(const uint8_t* qs0, const uint8_t* qs1) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1));
  const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
  const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(ab), _mm256_srli_epi16(ab, 4), 1);
  return _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
}

// 64 activation bytes of two consecutive blocks, reordered to unpack_nibble_pair's order.
WICK_AVX512 inline __m512i pair_order(const int8_t* q) {
  const __m512i v = _mm512_loadu_si512(q);
  return _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0));
}

// Mask of the codes whose fifth bit is set, in unpack_nibble_pair's order.
WICK_AVX512 inline __mmask64 fifth_bit_mask(const uint8_t* qh0, const uint8_t* qh1) {
  uint32_t h0, h1;
  std::memcpy(&h0, qh0, 4);
  std::memcpy(&h1, qh1, 4);
  return static_cast<__mmask64>((h0 & 0xFFFFu) | (static_cast<uint64_t>(h1 & 0xFFFFu) << 16) |
                                (static_cast<uint64_t>(h0 >> 16) << 32) |
                                (static_cast<uint64_t>(h1 >> 16) << 48));
}

// Lanes of the i32 products: 0-3 and 8-11 belong to block 0, 4-7 and 12-15 to block 1; this
// picks element 0 or 2 of [s0, ., s1, .] accordingly.
WICK_AVX512 inline __m512 spread_pair(__m128 v) {
  const __m512i idx = _mm512_set_epi32(2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}

// f16 words (d0, m0) and (d1, m1) -> [d0, m0, d1, m1].
WICK_AVX512 inline __m128 halves_to_floats(uint32_t dm0, uint32_t dm1) {
  return _mm_cvtph_ps(_mm_unpacklo_epi32(_mm_cvtsi32_si128(static_cast<int>(dm0)),
                                         _mm_cvtsi32_si128(static_cast<int>(dm1))));
}

template <typename Block>
WICK_AVX512 inline uint32_t load_u32(const Block& b) {
  uint32_t v;
  std::memcpy(&v, &b, 4);
  return v;
}

// Per block pair: codes, and [d0, c0, d1, c1] with c the coefficient of s_x (min or offset).
struct PairCodes {
  __m512i codes;
  __m128 coef;
};

WICK_AVX512 inline PairCodes unpack_pair(const BlockQ4_0& b0, const BlockQ4_0& b1) {
  // d in the low half of both words -> [d0, d0, d1, d1] * [1, -8, 1, -8].
  const __m128 dd = halves_to_floats(b0.d * 0x10001u, b1.d * 0x10001u);
  return {unpack_nibble_pair(b0.qs, b1.qs), _mm_mul_ps(dd, _mm_setr_ps(1, -8, 1, -8))};
}
WICK_AVX512 inline PairCodes unpack_pair(const BlockQ4_1& b0, const BlockQ4_1& b1) {
  return {unpack_nibble_pair(b0.qs, b1.qs), halves_to_floats(load_u32(b0), load_u32(b1))};
}
WICK_AVX512 inline PairCodes unpack_pair(const BlockQ5_0& b0, const BlockQ5_0& b1) {
  const __m512i low = unpack_nibble_pair(b0.qs, b1.qs);
  const __m512i codes = _mm512_mask_add_epi8(low, fifth_bit_mask(b0.qh, b1.qh), low, _mm512_set1_epi8(0x10));
  const __m128 dd = halves_to_floats(b0.d * 0x10001u, b1.d * 0x10001u);
  return {codes, _mm_mul_ps(dd, _mm_setr_ps(1, -16, 1, -16))};
}
WICK_AVX512 inline PairCodes unpack_pair(const BlockQ5_1& b0, const BlockQ5_1& b1) {
  const __m512i low = unpack_nibble_pair(b0.qs, b1.qs);
  const __m512i codes = _mm512_mask_add_epi8(low, fifth_bit_mask(b0.qh, b1.qh), low, _mm512_set1_epi8(0x10));
  return {codes, halves_to_floats(load_u32(b0), load_u32(b1))};
}

// Generic 32-element kernel: two blocks per step; an odd last block is paired with zeros.
template <typename Block>
WICK_AVX512 void dot_rows_32(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                             const ActRow& x, float* out) {
  const int64_t nb = k / kQK;
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
    __m512 acc = _mm512_setzero_ps();
    __m128 macc = _mm_setzero_ps();
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
      const PairCodes p = unpack_pair(blocks[i], blocks[i + 1]);
      const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p.codes, pair_order(x.qs + i * kQK));
      // [d_w0 * d_x0, c0 * s_x0, d_w1 * d_x1, c1 * s_x1]
      const __m128 prod = _mm_mul_ps(p.coef, _mm_loadu_ps(x.ds + 2 * i));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), spread_pair(prod), acc);
      macc = _mm_add_ps(macc, prod);
    }
    float sum = _mm512_reduce_add_ps(acc) + _mm_cvtss_f32(_mm_shuffle_ps(macc, macc, 1)) +
                _mm_cvtss_f32(_mm_shuffle_ps(macc, macc, 3));
    if (i < nb) {  // odd block count: pair the last block with itself and keep half
      const PairCodes p = unpack_pair(blocks[i], blocks[i]);
      const __m512i xv = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + i * kQK)));
      const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p.codes,
                                              _mm512_shuffle_i64x2(xv, xv, _MM_SHUFFLE(3, 1, 2, 0)));
      // The upper activation half is zero, so all lanes together are block i's dot product.
      const __m128 coef = p.coef;
      const float dx = x.ds[2 * i], sx = x.ds[2 * i + 1];
      sum += _mm512_reduce_add_ps(_mm512_cvtepi32_ps(dot)) * (_mm_cvtss_f32(coef) * dx) +
             _mm_cvtss_f32(_mm_shuffle_ps(coef, coef, 1)) * sx;
    }
    out[r] = sum;
  }
}

// Q8_0: signed codes; |w| and x with w's sign keep vpdpbusd's u8 x s8 form.
WICK_AVX512 void dot_rows_q8_0(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                               const ActRow& x, float* out) {
  const int64_t nb = k / kQK;
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(w + static_cast<size_t>(r) * row_bytes);
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[i].qs));
      const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[i + 1].qs));
      const __m512i wq = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
      const __m512i xq = _mm512_loadu_si512(x.qs + i * kQK);
      const __mmask64 neg = _mm512_movepi8_mask(wq);
      const __m512i xs = _mm512_mask_sub_epi8(xq, neg, _mm512_setzero_si512(), xq);
      const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(wq), xs);
      const float s0 = _cvtsh_ss(blocks[i].d) * x.ds[2 * i];
      const float s1 = _cvtsh_ss(blocks[i + 1].d) * x.ds[2 * i + 2];
      const __m512 scale = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(s0), _mm512_set1_ps(s1));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    if (i < nb) {
      int isum = 0;
      for (int j = 0; j < kQK; j++) isum += blocks[i].qs[j] * x.qs[i * kQK + j];
      sum += _cvtsh_ss(blocks[i].d) * x.ds[2 * i] * static_cast<float>(isum);
    }
    out[r] = sum;
  }
}

}  // namespace

DotRowsFn dot_kernel_avx512(QuantType t) {
  switch (t) {
    case QuantType::Q4_0: return dot_rows_32<BlockQ4_0>;
    case QuantType::Q4_1: return dot_rows_32<BlockQ4_1>;
    case QuantType::Q5_0: return dot_rows_32<BlockQ5_0>;
    case QuantType::Q5_1: return dot_rows_32<BlockQ5_1>;
    case QuantType::Q8_0: return dot_rows_q8_0;
    default: return nullptr;
  }
}

}  // namespace wick::quantized

#else
namespace wick::quantized {
DotRowsFn dot_kernel_avx512(QuantType) { return nullptr; }
}  // namespace wick::quantized
#endif
