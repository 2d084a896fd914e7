// AVX-512 kernels with VNNI (vpdpbusd: u8 x s8 -> i32 in one instruction), two 32-element blocks
// per 512-bit register. Compiled per function with target attributes; picked at run time only.
// q4_0 / q4_1 / q8_0 run on packed rows (packed.h), q5_0 / q5_1 / q4_k / q5_k / q6_k / iq4_nl /
// iq4_xs on ggml's blocks; q2_k / q3_k run the AVX2 kernels.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "quantized/kernels.h"

#if defined(__x86_64__)
// GCC 12 reports its own _mm512_undefined_* placeholders (inside the intrinsics) as possibly
// uninitialized once they are inlined; silenced for the header's lines only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "quantized/blocks.h"
#include "quantized/packed.h"

#define WICK_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

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

WICK_AVX512 inline PairCodes unpack_pair(const BlockQ5_0& b0, const BlockQ5_0& b1) {
  const __m512i low = unpack_nibble_pair(b0.qs, b1.qs);
  const __m512i codes =
      _mm512_mask_add_epi8(low, fifth_bit_mask(b0.qh, b1.qh), low, _mm512_set1_epi8(0x10));
  const __m128 dd = halves_to_floats(b0.d * 0x10001u, b1.d * 0x10001u);
  return {codes, _mm_mul_ps(dd, _mm_setr_ps(1, -16, 1, -16))};
}
WICK_AVX512 inline PairCodes unpack_pair(const BlockQ5_1& b0, const BlockQ5_1& b1) {
  const __m512i low = unpack_nibble_pair(b0.qs, b1.qs);
  const __m512i codes =
      _mm512_mask_add_epi8(low, fifth_bit_mask(b0.qh, b1.qh), low, _mm512_set1_epi8(0x10));
  return {codes, halves_to_floats(load_u32(b0), load_u32(b1))};
}

// IQ4 codes -> table value + 128 (1..241: vpdpbusd's unsigned operand), in every 128-bit lane;
// the 128 comes back as -128 d_w times the activation sums.
WICK_AVX512 inline __m512i iq4_biased_table() {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values));
  return _mm512_broadcast_i32x4(_mm_xor_si128(t, _mm_set1_epi8(static_cast<char>(0x80))));
}

WICK_AVX512 inline PairCodes unpack_pair(const BlockIQ4_NL& b0, const BlockIQ4_NL& b1) {
  const __m512i codes = _mm512_shuffle_epi8(iq4_biased_table(), unpack_nibble_pair(b0.qs, b1.qs));
  const __m128 dd = halves_to_floats(b0.d * 0x10001u, b1.d * 0x10001u);
  return {codes, _mm_mul_ps(dd, _mm_setr_ps(1, -128, 1, -128))};
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
      const __m512i dot =
          _mm512_dpbusd_epi32(_mm512_setzero_si512(), p.codes, pair_order(x.qs + i * kQK));
      // [d_w0 * d_x0, c0 * s_x0, d_w1 * d_x1, c1 * s_x1]
      const __m128 prod = _mm_mul_ps(p.coef, _mm_loadu_ps(x.ds + 2 * i));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), spread_pair(prod), acc);
      macc = _mm_add_ps(macc, prod);
    }
    float sum = _mm512_reduce_add_ps(acc) + _mm_cvtss_f32(_mm_shuffle_ps(macc, macc, 1)) +
                _mm_cvtss_f32(_mm_shuffle_ps(macc, macc, 3));
    if (i < nb) {  // odd block count: pair the last block with itself and keep half
      const PairCodes p = unpack_pair(blocks[i], blocks[i]);
      const __m512i xv = _mm512_zextsi256_si512(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + i * kQK)));
      const __m512i dot = _mm512_dpbusd_epi32(
          _mm512_setzero_si512(), p.codes, _mm512_shuffle_i64x2(xv, xv, _MM_SHUFFLE(3, 1, 2, 0)));
      // The upper activation half is zero, so all lanes together are block i's dot product.
      const __m128 coef = p.coef;
      const float dx = x.ds[2 * i], sx = x.ds[2 * i + 1];
      sum += _mm512_reduce_add_ps(_mm512_cvtepi32_ps(dot)) * (_mm_cvtss_f32(coef) * dx) +
             _mm_cvtss_f32(_mm_shuffle_ps(coef, coef, 1)) * sx;
    }
    out[r] = sum;
  }
}

