// AVX2 kernels (with FMA and F16C), compiled per function with target attributes so the rest of
// the binary stays portable; picked at run time only on CPUs that report the three features.
// Products of unsigned weight codes and signed activations use maddubs (u8 x s8 -> i16 pairs,
// far from saturation for codes < 64) and madd (-> i32); offsets and mins are added per block.
// q4_0 / q4_1 / q8_0 run on packed rows (packed.h), the other formats on ggml's blocks.
#include "quantized/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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

// The sum of 8 i32 lanes.
WICK_AVX2 inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// The 4 sums: lane j = ((a_j0 + a_j1) + (a_j2 + a_j3)) + ((a_j4 + a_j5) + (a_j6 + a_j7)).
WICK_AVX2 inline __m128 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// One sum in reduce4's order, the order of the multi-row kernels' sums.
WICK_AVX2 inline float hsum_tree(__m256 v) {
  const __m256 zero = _mm256_setzero_ps();
  return _mm_cvtss_f32(reduce4(v, zero, zero, zero));
}

// Decode's weights together outgrow the caches, so every row streams from memory once per token.
// Each kernel asks for the bytes kPrefetchAhead past the row it starts, so the loads of later rows
// overlap this row's arithmetic: 1-thread SmolLM2 decode 117-119 -> 140-146 tok/s on a 2-core AMD
// EPYC (docs/perf.md, session 13); 1-2 KiB ahead was too close, 8-16 KiB no better.
constexpr uintptr_t kPrefetchAhead = 4096;

WICK_AVX2 inline void prefetch_ahead(const uint8_t* row, size_t bytes) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(row) + kPrefetchAhead;  // may pass the end
  for (uintptr_t b = 0; b < bytes; b += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
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

// The largest of 8 lanes.
WICK_AVX2 inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// 32 i32 (4 x 8) saturated to i8 in element order.
WICK_AVX2 inline __m256i pack_i8(const __m256i (&q)[4]) {
  // Lanes come out of the packs interleaved per 128 bits; the permute restores element order.
  return _mm256_permutevar8x32_epi32(
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3])),
      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// ggml's Q8_K (quantize_row_q8_k) of 256 values, bit for bit: the first value of largest
// magnitude sets iscale = -127 / max, q = min(127, round-to-even(iscale * x)) (saturating packs:
// |iscale * x| <= 127 up to rounding), sums of 16 q, d = 1 / iscale.
WICK_AVX2 void quantize_q8_k_avx2(const float* x, int8_t* qs, float* d, int16_t* bsums) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 vmax = _mm256_setzero_ps();
  for (int j = 0; j < kQKK; j += 8)
    vmax = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), vmax);
  const float amax = hmax(vmax);
  if (amax == 0) {
    std::memset(qs, 0, kQKK);
    std::memset(bsums, 0, 32);
    *d = 0;
    return;
  }
  float max = 0;
  for (int j = 0; j < kQKK; j++) {
    if (std::fabs(x[j]) == amax) {
      max = x[j];
      break;
    }
  }
  const float iscale = -127.f / max;
  const __m256 is = _mm256_set1_ps(iscale);
  for (int j = 0; j < kQKK; j += 32) {
    __m256i q[4];
    for (int v = 0; v < 4; v++)
      q[v] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * v), is));
    const __m256i q8 = pack_i8(q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + j), q8);
    // Sums of 4 bytes, then of 16: lane 0 of each 128-bit half.
    __m256i s =
        _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q8), _mm256_set1_epi16(1));
    s = _mm256_hadd_epi32(s, s);
    s = _mm256_hadd_epi32(s, s);
    bsums[j / 16] = static_cast<int16_t>(_mm256_cvtsi256_si32(s));
    bsums[j / 16 + 1] = static_cast<int16_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(s, 1)));
  }
  *d = 1 / iscale;
}

