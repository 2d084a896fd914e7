// AVX2 kernels (with FMA and F16C), compiled per function with target attributes so the rest of
// the binary stays portable; picked at run time only on CPUs that report the three features.
// Products of unsigned weight codes and signed activations use maddubs (u8 x s8 -> i16 pairs,
// far from saturation for codes < 64) and madd (-> i32); offsets and mins are added per block.
// q4_0 / q4_1 / q8_0 run on packed rows (packed.h), the other formats on ggml's blocks.
#include "quantized/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <type_traits>

#include "quantized/blocks.h"
#include "quantized/packed.h"

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

// Q2_K / Q3_K: per 128-value half, 32 bytes of qs hold 2-bit fields; shift s gives values
// 32s..32s+31 (groups 2s and 2s+1 of the half). Q3_K adds a third bit from hmask (bit 4*half + s
// of byte l) and stores value + 4; that offset returns through the activation group sums.
template <bool kQ3>
WICK_AVX2 void dot_rows_low_bits_k(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                                   const ActRow& x, float* out) {
  const __m256i m2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  using Block = std::conditional_t<kQ3, BlockQ3_K, BlockQ2_K>;
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
    __m256 acc = _mm256_setzero_ps();
    float macc = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const Block& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      const int16_t* bs = x.bsums + i * 16;
      int sc[16], msum = 0;
      if constexpr (kQ3) {
        int8_t s8[16];
        q3k_scales(b.scales, s8);
        for (int g = 0; g < 16; g++) {
          sc[g] = s8[g];
          msum += 4 * sc[g] * bs[g];
        }
      } else {
        for (int g = 0; g < 16; g++) {
          sc[g] = b.scales[g] & 0xF;
          msum += (b.scales[g] >> 4) * bs[g];
        }
      }
      __m256i hm = _mm256_setzero_si256();
      if constexpr (kQ3) hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
      __m256i isum = _mm256_setzero_si256();
      for (int half = 0; half < 2; half++) {
        const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * half));
        for (int s = 0; s < 4; s++) {
          __m256i codes = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), m2);
          if constexpr (kQ3)
            codes = _mm256_or_si256(
                codes,
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * half + s), one), 2));
          const __m256i xq =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 128 * half + 32 * s));
          const int g = 8 * half + 2 * s;
          const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(sc[g + 1])),
                                                  _mm_set1_epi16(static_cast<int16_t>(sc[g])));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(codes, xq), scales));
        }
      }
      const float dx = x.ds[i];
      acc = _mm256_fmadd_ps(_mm256_set1_ps(dx * half_to_float(b.d)), _mm256_cvtepi32_ps(isum), acc);
      if constexpr (kQ3)
        macc += dx * half_to_float(b.d) * static_cast<float>(msum);
      else
        macc += dx * half_to_float(b.dmin) * static_cast<float>(msum);
    }
    out[r] = hsum(acc) - macc;
  }
}

// ---- IQ4: codes 0..15 -> signed table values by one byte shuffle; signed weights against signed
// activations through maddubs(|w|, sign(x, w)) (|w|, |x| <= 127: pair sums within i16). ---------

// The table in both 128-bit lanes.
WICK_AVX2 inline __m256i iq4_table() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
}

// 32 signed weights against 32 activations: 16 x i16 pair sums.
WICK_AVX2 inline __m256i dot_s8_s8_i16(__m256i w, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
}

WICK_AVX2 void dot_rows_iq4_nl(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                               const ActRow& x, float* out) {
  const int64_t nb = k / kQK;
  const __m256i table = iq4_table(), ones = _mm256_set1_epi16(1);
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks =
        reinterpret_cast<const BlockIQ4_NL*>(w + static_cast<size_t>(r) * row_bytes);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
      const __m256i v = _mm256_shuffle_epi8(table, unpack_nibbles(blocks[i].qs));
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + i * kQK));
      const __m256i p = _mm256_madd_epi16(dot_s8_s8_i16(v, xq), ones);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                            _mm256_set1_ps(half_to_float(blocks[i].d) * x.ds[2 * i]), acc);
    }
    out[r] = hsum(acc);
  }
}