// Row tiles (packed.h): the 16 lanes of a register are 16 weight rows, so no sum crosses lanes.
// Per block, vpdpbusd of register s (bytes 4s..4s+3 of each row's block, unsigned codes) with
// x's bytes 4s..4s+3 broadcast adds 4 products to each row's lane; 8 of them make the block's
// integer dot for all 16 rows. Per x row and block the float work is then fixed: acc += dot *
// (d_w * d_x) and macc += c * s_x (c: the min, or kOffset * d_w), in block order; out = acc + macc.

// Bytes p[0..3] in every lane (one vpbroadcastd from memory).
WICK_AVX512 inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Decode streams every weight tile from L3 or memory once per token: each block asks for the
// bytes 4 KiB ahead, so later tiles' loads overlap this one's arithmetic (as the AVX2 kernels do;
// 2 and 8 KiB were slower on the Xeon of perf.md's session 20).
constexpr int64_t kPrefetchAhead = 4096;

// Bytes of one row's block: codes, d (f16) and m (f16, q4_1).
template <typename F>
constexpr int64_t block_bytes() {
  return F::kCodeBytes + (F::kHasMin ? 4 : 2);
}

// The 8 code registers of block-tile `bt` (q4: low nibbles are registers 0-3, high ones 4-7).
template <typename F>
WICK_AVX512 inline void tile_codes(const uint8_t* bt, __m512i (&codes)[8]) {
  if constexpr (F::kCodeBytes == 16) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
      const __m512i q = _mm512_loadu_si512(bt + 64 * g);
      codes[g] = _mm512_and_si512(q, m4);
      codes[g + 4] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    }
  } else {
#pragma GCC unroll 8
    for (int s = 0; s < 8; s++) codes[s] = _mm512_loadu_si512(bt + 64 * s);
  }
}

// One 16-row tile against R x rows (ActRow: codes in element order, (d, s) pairs per block);
// writes lanes [0, n_rows) of each x row's outputs.
template <typename F, int R>
WICK_AVX512 void dot_tile(const uint8_t* tile, int64_t nb, const ActRow* xs, int64_t n_rows,
                          size_t ldo, float* out) {
  constexpr int64_t kTileBytes = kRowTile * block_bytes<F>();
  __m512 acc[R], macc[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) acc[i] = macc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t* bt = tile + b * kTileBytes;
    __m512i codes[8];
    tile_codes<F>(bt, codes);
    for (int64_t off = 0; off < kTileBytes; off += 64)
      _mm_prefetch(reinterpret_cast<const char*>(bt + kPrefetchAhead + off), _MM_HINT_T0);
    const uint8_t* scales = bt + kRowTile * F::kCodeBytes;
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
    const __m512 coef =
        F::kHasMin
            ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 32)))
            : _mm512_mul_ps(dw, _mm512_set1_ps(F::kOffset));
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      const int8_t* xq = xs[i].qs + kQK * b;
      // Two chains of 4 (vpdpbusd's latency), added: integer sums, so the same dot.
      __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[0], broadcast4(xq));
      __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[1], broadcast4(xq + 4));
#pragma GCC unroll 8
      for (int s = 2; s < 8; s += 2) {
        d0 = _mm512_dpbusd_epi32(d0, codes[s], broadcast4(xq + 4 * s));
        d1 = _mm512_dpbusd_epi32(d1, codes[s + 1], broadcast4(xq + 4 * s + 4));
      }
      const __m512i dot = _mm512_add_epi32(d0, d1);
      const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(xs[i].ds[2 * b]));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), sc, acc[i]);
      macc[i] = _mm512_fmadd_ps(coef, _mm512_set1_ps(xs[i].ds[2 * b + 1]), macc[i]);
    }
  }
  const __mmask16 keep = static_cast<__mmask16>(n_rows >= kRowTile ? 0xFFFF : (1u << n_rows) - 1);
#pragma GCC unroll 8
  for (int i = 0; i < R; i++)
    _mm512_mask_storeu_ps(out + ldo * i, keep, _mm512_add_ps(acc[i], macc[i]));
}

// dot_tile<F, R> for R = 1 .. kMaxTiledX.
template <typename F>
using TileKernel = void (*)(const uint8_t*, int64_t, const ActRow*, int64_t, size_t, float*);
template <typename F, size_t... R>
constexpr std::array<TileKernel<F>, sizeof...(R)> tile_kernels(std::index_sequence<R...>) {
  return {dot_tile<F, static_cast<int>(R) + 1>...};
}
template <typename F>
constexpr auto kTileKernels = tile_kernels<F>(std::make_index_sequence<kMaxTiledX>());