// x rows to 8 bits: 32-element blocks as the scalar quantizer, but rounding halves to even
// (cvtps); Q8_K's blocks as ggml's, which round to even too.
WICK_AVX2 void quantize_act_avx2(ActKind kind, const float* x, int64_t k, int8_t* qs, float* ds,
                                 int16_t* bsums) {
  if (kind != ActKind::Block32) {
    for (int64_t i = 0; i < k / kQKK; i++)
      quantize_q8_k_avx2(x + kQKK * i, qs + kQKK * i, ds + i, bsums + 16 * i);
    return;
  }
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t i = 0; i < k / kQK; i++) {
    __m256 v[4];
    __m256 vmax = _mm256_setzero_ps();
    for (int j = 0; j < 4; j++) {
      v[j] = _mm256_loadu_ps(x + kQK * i + 8 * j);
      vmax = _mm256_max_ps(_mm256_andnot_ps(sign, v[j]), vmax);  // a NaN gives way, as in std::max
    }
    const float d = hmax(vmax) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0 ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int j = 0; j < 4; j++) q[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], id));
    const __m256i q8 = pack_i8(q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + kQK * i), q8);
    // The sum of the stored bytes (a NaN's saturated -128 too, so s matches what is stored).
    const __m256i s8 =
        _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q8), _mm256_set1_epi16(1));
    ds[2 * i] = d;
    ds[2 * i + 1] = d * static_cast<float>(hsum_i32(s8));
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
    prefetch_ahead(w + static_cast<size_t>(r) * row_bytes, row_bytes);
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
    out[r] = hsum_tree(acc) - macc;
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

// IQ4_XS: per sub-block of 32, the i16 pair sums times its scale (madd) into i32.
WICK_AVX2 void dot_rows_iq4_xs(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                               const ActRow& x, float* out) {
  const __m256i table = iq4_table();
  for (int64_t r = 0; r < n_rows; r++) {
    prefetch_ahead(w + static_cast<size_t>(r) * row_bytes, row_bytes);
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
// A tile of NX x rows times NW weight rows keeps its NX * NW accumulators in registers over the
// whole row: each weight slice is loaded and its nibbles unpacked once per tile, each x slice
// loaded once per tile, and the tile ends in one horizontal reduction. A full chunk is two halves
// of 8 blocks (bytes 0-31 and 32-63 of every slice), lane b of a half's dot holding block b. q4
// codes (0..15) go through maddubs into i16 sums over all 8 slices (at most 8 * 2 * 15 * 127 =
// 30480, no overflow) and one madd, q5 codes (0..31, the nibbles or'ed with their fifth bits)
// into two i16 sums of 4 slices and two madds; q8_0 codes are turned back into signed values and
// use the sign trick (|q| x sign(x, q)), with i32 sums per slice, so its offset coefficient is not
// needed.
//
// Float order of every output, the same whatever the tile (so a row's outputs do not depend on
// how many x rows share the call): per half chunk acc = fma(dot, dw * dx, acc), then (q4)
// acc = fma(c, s_x, acc); per tail block acc = fma(dot, dw * dx, acc) and (q4) t += c * s_x;
// out = ((acc0 + acc1) + (acc2 + acc3)) + ((acc4 + acc5) + (acc6 + acc7)) + t.

// Signed q8 codes (stored q + 128) against x: 8 x i32 pair sums.
WICK_AVX2 inline __m256i dot_q8_codes(__m256i stored, __m256i xq) {
  const __m256i q = _mm256_xor_si256(stored, _mm256_set1_epi8(static_cast<char>(0x80)));
  return dot_u8_s8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xq, q));
}

// One block's codes (element order) from a tail run of `run` blocks at `run_codes` (block j).
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

WICK_AVX2 inline float load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}