// IQ4_XS: per sub-block of 32, the i16 pair sums times its scale (madd) into i32.
WICK_AVX2 void dot_rows_iq4_xs(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                               const ActRow& x, float* out) {
  const __m256i table = iq4_table();
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks =
        reinterpret_cast<const BlockIQ4_XS*>(w + static_cast<size_t>(r) * row_bytes);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < k / kQKK; i++) {
      const BlockIQ4_XS& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      __m256i isum = _mm256_setzero_si256();
      for (int ib = 0; ib < kQKK / kQK; ib++) {
        const __m256i v = _mm256_shuffle_epi8(table, unpack_nibbles(b.qs + 16 * ib));
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + kQK * ib));
        const __m256i sc = _mm256_set1_epi16(static_cast<int16_t>(iq4xs_scale(b, ib)));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(dot_s8_s8_i16(v, xq), sc));
      }
      acc = _mm256_fmadd_ps(_mm256_set1_ps(x.ds[i] * half_to_float(b.d)), _mm256_cvtepi32_ps(isum),
                            acc);
    }
    out[r] = hsum(acc);
  }
}

// ---- packed rows (packed.h) -----------------------------------------------------------------
// A full chunk is two halves of 8 blocks (bytes 0-31 and 32-63 of every slice). q4 codes (0..15)
// go through maddubs into i16 sums over all 8 slices (at most 8 * 2 * 15 * 127 = 30480, no
// overflow) and one madd; q8_0 codes are turned back into signed values and use the sign trick
// (|q| x sign(x, q)), with i32 sums per slice, so its offset coefficient is not needed.

// Signed q8 codes (stored q + 128) against x: 8 x i32 pair sums.
WICK_AVX2 inline __m256i dot_q8_codes(__m256i stored, __m256i xq) {
  const __m256i q = _mm256_xor_si256(stored, _mm256_set1_epi8(static_cast<char>(0x80)));
  return dot_u8_s8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xq, q));
}

// One block's codes (element order) from a tail run of `run` blocks at `codes` (block j of it).
template <typename F>
WICK_AVX2 inline __m256i tail_codes(const uint8_t* run_codes, int64_t run, int64_t j) {
  if constexpr (F::kCodeBytes == 32) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(run_codes + 32 * j));
  } else {
    if (run == 1) return unpack_nibbles(run_codes);
    // Runs of 2 and 4: block j takes the low nibbles (j < run / 2) or high nibbles of 32 bytes.
    const int64_t half = run / 2;
    const __m256i q =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(run_codes + 32 * (j % half)));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    return j < half ? _mm256_and_si256(q, m4) : _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
  }
}

template <typename F>
WICK_AVX2 inline __m256i tail_dot(__m256i codes, __m256i xq) {
  if constexpr (F::kCodeBytes == 32)
    return dot_q8_codes(codes, xq);
  else
    return dot_u8_s8(codes, xq);
}

// Blocks c0 .. c0 + run - 1 of a row's tail, one block per step; returns the next block.
template <typename F>
WICK_AVX2 inline int64_t tail_run(const uint8_t* codes, const uint8_t* d_ptr, const uint8_t* m_ptr,
                                  int64_t nb, int64_t c0, int64_t run, const ActRow& x, __m256* acc,
                                  float* tail) {
  const uint8_t* rc = codes + F::kCodeBytes * c0;
  for (int64_t j = 0; j < run; j++) {
    const int64_t b = c0 + j;
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + kQK * b));
    const __m256i dot = tail_dot<F>(tail_codes<F>(rc, run, j), xq);
    uint16_t dh;
    std::memcpy(&dh, d_ptr + 2 * b, 2);
    const float dw = half_to_float(dh);
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * x.ds[b]), *acc);
    if constexpr (F::kCodeBytes == 16) {  // q8_0 needs no offset term here
      uint16_t mh;
      std::memcpy(&mh, m_ptr + 2 * b, 2);
      *tail +=
          (F::kHasMin ? half_to_float(mh) : dw * static_cast<float>(F::kOffset)) * x.ds[nb + b];
    }
  }
  return c0 + run;
}