// Rows [0, n_rows) of the tiles at w against n_x <= kMaxTiledX x rows.
template <typename F>
WICK_AVX512 void dot_row_tiles(const uint8_t* w, int64_t n_rows, int64_t k, const ActRow* xs,
                               int n_x, size_t ldo, float* out) {
  const int64_t nb = k / kQK;
  const auto tile_bytes = static_cast<size_t>(nb * kRowTile * block_bytes<F>());
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRowTile) {
    const uint8_t* tile = w + static_cast<size_t>(r0 / kRowTile) * tile_bytes;
    const int64_t rows = std::min<int64_t>(kRowTile, n_rows - r0);
    float* o = out + r0;
    kTileKernels<F>[n_x - 1](tile, nb, xs, rows, ldo, o);
  }
}

// Activation rows: per 32 values (Block32) d = amax/127 and q = round(x/d); per 256 (Block256,
// ggml's Q8_K) q = round(x * -127/max) with the signed extreme max, and sums per 16.
WICK_AVX512 void quantize_act_avx512(ActKind kind, const float* x, int64_t k, int8_t* qs, float* ds,
                                     int16_t* bsums) {
  if (kind == ActKind::Block32) {
    for (int64_t i = 0; i < k / kQK; i++) {
      const __m512 a = _mm512_loadu_ps(x + kQK * i), b = _mm512_loadu_ps(x + kQK * i + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
      const float d = amax / 127.0f;
      const __m512 id = _mm512_set1_ps(d != 0 ? 1.0f / d : 0.0f);
      // Clamped to the stored bytes' range before the sum, so s matches what is stored: a NaN
      // converts to INT_MIN and is stored as -128 (its sum was d * ~-2^31 before).
      const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
      const __m512i qa = _mm512_max_epi32(
                        _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(a, id)), hi), lo),
                    qb = _mm512_max_epi32(
                        _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(b, id)), hi), lo);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + kQK * i), _mm512_cvtsepi32_epi8(qa));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + kQK * i + 16), _mm512_cvtsepi32_epi8(qb));
      ds[2 * i] = d;
      ds[2 * i + 1] = d * static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb)));
    }
    return;
  }
  for (int64_t i = 0; i < k / kQKK; i++) {
    const float* xb = x + kQKK * i;
    __m512 vmax = _mm512_setzero_ps();
    for (int j = 0; j < kQKK; j += 16)
      vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(xb + j)));
    const float amax = _mm512_reduce_max_ps(vmax);
    float max = 0;
    for (int j = 0; j < kQKK; j++) {  // the first element of largest magnitude, with its sign
      if (std::fabs(xb[j]) == amax) {
        max = xb[j];
        break;
      }
    }
    if (amax == 0) {
      std::memset(qs + kQKK * i, 0, kQKK);
      std::memset(bsums + 16 * i, 0, 32);
      ds[i] = 0;
      continue;
    }
    const float iscale = -127.f / max;
    const __m512 is = _mm512_set1_ps(iscale);
    for (int g = 0; g < 16; g++) {
      const __m512i v =
          _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + 16 * g), is)),
                           _mm512_set1_epi32(127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + kQKK * i + 16 * g),
                       _mm512_cvtsepi32_epi8(v));
      bsums[16 * i + g] = static_cast<int16_t>(_mm512_reduce_add_epi32(v));
    }
    ds[i] = 1 / iscale;
  }
}

// ---- K formats: 512-bit versions of the AVX2 kernels (maddubs -> i16 pairs, madd with the group
// scales -> i32). Two groups share a register, so their scales are spread with vpermw. -----------

// x for two 32-value groups 64 apart: [x[0..31] | x[64..95]].
WICK_AVX512 inline __m512i two_groups(const int8_t* x) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 64)), 1);
}

// i16 lanes 0-15 take scale a, 16-31 scale b (indices into 8 or 16 i16 scales).
WICK_AVX512 inline __m512i spread_idx2(int a, int b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(static_cast<int16_t>(a))),
                            _mm256_set1_epi16(static_cast<int16_t>(b)), 1);
}