// out[i * ldo + j] = dot(weight row j, xs[i]) for i < NX, j < NW.
template <typename F, int NX, int NW>
WICK_AVX2 void packed_tile(const uint8_t* w, size_t row_bytes, int64_t k, const ActRow* xs,
                           size_t ldo, float* out) {
  constexpr bool kQ8 = F::kCodeBytes == 32;  // no offset term (see above)
  const int64_t nb = k / kQK;
  const uint8_t* codes[NW];
  const uint8_t* bits[NW];  // q5: the fifth bits
  const uint8_t* d_ptr[NW];
  const uint8_t* m_ptr[NW];
  for (int j = 0; j < NW; j++) {
    codes[j] = w + static_cast<size_t>(j) * row_bytes;
    bits[j] = codes[j] + F::kCodeBytes * nb;
    d_ptr[j] = bits[j] + F::kBitBytes * nb;
    m_ptr[j] = d_ptr[j] + 2 * nb;
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  __m256 acc[NX][NW];
  float tail[NX][NW];
  for (int i = 0; i < NX; i++)
    for (int j = 0; j < NW; j++) {
      acc[i][j] = _mm256_setzero_ps();
      tail[i][j] = 0;
    }
  int64_t c0 = 0;
  for (; c0 + kChunkBlocks <= nb; c0 += kChunkBlocks) {
    for (int h = 0; h < 2; h++) {
      const int64_t wo = F::kCodeBytes * c0 + 32 * h, xo = kQK * c0 + 32 * h;
      __m256i dot[NX][NW];
      if constexpr (kQ8) {
        for (int i = 0; i < NX; i++)
          for (int j = 0; j < NW; j++) dot[i][j] = _mm256_setzero_si256();
        for (int s = 0; s < 8; s++) {
          __m256i q[NW], abs_q[NW];
          for (int j = 0; j < NW; j++) {
            q[j] = _mm256_xor_si256(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes[j] + wo + 64 * s)),
                _mm256_set1_epi8(static_cast<char>(0x80)));
            abs_q[j] = _mm256_sign_epi8(q[j], q[j]);
          }
          for (int i = 0; i < NX; i++) {
            const __m256i xq =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[i].qs + xo + 64 * s));
            for (int j = 0; j < NW; j++)
              dot[i][j] =
                  _mm256_add_epi32(dot[i][j], dot_u8_s8(abs_q[j], _mm256_sign_epi8(xq, q[j])));
          }
        }
      } else {
        // i16 sums of up to 8 maddubs for q4 codes, 4 for q5 (31 * 127 * 2 * 4 < 2^15), then one
        // madd into the i32 dots.
        constexpr int kFold = F::kBitBytes ? 2 : 4;
        __m256i sum16[NX][NW];
        for (int i = 0; i < NX; i++)
          for (int j = 0; j < NW; j++) {
            sum16[i][j] = _mm256_setzero_si256();
            dot[i][j] = _mm256_setzero_si256();
          }
        for (int s = 0; s < 4; s++) {
          __m256i lo[NW], hi[NW];
          for (int j = 0; j < NW; j++) {
            const __m256i q =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes[j] + wo + 64 * s));
            lo[j] = _mm256_and_si256(q, m4);
            hi[j] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if constexpr (F::kBitBytes != 0) {  // words 8h + 2s (low nibbles), + 1 (high)
              const uint8_t* word = bits[j] + 4 * c0 + 32 * h + 8 * s;
              lo[j] = _mm256_or_si256(lo[j], fifth_bits(word));
              hi[j] = _mm256_or_si256(hi[j], fifth_bits(word + 4));
            }
          }
          for (int i = 0; i < NX; i++) {
            const __m256i x_lo =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[i].qs + xo + 64 * s));
            const __m256i x_hi =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[i].qs + xo + 64 * (s + 4)));
            for (int j = 0; j < NW; j++) {
              sum16[i][j] = _mm256_add_epi16(sum16[i][j], _mm256_maddubs_epi16(lo[j], x_lo));
              sum16[i][j] = _mm256_add_epi16(sum16[i][j], _mm256_maddubs_epi16(hi[j], x_hi));
            }
          }
          if ((s + 1) % kFold == 0) {
            for (int i = 0; i < NX; i++)
              for (int j = 0; j < NW; j++) {
                const __m256i d32 = _mm256_madd_epi16(sum16[i][j], ones);
                dot[i][j] = s + 1 == kFold ? d32 : _mm256_add_epi32(dot[i][j], d32);
                sum16[i][j] = _mm256_setzero_si256();
              }
          }
        }
      }
      __m256 dw[NW], coef[NW];
      for (int j = 0; j < NW; j++) {
        dw[j] = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(d_ptr[j] + 2 * (c0 + 8 * h))));
        if constexpr (F::kHasMin)
          coef[j] = _mm256_cvtph_ps(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(m_ptr[j] + 2 * (c0 + 8 * h))));
        else
          coef[j] = _mm256_mul_ps(dw[j], _mm256_set1_ps(F::kOffset));
      }
      for (int i = 0; i < NX; i++) {
        const __m256 dx = _mm256_loadu_ps(xs[i].ds + c0 + 8 * h);
        const __m256 sx = _mm256_loadu_ps(xs[i].ds + nb + c0 + 8 * h);
        for (int j = 0; j < NW; j++) {
          acc[i][j] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][j]), _mm256_mul_ps(dw[j], dx), acc[i][j]);
          if constexpr (!kQ8) acc[i][j] = _mm256_fmadd_ps(coef[j], sx, acc[i][j]);
        }
      }
    }
  }
  // Tail blocks in runs of 4, 2, 1 (element order), one block per step.
  while (c0 < nb) {
    const int64_t run = nb - c0 >= 4 ? 4 : nb - c0 >= 2 ? 2 : 1;
    for (int64_t jb = 0; jb < run; jb++) {
      const int64_t b = c0 + jb;
      __m256i wc[NW];
      float dw[NW], coef[NW];
      for (int j = 0; j < NW; j++) {
        wc[j] = tail_codes<F>(codes[j] + F::kCodeBytes * c0, run, jb);
        if constexpr (F::kBitBytes != 0)
          wc[j] = _mm256_or_si256(wc[j], fifth_bits(bits[j] + 4 * b));
        dw[j] = load_half(d_ptr[j] + 2 * b);
        if constexpr (F::kHasMin)
          coef[j] = load_half(m_ptr[j] + 2 * b);
        else
          coef[j] = dw[j] * static_cast<float>(F::kOffset);
      }
      for (int i = 0; i < NX; i++) {
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[i].qs + kQK * b));
        const float dx = xs[i].ds[b], sx = xs[i].ds[nb + b];
        for (int j = 0; j < NW; j++) {
          const __m256i d = kQ8 ? dot_q8_codes(wc[j], xq) : dot_u8_s8(wc[j], xq);
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(dw[j] * dx), acc[i][j]);
          if constexpr (!kQ8) tail[i][j] += coef[j] * sx;
        }
      }
    }
    c0 += run;
  }
  // One reduction per 4 accumulators.
  constexpr int kN = NX * NW;
  for (int g = 0; g < kN; g += 4) {
    __m256 a[4];
    for (int e = 0; e < 4; e++)
      a[e] = g + e < kN ? acc[(g + e) / NW][(g + e) % NW] : _mm256_setzero_ps();
    float r[4];
    _mm_storeu_ps(r, reduce4(a[0], a[1], a[2], a[3]));
    for (int e = 0; e < 4 && g + e < kN; e++) {
      const int i = (g + e) / NW, j = (g + e) % NW;
      out[ldo * static_cast<size_t>(i) + static_cast<size_t>(j)] = r[e] + tail[i][j];
    }
  }
}