template <typename F>
WICK_AVX2 void dot_row_packed(const uint8_t* codes, int64_t k, const ActRow& x, float* out) {
  const int64_t nb = k / kQK;
  const uint8_t* d_ptr = codes + F::kCodeBytes * nb;
  const uint8_t* m_ptr = d_ptr + 2 * nb;
  constexpr bool kSigned = F::kCodeBytes == 32;  // q8_0: no offset term (see above)
  __m256 acc = _mm256_setzero_ps(), macc = _mm256_setzero_ps();
  float tail = 0;
  int64_t c0 = 0;
  for (; c0 + kChunkBlocks <= nb; c0 += kChunkBlocks) {
    const uint8_t* cc = codes + F::kCodeBytes * c0;
    const int8_t* xq = x.qs + kQK * c0;
    for (int h = 0; h < 2; h++) {
      const __m256 dw = _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(d_ptr + 2 * (c0 + 8 * h))));
      const __m256 dx = _mm256_loadu_ps(x.ds + c0 + 8 * h);
      const __m256 sx = _mm256_loadu_ps(x.ds + nb + c0 + 8 * h);
      __m256i dot;
      if constexpr (kSigned) {
        dot = _mm256_setzero_si256();
        for (int s = 0; s < 8; s++)
          dot = _mm256_add_epi32(
              dot, dot_q8_codes(
                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cc + 64 * s + 32 * h)),
                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 64 * s + 32 * h))));
      } else {
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        __m256i sum16 = _mm256_setzero_si256();
        for (int s = 0; s < 4; s++) {
          const __m256i q =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cc + 64 * s + 32 * h));
          const __m256i x_lo =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 64 * s + 32 * h));
          const __m256i x_hi =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 64 * (s + 4) + 32 * h));
          sum16 = _mm256_add_epi16(sum16, _mm256_maddubs_epi16(_mm256_and_si256(q, m4), x_lo));
          sum16 = _mm256_add_epi16(
              sum16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), x_hi));
        }
        dot = _mm256_madd_epi16(sum16, _mm256_set1_epi16(1));
        const __m256 coef = F::kHasMin
                                ? _mm256_cvtph_ps(_mm_loadu_si128(
                                      reinterpret_cast<const __m128i*>(m_ptr + 2 * (c0 + 8 * h))))
                                : _mm256_mul_ps(dw, _mm256_set1_ps(F::kOffset));
        macc = _mm256_fmadd_ps(coef, sx, macc);
      }
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, dx), acc);
    }
  }
  // Tail blocks in runs of 4, 2, 1 (element order).
  while (nb - c0 >= 4) c0 = tail_run<F>(codes, d_ptr, m_ptr, nb, c0, 4, x, &acc, &tail);
  if (nb - c0 >= 2) c0 = tail_run<F>(codes, d_ptr, m_ptr, nb, c0, 2, x, &acc, &tail);
  if (nb - c0 >= 1) c0 = tail_run<F>(codes, d_ptr, m_ptr, nb, c0, 1, x, &acc, &tail);
  *out = hsum(acc) + hsum(macc) + tail;
}

template <typename F>
WICK_AVX2 void dot_rows_packed(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                               const ActRow* xs, int n_x, size_t ldo, float* out) {
  for (int64_t r = 0; r < n_rows; r++)
    for (int i = 0; i < n_x; i++)
      dot_row_packed<F>(w + static_cast<size_t>(r) * row_bytes, k, xs[i], out + ldo * i + r);
}

}  // namespace

PackedRowsFn packed_kernel_avx2(QuantType t) {
  switch (t) {
    case QuantType::Q4_0:
      return dot_rows_packed<PackedQ4_0>;
    case QuantType::Q4_1:
      return dot_rows_packed<PackedQ4_1>;
    case QuantType::Q8_0:
      return dot_rows_packed<PackedQ8_0>;
    default:
      return nullptr;
  }
}

DotRowsFn dot_kernel_avx2(QuantType t) {
  switch (t) {
    case QuantType::Q5_0:
      return dot_rows_32<BlockQ5_0>;
    case QuantType::Q5_1:
      return dot_rows_32<BlockQ5_1>;
    case QuantType::Q2_K:
      return dot_rows_low_bits_k<false>;
    case QuantType::Q3_K:
      return dot_rows_low_bits_k<true>;
    case QuantType::Q4_K:
      return dot_rows_k4<BlockQ4_K, false>;
    case QuantType::Q5_K:
      return dot_rows_k4<BlockQ5_K, true>;
    case QuantType::Q6_K:
      return dot_rows_q6_k;
    case QuantType::IQ4_NL:
      return dot_rows_iq4_nl;
    case QuantType::IQ4_XS:
      return dot_rows_iq4_xs;
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
PackedRowsFn packed_kernel_avx2(QuantType) {
  return nullptr;
}
}  // namespace wick::quantized
#endif