// Q4_K / Q5_K: a 64-byte load of qs holds groups [2c | 2c+2] in its low nibbles and
// [2c+1 | 2c+3] in its high nibbles (c = 0 or 2).
template <typename Block, bool kFifthBit>
WICK_AVX512 void dot_rows_k4(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                             const ActRow& x, float* out) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
  const __m512i idx[4] = {spread_idx2(0, 2), spread_idx2(1, 3), spread_idx2(4, 6),
                          spread_idx2(5, 7)};
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
    __m512 acc = _mm512_setzero_ps();
    float macc = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const Block& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      const int16_t* bs = x.bsums + i * 16;
      uint8_t sc[8], mn[8];
      k4_scales_mins(b.scales, sc, mn);
      int msum = 0;
      for (int g = 0; g < 8; g++) msum += mn[g] * (bs[2 * g] + bs[2 * g + 1]);
      uint64_t sc64;
      std::memcpy(&sc64, sc, 8);
      const __m512i scales = _mm512_castsi128_si512(
          _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc64))));
      __m512i qh = _mm512_setzero_si512();
      if constexpr (kFifthBit) {  // qh byte l, bit g: fifth bit of value l of group g
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
        qh = _mm512_inserti64x4(_mm512_castsi256_si512(h), _mm256_srli_epi16(h, 2), 1);
      }
      __m512i isum = _mm512_setzero_si512();
      for (int half = 0; half < 2; half++) {  // groups 4*half .. 4*half + 3
        const __m512i qs = _mm512_loadu_si512(b.qs + 64 * half);
        __m512i lo = _mm512_and_si512(qs, m4);
        __m512i hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), m4);
        if constexpr (kFifthBit) {
          // Low half of qh holds bits g, high half bits g + 2: groups [2c | 2c+2] and [2c+1 |
          // 2c+3].
          const __m512i h = _mm512_srli_epi16(qh, 4 * half);
          lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(h, one), 4));
          hi = _mm512_or_si512(
              hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 1), one), 4));
        }
        const int8_t* qx = q + 128 * half;
        const __m512i p0 = _mm512_madd_epi16(_mm512_maddubs_epi16(lo, two_groups(qx)),
                                             _mm512_permutexvar_epi16(idx[2 * half], scales));
        const __m512i p1 = _mm512_madd_epi16(_mm512_maddubs_epi16(hi, two_groups(qx + 32)),
                                             _mm512_permutexvar_epi16(idx[2 * half + 1], scales));
        isum = _mm512_add_epi32(isum, _mm512_add_epi32(p0, p1));
      }
      const float dx = x.ds[i];
      acc = _mm512_fmadd_ps(_mm512_set1_ps(dx * _cvtsh_ss(b.d)), _mm512_cvtepi32_ps(isum), acc);
      macc += dx * _cvtsh_ss(b.dmin) * static_cast<float>(msum);
    }
    out[r] = _mm512_reduce_add_ps(acc) - macc;
  }
}

// Q6_K: per 128-value half, one 64-byte load of ql gives values [0..31 | 32..63] (low nibbles)
// and [64..95 | 96..127] (high nibbles) against contiguous activations; qh adds two bits each.
// Codes are value + 32; the offset returns through the activation group sums.
WICK_AVX512 void dot_rows_q6_k(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                               const ActRow& x, float* out) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
  // i16 scale lanes: 8 per group of 16 values; a register spans 4 groups.
  const __m512i idx_lo =
      _mm512_setr_epi32(0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00010001, 0x00010001,
                        0x00010001, 0x00010001, 0x00020002, 0x00020002, 0x00020002, 0x00020002,
                        0x00030003, 0x00030003, 0x00030003, 0x00030003);
  const __m512i four = _mm512_set1_epi16(4);
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const BlockQ6_K*>(w + static_cast<size_t>(r) * row_bytes);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < k / kQKK; i++) {
      const BlockQ6_K& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      const __m256i scales16 =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums + i * 16));
      const __m512i scales = _mm512_castsi256_si512(scales16);
      __m512i isum = _mm512_sub_epi32(
          _mm512_setzero_si512(),
          _mm512_castsi256_si512(_mm256_slli_epi32(_mm256_madd_epi16(scales16, bsums), 5)));
      isum = _mm512_maskz_mov_epi32(0xFF, isum);  // only the 8 madd lanes carry the offset
      __m512i idx = idx_lo;
      for (int half = 0; half < 2; half++) {
        const __m512i ql = _mm512_loadu_si512(b.ql + 64 * half);
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * half));
        const __m512i qh =
            _mm512_inserti64x4(_mm512_castsi256_si512(h), _mm256_srli_epi16(h, 2), 1);
        const __m512i lo = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                           _mm512_slli_epi16(_mm512_and_si512(qh, m2), 4));
        const __m512i hi =
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 4), m2), 4));
        const int8_t* qx = q + 128 * half;
        const __m512i p0 = _mm512_madd_epi16(_mm512_maddubs_epi16(lo, _mm512_loadu_si512(qx)),
                                             _mm512_permutexvar_epi16(idx, scales));
        idx = _mm512_add_epi16(idx, four);
        const __m512i p1 = _mm512_madd_epi16(_mm512_maddubs_epi16(hi, _mm512_loadu_si512(qx + 64)),
                                             _mm512_permutexvar_epi16(idx, scales));
        idx = _mm512_add_epi16(idx, four);
        isum = _mm512_add_epi32(isum, _mm512_add_epi32(p0, p1));
      }
      acc =
          _mm512_fmadd_ps(_mm512_set1_ps(x.ds[i] * _cvtsh_ss(b.d)), _mm512_cvtepi32_ps(isum), acc);
    }
    out[r] = _mm512_reduce_add_ps(acc);
  }
}