// Rows [0, n_rows) in tiles of NW (the last ones one at a time) for NX x rows; `prefetch`: the
// first pass over these rows (later groups of x rows find them in the cache).
template <typename F, int NX, int NW>
WICK_AVX2 void packed_rows(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                           const ActRow* xs, size_t ldo, float* out, bool prefetch) {
  int64_t r = 0;
  for (; r + NW <= n_rows; r += NW) {
    const uint8_t* tile = w + static_cast<size_t>(r) * row_bytes;
    if (prefetch) prefetch_ahead(tile, NW * row_bytes);
    packed_tile<F, NX, NW>(tile, row_bytes, k, xs, ldo, out + r);
  }
  for (; r < n_rows; r++) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    if (prefetch) prefetch_ahead(row, row_bytes);
    packed_tile<F, NX, 1>(row, row_bytes, k, xs, ldo, out + r);
  }
}

// Tile shapes measured on a Zen CPU (SmolLM2 shapes, one thread): one x row alone (decode) is
// fastest one weight row at a time (wider tiles of q4 spill and ran 0.85-0.95x), q4 stays one
// weight row wide for more x rows too (2 wide: no better), q8_0 takes 2 weight rows from 2 x rows
// on (1.3-1.45x the one-row kernel at 8 x rows, against 1.1-1.25x one row wide).
template <typename F>
WICK_AVX2 void dot_rows_packed(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                               const ActRow* xs, int n_x, size_t ldo, float* out) {
  constexpr int kW = F::kCodeBytes == 32 ? 2 : 1;
  for (int x0 = 0; x0 < n_x; x0 += 4) {
    const ActRow* x = xs + x0;
    float* o = out + ldo * static_cast<size_t>(x0);
    switch (std::min(4, n_x - x0)) {
      case 1:
        packed_rows<F, 1, 1>(w, row_bytes, n_rows, k, x, ldo, o, x0 == 0);
        break;
      case 2:
        packed_rows<F, 2, kW>(w, row_bytes, n_rows, k, x, ldo, o, x0 == 0);
        break;
      case 3:
        packed_rows<F, 3, 1>(w, row_bytes, n_rows, k, x, ldo, o, x0 == 0);
        break;
      default:
        packed_rows<F, 4, kW>(w, row_bytes, n_rows, k, x, ldo, o, x0 == 0);
    }
  }
}

// out[x * ldo] = hsum(acc[x]) - sub[x] for x < n <= 4, in reduce4's order.
WICK_AVX2 inline void store_reduced(const __m256* acc, const float* sub, int n, size_t ldo,
                                    float* out) {
  __m256 a[4];
  for (int x = 0; x < 4; x++) a[x] = x < n ? acc[x] : _mm256_setzero_ps();
  float r[4];
  _mm_storeu_ps(r, reduce4(a[0], a[1], a[2], a[3]));
  for (int x = 0; x < n; x++) out[ldo * static_cast<size_t>(x)] = r[x] - sub[x];
}

// ---- Q5_0 / Q5_1 / IQ4_NL, one weight row against up to 4 x rows (QMatMul's batched steps and
// prompts): each block is decoded once for all of them. Per block and x row
// acc = fma(dot, d_w * d_x, acc) and (Q5_1, Q5_0's offset) t += m * s_x, with s_x = d_x * sum(q_x);
// one x row is the NX = 1 case, so per output the float order does not depend on the batch.
template <typename Block, int NX>
WICK_AVX2 void dot_row_32_multi(const uint8_t* row, int64_t k, const ActRow* xs, size_t ldo,
                                float* out) {
  constexpr bool kIq4 = std::is_same_v<Block, BlockIQ4_NL>;  // signed codes, no offset
  const auto* blocks = reinterpret_cast<const Block*>(row);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NX];
  float offset[NX];
  for (int x = 0; x < NX; x++) {
    acc[x] = _mm256_setzero_ps();
    offset[x] = 0;
  }
  for (int64_t i = 0; i < k / kQK; i++) {
    __m256i codes, magnitudes = _mm256_setzero_si256();
    float d, m = 0;
    if constexpr (kIq4) {
      codes = _mm256_shuffle_epi8(iq4_table(), unpack_nibbles(blocks[i].qs));
      magnitudes = _mm256_abs_epi8(codes);
      d = half_to_float(blocks[i].d);
    } else {
      const Unpacked u = unpack(blocks[i]);
      codes = u.codes;
      d = u.d;
      m = u.m;
    }
    for (int x = 0; x < NX; x++) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[x].qs + i * kQK));
      const __m256i p =
          kIq4 ? _mm256_madd_epi16(_mm256_maddubs_epi16(magnitudes, _mm256_sign_epi8(xq, codes)),
                                   ones)
               : dot_u8_s8(codes, xq);
      acc[x] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * xs[x].ds[2 * i]), acc[x]);
      if constexpr (!kIq4) offset[x] -= m * xs[x].ds[2 * i + 1];  // subtracted by store_reduced
    }
  }
  store_reduced(acc, offset, NX, ldo, out);
}

template <typename Block>
struct Row32Multi {
  template <int NX>
  WICK_AVX2 static void row(const uint8_t* r, int64_t k, const ActRow* xs, size_t ldo, float* o) {
    dot_row_32_multi<Block, NX>(r, k, xs, ldo, o);
  }
};

// ---- Q4_K / Q5_K / Q6_K, one weight row against up to 4 x rows (QMatMul's batched steps): each
// block's scales are decoded and its codes unpacked once for all of them. One x row is the NX = 1
// case, so per output the float order does not depend on the batch.