// IQ4_XS: a 64-byte load of qs holds sub-blocks 4h .. 4h+3, one per 128-bit lane (low nibbles:
// elements 0-15, high: 16-31); the activations are regrouped to match, vpdpbusd takes the biased
// table values, and each lane's i32 sums are multiplied by its sub-block's scale. The bias
// returns as -128 * sum(scale * activation sum) from the Q8_K group sums.
WICK_AVX512 void dot_rows_iq4_xs(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                                 const ActRow& x, float* out) {
  const __m512i table = iq4_biased_table(), m4 = _mm512_set1_epi8(0x0F);
  const __m512i lane_of = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks =
        reinterpret_cast<const BlockIQ4_XS*>(w + static_cast<size_t>(r) * row_bytes);
    __m512 acc = _mm512_setzero_ps();
    float macc = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const BlockIQ4_XS& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      const int16_t* bs = x.bsums + i * 16;
      int sc[8], bias = 0;
      for (int ib = 0; ib < 8; ib++) {
        sc[ib] = iq4xs_scale(b, ib);
        bias += sc[ib] * (bs[2 * ib] + bs[2 * ib + 1]);
      }
      __m512i isum = _mm512_setzero_si512();
      for (int h = 0; h < 2; h++) {
        const __m512i qs = _mm512_loadu_si512(b.qs + 64 * h);
        const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(qs, m4));
        const __m512i hi =
            _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(qs, 4), m4));
        // x of sub-blocks 4h .. 4h+3: [0-15 of each] and [16-31 of each].
        const __m512i x0 = _mm512_loadu_si512(q + 128 * h),
                      x1 = _mm512_loadu_si512(q + 128 * h + 64);
        const __m512i x_lo = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i x_hi = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(3, 1, 3, 1));
        const __m512i dot =
            _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, x_lo), hi, x_hi);
        const __m512i scales = _mm512_permutexvar_epi32(
            lane_of,
            _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 4 * h))));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, scales));
      }
      const float dd = x.ds[i] * _cvtsh_ss(b.d);
      acc = _mm512_fmadd_ps(_mm512_set1_ps(dd), _mm512_cvtepi32_ps(isum), acc);
      macc += dd * static_cast<float>(128 * bias);
    }
    out[r] = _mm512_reduce_add_ps(acc) - macc;
  }
}

}  // namespace

QuantizeActFn act_quantizer_avx512() {
  return quantize_act_avx512;
}
TiledRowsFn tiled_kernel_avx512(QuantType t) {
  switch (t) {
    case QuantType::Q4_0:
      return dot_row_tiles<PackedQ4_0>;
    case QuantType::Q4_1:
      return dot_row_tiles<PackedQ4_1>;
    case QuantType::Q8_0:
      return dot_row_tiles<PackedQ8_0>;
    default:
      return nullptr;
  }
}

DotRowsFn dot_kernel_avx512(QuantType t) {
  switch (t) {
    case QuantType::Q5_0:
      return dot_rows_32<BlockQ5_0>;
    case QuantType::Q5_1:
      return dot_rows_32<BlockQ5_1>;
    case QuantType::Q4_K:
      return dot_rows_k4<BlockQ4_K, false>;
    case QuantType::Q5_K:
      return dot_rows_k4<BlockQ5_K, true>;
    case QuantType::Q6_K:
      return dot_rows_q6_k;
    case QuantType::IQ4_NL:
      return dot_rows_32<BlockIQ4_NL>;
    case QuantType::IQ4_XS:
      return dot_rows_iq4_xs;
    default:
      return nullptr;
  }
}

}  // namespace wick::quantized

#else
namespace wick::quantized {
DotRowsFn dot_kernel_avx512(QuantType) {
  return nullptr;
}
TiledRowsFn tiled_kernel_avx512(QuantType) {
  return nullptr;
}
QuantizeActFn act_quantizer_avx512() {
  return nullptr;
}
}  // namespace wick::quantized
#endif