// out[i * ldo] = dot(the row, xs[i]) for i < NX, Q4_K / Q5_K: per 64-element chunk, two groups
// of 32 (low and high nibbles); the group scale multiplies the i16 pair sums in madd; mins use the
// activation group sums, subtracted lane by lane from the same accumulator.
template <typename Block, bool kFifthBit, int NX>
WICK_AVX2 void dot_row_k4_multi(const uint8_t* row, int64_t k, const ActRow* xs, size_t ldo,
                                float* out) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const auto* blocks = reinterpret_cast<const Block*>(row);
  __m256 acc[NX];
  for (int x = 0; x < NX; x++) acc[x] = _mm256_setzero_ps();
  for (int64_t i = 0; i < k / kQKK; i++) {
    const Block& b = blocks[i];
    alignas(16) uint8_t sm[16];  // the 8 scales, then the 8 mins
    k4_scales_mins(b.scales, sm, sm + 8);
    // Each min twice, as 16 i16 beside the activations' 16 sums of 16 (group g: sums 2g, 2g + 1).
    const __m128i sm8 = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
    const __m128i mn8 = _mm_unpackhi_epi64(sm8, _mm_setzero_si128());
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
    // The scales as i16 in both 128-bit lanes: scale j is bytes 2j, 2j + 1 of each lane.
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm8));
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFifthBit) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
    __m256i isum[NX];
    for (int x = 0; x < NX; x++) isum[x] = _mm256_setzero_si256();
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
      const __m256i s0 = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(0x0100 + 0x0404 * c)),
                    s1 = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(0x0302 + 0x0404 * c));
      for (int x = 0; x < NX; x++) {
        const int8_t* q = xs[x].qs + i * kQKK + 64 * c;
        const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
        const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32));
        const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0), s0);
        const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1), s1);
        isum[x] = _mm256_add_epi32(isum[x], _mm256_add_epi32(p0, p1));
      }
    }
    const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
    for (int x = 0; x < NX; x++) {
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[x].bsums + i * 16));
      const float dx = xs[x].ds[i];
      acc[x] = _mm256_fmadd_ps(_mm256_set1_ps(dx * d), _mm256_cvtepi32_ps(isum[x]), acc[x]);
      // The mins' term, lane by lane like the codes' (no scalar chain from block to block).
      acc[x] = _mm256_fnmadd_ps(_mm256_set1_ps(dx * dmin),
                                _mm256_cvtepi32_ps(_mm256_madd_epi16(mins, bs)), acc[x]);
    }
  }
  const float no_offset[NX] = {};
  store_reduced(acc, no_offset, NX, ldo, out);
}

// out[i * ldo] = dot(the row, xs[i]) for i < NX, Q6_K: codes 0..63 (value + 32); the -32 offset
// comes back through the activation group sums, subtracted from the integer sums of each block.
template <int NX>
WICK_AVX2 void dot_row_q6_k_multi(const uint8_t* row, int64_t k, const ActRow* xs, size_t ldo,
                                  float* out) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
  const auto* blocks = reinterpret_cast<const BlockQ6_K*>(row);
  __m256 acc[NX];
  for (int x = 0; x < NX; x++) acc[x] = _mm256_setzero_ps();
  for (int64_t i = 0; i < k / kQKK; i++) {
    const BlockQ6_K& b = blocks[i];
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
    // Scales 0..7 and 8..15 as i16 in both 128-bit lanes (scale j: bytes 2j, 2j + 1 of a lane).
    const __m256i half_scales[2] = {
        _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(sc8)),
        _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_unpackhi_epi64(sc8, sc8)))};
    __m256i isum[NX];
    for (int x = 0; x < NX; x++) isum[x] = _mm256_setzero_si256();
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
        // Elements 0..15 use scale 8 half + 2 s, 16..31 the next.
        const __m256i scales = _mm256_shuffle_epi8(
            half_scales[half], _mm256_setr_m128i(_mm_set1_epi16(0x0100 + 0x0404 * s),
                                                 _mm_set1_epi16(0x0302 + 0x0404 * s)));
        for (int x = 0; x < NX; x++) {
          const __m256i xq = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(xs[x].qs + i * kQKK + 128 * half + 32 * s));
          isum[x] =
              _mm256_add_epi32(isum[x], _mm256_madd_epi16(_mm256_maddubs_epi16(codes, xq), scales));
        }
      }
    }
    const float dw = half_to_float(b.d);
    for (int x = 0; x < NX; x++) {
      // The -32 offset in integers: minus 32 times each scale times its 16 activations' sum.
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[x].bsums + i * 16));
      const __m256i dot =
          _mm256_sub_epi32(isum[x], _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5));
      acc[x] = _mm256_fmadd_ps(_mm256_set1_ps(xs[x].ds[i] * dw), _mm256_cvtepi32_ps(dot), acc[x]);
    }
  }
  const float no_offset[NX] = {};
  store_reduced(acc, no_offset, NX, ldo, out);
}

template <typename Block, bool kFifthBit>
struct K4Multi {
  template <int NX>
  WICK_AVX2 static void row(const uint8_t* r, int64_t k, const ActRow* xs, size_t ldo, float* o) {
    dot_row_k4_multi<Block, kFifthBit, NX>(r, k, xs, ldo, o);
  }
};
struct Q6KMulti {
  template <int NX>
  WICK_AVX2 static void row(const uint8_t* r, int64_t k, const ActRow* xs, size_t ldo, float* o) {
    dot_row_q6_k_multi<NX>(r, k, xs, ldo, o);
  }
};

// Every weight row against one x row (DotRowsFn).
template <typename Kernel>
WICK_AVX2 void dot_rows_one(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                            const ActRow& x, float* out) {
  for (int64_t r = 0; r < n_rows; r++) {
    prefetch_ahead(w + static_cast<size_t>(r) * row_bytes, row_bytes);
    Kernel::template row<1>(w + static_cast<size_t>(r) * row_bytes, k, &x, 1, out + r);
  }
}

// Every weight row against groups of up to 4 x rows.
template <typename Kernel>
WICK_AVX2 void dot_rows_multi(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                              const ActRow* xs, int n_x, size_t ldo, float* out) {
  for (int x0 = 0; x0 < n_x; x0 += 4) {
    const int nx = std::min(4, n_x - x0);
    for (int64_t r = 0; r < n_rows; r++) {
      const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
      if (x0 == 0) prefetch_ahead(row, row_bytes);
      float* o = out + ldo * static_cast<size_t>(x0) + r;
      if (nx == 1)
        Kernel::template row<1>(row, k, xs + x0, ldo, o);
      else if (nx == 2)
        Kernel::template row<2>(row, k, xs + x0, ldo, o);
      else if (nx == 3)
        Kernel::template row<3>(row, k, xs + x0, ldo, o);
      else
        Kernel::template row<4>(row, k, xs + x0, ldo, o);
    }
  }
}

}  // namespace

QuantizeActFn act_quantizer_avx2() {
  return quantize_act_avx2;
}

PackedRowsFn packed_kernel_avx2(QuantType t) {
  switch (t) {
    case QuantType::Q4_0:
      return dot_rows_packed<PackedQ4_0>;
    case QuantType::Q4_1:
      return dot_rows_packed<PackedQ4_1>;
    case QuantType::Q5_0:
      return dot_rows_packed<PackedQ5_0>;
    case QuantType::Q5_1:
      return dot_rows_packed<PackedQ5_1>;
    case QuantType::Q8_0:
      return dot_rows_packed<PackedQ8_0>;
    default:
      return nullptr;
  }
}

DotRowsMultiFn dot_kernel_multi_avx2(QuantType t) {
  switch (t) {
    case QuantType::Q5_0:
      return dot_rows_multi<Row32Multi<BlockQ5_0>>;
    case QuantType::Q5_1:
      return dot_rows_multi<Row32Multi<BlockQ5_1>>;
    case QuantType::IQ4_NL:
      return dot_rows_multi<Row32Multi<BlockIQ4_NL>>;
    case QuantType::Q4_K:
      return dot_rows_multi<K4Multi<BlockQ4_K, false>>;
    case QuantType::Q5_K:
      return dot_rows_multi<K4Multi<BlockQ5_K, true>>;
    case QuantType::Q6_K:
      return dot_rows_multi<Q6KMulti>;
    default:
      return nullptr;
  }
}

DotRowsFn dot_kernel_avx2(QuantType t) {
  switch (t) {
    case QuantType::Q5_0:
      return dot_rows_one<Row32Multi<BlockQ5_0>>;
    case QuantType::Q5_1:
      return dot_rows_one<Row32Multi<BlockQ5_1>>;
    case QuantType::Q2_K:
      return dot_rows_low_bits_k<false>;
    case QuantType::Q3_K:
      return dot_rows_low_bits_k<true>;
    case QuantType::Q4_K:
      return dot_rows_one<K4Multi<BlockQ4_K, false>>;
    case QuantType::Q5_K:
      return dot_rows_one<K4Multi<BlockQ5_K, true>>;
    case QuantType::Q6_K:
      return dot_rows_one<Q6KMulti>;
    case QuantType::IQ4_NL:
      return dot_rows_one<Row32Multi<BlockIQ4_NL>>;
    case QuantType::IQ4_XS:
      return dot_rows_iq4_xs;
    default:
      return nullptr;
  }
}

}  // namespace wick::quantized

#else
namespace wick::quantized {
QuantizeActFn act_quantizer_avx2() {
  return nullptr;
}
DotRowsFn dot_kernel_avx2(QuantType) {
  return nullptr;
}
PackedRowsFn packed_kernel_avx2(QuantType) {
  return nullptr;
}
DotRowsMultiFn dot_kernel_multi_avx2(QuantType) {
  return nullptr;
}
}  // namespace wick::quantized
#endif
