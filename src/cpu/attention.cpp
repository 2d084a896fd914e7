// CPU decode attention: rope_kv_cache (rotary embedding of q and k, k and v written into the
// caches) and attention_cached (causal softmax(q k^T) v over the cache rows).
//
// attention_cached runs a query row per task: its scores against contiguous cache rows (dot
// products in lanes, f32 for f32/f16/bf16, f64 for f64; 16-bit rows converted a block at a time:
// an f16/bf16 cache under f32 q is read as stored, never converted as a whole),
// the softmax over them with the row maximum subtracted, then the probability-weighted sum of
// the value rows. Query heads of one kv head read the same cache rows from the shared caches.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/cpu_device.h"
#include "cpu/half_convert.h"
#include "cpu/row_math.h"

namespace wick::cpu {

using backend::CacheView;
using backend::RopeTableViews;
using backend::Storage;
using backend::View;

namespace {

// Cache rows converted to the compute type per block (16-bit caches).
constexpr int64_t kKeyBlock = 64;
// Query heads attended together (those of one kv head): more are split into several tasks.
constexpr int64_t kMaxGroup = 8;

// Each batch item's position and cache slot (pos: 1 or b contiguous u32; slots: b contiguous
// u32 or none, then slot i), checked against the caches: pos + t <= max_seq, slot < the caches'
// slots, and (`distinct`: items that write) no cache row written twice (items sharing a slot
// need positions at least t apart).
struct ItemSlots {
  std::vector<int64_t> pos, slot;
  int64_t max_pos = 0;
};
ItemSlots read_items(View pos, const View* slots, int64_t b, int64_t t, const Layout& cache,
                     bool distinct, const char* op) {
  const int64_t max_seq = cache.shape[2], n_slots = cache.shape[0];
  const uint32_t* pp = data_of<uint32_t>(pos) + pos.layout.start_offset;
  const uint32_t* sp = slots ? data_of<uint32_t>(*slots) + slots->layout.start_offset : nullptr;
  const bool each = pos.layout.numel() > 1;
  ItemSlots items;
  for (int64_t i = 0; i < b; i++) {
    const int64_t p = pp[each ? i : 0], slot = sp ? sp[i] : i;
    if (p > max_seq - t)
      fail(ErrorKind::OutOfRange, op, "position ", p, " + ", t, " tokens exceeds the cache of ",
           max_seq, " positions");
    if (slot >= n_slots)
      fail(ErrorKind::OutOfRange, op, "cache slot ", slot, " of batch item ", i,
           " is beyond the caches' ", n_slots, " slots");
    if (distinct)
      for (int64_t j = 0; j < i; j++) {
        const auto sj = static_cast<size_t>(j);
        if (items.slot[sj] == slot && std::abs(items.pos[sj] - p) < t)
          fail(ErrorKind::Shape, op, "batch items ", j, " and ", i, " both write cache slot ", slot,
               " at position ", std::max(items.pos[sj], p));
      }
    items.pos.push_back(p);
    items.slot.push_back(slot);
    items.max_pos = std::max(items.max_pos, p);
  }
  return items;
}

// fn(T{}, K{}) for q's dtype T and the caches' dtype K: K == T, or a 16-bit K under f32 T (the
// only pairs the front end lets through).
template <typename Fn>
void dispatch_cache(DType q, DType cache, const char* op, Fn&& fn) {
  dispatch_float(q, op, [&](auto zero) {
    using T = decltype(zero);
    if (cache == q) return fn(zero, zero);
    if constexpr (std::is_same_v<T, float>) {
      if (cache == DType::F16) return fn(zero, f16{});
      if (cache == DType::BF16) return fn(zero, bf16{});
    }
    fail(ErrorKind::DType, op, "a ", cache, " cache under ", q, " q is not supported");
  });
}

// Dot product of two contiguous rows in lanes of two vector registers (AVX2: two independent
// add chains), their sum as an unrolled tree that the compiler keeps in registers (a loop over
// the lanes went through the stack and took most of the time).
template <typename C>
WICK_ROW_INLINE C dot_row(const C* a, const C* b, int64_t n) {
  constexpr int kHalf = sizeof(C) == 4 ? 8 : 4, kLanes = 2 * kHalf;
  C lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; k++) lane[k] += a[i + k] * b[i + k];
  C x[kHalf];
  for (int k = 0; k < kHalf; k++) x[k] = lane[k] + lane[k + kHalf];
  C s;
  if constexpr (kHalf == 8) {
    const C y0 = x[0] + x[4], y1 = x[1] + x[5], y2 = x[2] + x[6], y3 = x[3] + x[7];
    s = (y0 + y2) + (y1 + y3);
  } else {
    s = (x[0] + x[2]) + (x[1] + x[3]);
  }
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

// For g query rows q (g x d) against `len` contiguous key rows of d: scores[r * stride + j] =
// q[r] . keys[j]. Each key row is read once for the g rows (the query heads of one kv head).
template <typename C>
WICK_ROW_INLINE void score_rows(const C* q, int64_t g, const C* keys, int64_t len, int64_t d,
                                C* scores, int64_t stride) {
  for (int64_t j = 0; j < len; j++)
    for (int64_t r = 0; r < g; r++) scores[r * stride + j] = dot_row(q + r * d, keys + j * d, d);
}

// acc[r] += sum_j p[r * stride + j] * values[j] for g accumulator rows (g x d) and `len`
// contiguous value rows of d.
// Four rows per pass over an accumulator row: it is loaded and stored a quarter as often.
template <typename C>
WICK_ROW_INLINE void accumulate_rows(const C* p, int64_t stride, const C* values, int64_t len,
                                     int64_t d, int64_t g, C* acc) {
  int64_t j = 0;
  for (; j + 4 <= len; j += 4) {
    const C *v0 = values + j * d, *v1 = v0 + d, *v2 = v1 + d, *v3 = v2 + d;
    for (int64_t r = 0; r < g; r++) {
      const C* w = p + r * stride + j;
      const C w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
      C* a = acc + r * d;
      for (int64_t e = 0; e < d; e++) a[e] += (w0 * v0[e] + w1 * v1[e]) + (w2 * v2[e] + w3 * v3[e]);
    }
  }
  for (; j < len; j++) {
    const C* v = values + j * d;
    for (int64_t r = 0; r < g; r++) {
      const C w = p[r * stride + j];
      C* a = acc + r * d;
      for (int64_t e = 0; e < d; e++) a[e] += w * v[e];
    }
  }
}

// The f32 loops are compiled for the host's vector width (row_math.h).
WICK_MULTIVERSION void score_rows_f32(const float* q, int64_t g, const float* keys, int64_t len,
                                      int64_t d, float* scores, int64_t stride) {
  score_rows(q, g, keys, len, d, scores, stride);
}
WICK_MULTIVERSION void accumulate_rows_f32(const float* p, int64_t stride, const float* values,
                                           int64_t len, int64_t d, int64_t g, float* acc) {
  accumulate_rows(p, stride, values, len, d, g, acc);
}
WICK_MULTIVERSION void softmax_weights_f32(float* s, int64_t n, double* sum) {
  const float m = extreme_of<true>(s, n);
  exp_shifted(s, m, s, n);
  *sum = sum_plain(s, n);
}
void score_rows_any(const float* q, int64_t g, const float* k, int64_t len, int64_t d, float* s,
                    int64_t stride) {
  score_rows_f32(q, g, k, len, d, s, stride);
}
void score_rows_any(const double* q, int64_t g, const double* k, int64_t len, int64_t d, double* s,
                    int64_t stride) {
  score_rows(q, g, k, len, d, s, stride);
}
void accumulate_rows_any(const float* p, int64_t stride, const float* v, int64_t len, int64_t d,
                         int64_t g, float* acc) {
  accumulate_rows_f32(p, stride, v, len, d, g, acc);
}
void accumulate_rows_any(const double* p, int64_t stride, const double* v, int64_t len, int64_t d,
                         int64_t g, double* acc) {
  accumulate_rows(p, stride, v, len, d, g, acc);
}
// s = exp(s - max(s)) in place; returns the sum.
double softmax_weights_any(float* s, int64_t n) {
  double sum;
  softmax_weights_f32(s, n, &sum);
  return sum;
}
double softmax_weights_any(double* s, int64_t n) {
  const double m = extreme_of<true>(s, n);
  exp_shifted(s, m, s, n);
  return sum_plain(s, n);
}

// 16-bit cache rows widened for the dot loops: eight at a time with AVX2 and F16C (widen8),
// else the portable conversion at the host's vector width. Converted in baseline SSE2 code, this
// took 10% of a batched decode step (8 sequences, f16 cache; perf), 4.8% at AVX2 width.
#if defined(__x86_64__) && defined(__GNUC__)
template <typename H>
WICK_AVX2_F16C void widen_rows_avx2(const H* p, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, widen8<H>(reinterpret_cast<const uint16_t*>(p + i)));
  for (; i < n; i++) out[i] = half_to_float(p[i]);
}
#endif
WICK_MULTIVERSION void widen_rows_portable(const f16* p, int64_t n, float* out) {
  widen_row(p, 1, out, n);
}
WICK_MULTIVERSION void widen_rows_portable(const bf16* p, int64_t n, float* out) {
  widen_row(p, 1, out, n);
}
template <typename H>
void widen_rows(const H* p, int64_t n, float* out) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (runs_avx2_f16c()) return widen_rows_avx2(p, n, out);
#endif
  widen_rows_portable(p, n, out);
}

// `len` contiguous rows of d elements as compute-type values: the rows themselves when T is
// its own compute type, else converted into buf.
template <typename T>
const compute_t<T>* cache_rows(const T* rows, int64_t len, int64_t d, compute_t<T>* buf) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return rows;
  } else {
    widen_rows(rows, len * d, buf);
    return buf;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// AVX-512 forms of score_rows and accumulate_rows for f32 q and d % 16 == 0: the cache rows
// are read as stored (16-bit ones widened in registers, no buffer), and each product's float ops
// are dot_row's / accumulate_rows' in the same order, so the same bits. score_rows' cost was
// the horizontal sum closing each (query, key) dot: here four keys' sums share one.
#define WICK_AVX512_ATTN __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,f16c")))

template <typename K>
WICK_AVX512_ATTN inline __m512 load16(const K* p) {
  if constexpr (std::is_same_v<K, float>) {
    return _mm512_loadu_ps(p);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (std::is_same_v<K, f16>)
      return _mm512_cvtph_ps(h);
    else
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

// The lane sums of four registers, each in dot_row's tree (lane i + 8, then + 4, + 2, + 1).
WICK_AVX512_ATTN inline void sum_lanes_4(const __m512 (&v)[4], float* out) {
  const __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // 128-bit lane i: register i's lanes j + (j + 4), j < 4.
  const __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 u = _mm512_add_ps(t, _mm512_permute_ps(t, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 w = _mm512_add_ps(u, _mm512_permute_ps(u, _MM_SHUFFLE(2, 3, 0, 1)));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, w);
  for (int i = 0; i < 4; i++) out[i] = lanes[4 * i];
}

// score_rows_avx512's steps of 4 keys (all of len's whole ones) for D = d / 16 <= 4 registers a
// row: the 4 keys are loaded (and widened) once into registers for all g query rows, not once
// per row; each row's sums are the same ops in the same order. Returns the keys done.
template <typename K, int D>
WICK_AVX512_ATTN int64_t score_keys_resident(const float* q, int64_t g, const K* keys, int64_t len,
                                             float* scores, int64_t stride) {
  constexpr int64_t d = 16 * D;
  int64_t j = 0;
  for (; j + 4 <= len; j += 4) {
    __m512 kv[4][D];
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++)
#pragma GCC unroll 4
      for (int c = 0; c < D; c++) kv[t][c] = load16(keys + (j + t) * d + 16 * c);
    for (int64_t r = 0; r < g; r++) {
      __m512 lane[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                        _mm512_setzero_ps()};
#pragma GCC unroll 4
      for (int c = 0; c < D; c++) {
        const __m512 qv = _mm512_loadu_ps(q + r * d + 16 * c);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) lane[t] = _mm512_add_ps(lane[t], _mm512_mul_ps(qv, kv[t][c]));
      }
      float sums[4];
      sum_lanes_4(lane, sums);
      for (int t = 0; t < 4; t++) scores[r * stride + j + t] = sums[t];
    }
  }
  return j;
}

template <typename K>
WICK_AVX512_ATTN void score_rows_avx512(const float* q, int64_t g, const K* keys, int64_t len,
                                        int64_t d, float* scores, int64_t stride) {
  int64_t j = 0;
  if (d <= 64) {
    using Steps = int64_t (*)(const float*, int64_t, const K*, int64_t, float*, int64_t);
    constexpr Steps kSteps[4] = {score_keys_resident<K, 1>, score_keys_resident<K, 2>,
                                 score_keys_resident<K, 3>, score_keys_resident<K, 4>};
    j = kSteps[d / 16 - 1](q, g, keys, len, scores, stride);
  }
  for (; j + 4 <= len; j += 4)
    for (int64_t r = 0; r < g; r++) {
      __m512 lane[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                        _mm512_setzero_ps()};
      for (int64_t e = 0; e < d; e += 16) {
        const __m512 qv = _mm512_loadu_ps(q + r * d + e);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++)
          lane[t] = _mm512_add_ps(lane[t], _mm512_mul_ps(qv, load16(keys + (j + t) * d + e)));
      }
      float sums[4];
      sum_lanes_4(lane, sums);
      for (int t = 0; t < 4; t++) scores[r * stride + j + t] = sums[t];
    }
  for (; j < len; j++)
    for (int64_t r = 0; r < g; r++) {
      __m512 lane[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                        _mm512_setzero_ps()};
      for (int64_t e = 0; e < d; e += 16)
        lane[0] = _mm512_add_ps(
            lane[0], _mm512_mul_ps(_mm512_loadu_ps(q + r * d + e), load16(keys + j * d + e)));
      float sums[4];
      sum_lanes_4(lane, sums);
      scores[r * stride + j] = sums[0];
    }
}

template <typename K>
WICK_AVX512_ATTN void accumulate_rows_avx512(const float* p, int64_t stride, const K* values,
                                             int64_t len, int64_t d, int64_t g, float* acc) {
  int64_t j = 0;
  for (; j + 4 <= len; j += 4)
    for (int64_t e = 0; e < d; e += 16) {
      const K* v = values + j * d + e;
      const __m512 v0 = load16(v), v1 = load16(v + d), v2 = load16(v + 2 * d),
                   v3 = load16(v + 3 * d);
      for (int64_t r = 0; r < g; r++) {
        const float* w = p + r * stride + j;
        const __m512 sum01 = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(w[0]), v0),
                                           _mm512_mul_ps(_mm512_set1_ps(w[1]), v1));
        const __m512 sum23 = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(w[2]), v2),
                                           _mm512_mul_ps(_mm512_set1_ps(w[3]), v3));
        float* a = acc + r * d + e;
        _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_add_ps(sum01, sum23)));
      }
    }
  for (; j < len; j++)
    for (int64_t e = 0; e < d; e += 16) {
      const __m512 v = load16(values + j * d + e);
      for (int64_t r = 0; r < g; r++) {
        float* a = acc + r * d + e;
        _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a),
                                          _mm512_mul_ps(_mm512_set1_ps(p[r * stride + j]), v)));
      }
    }
}
#endif

// True when attend's AVX-512 loops run: f32 compute, d a multiple of 16, an AVX-512 CPU.
template <typename C>
bool attend_avx512(int64_t d) {
#if defined(__x86_64__) && defined(__GNUC__)
  return std::is_same_v<C, float> && d % 16 == 0 && active_isa() == Isa::Avx512;
#else
  (void)d;
  return false;
#endif
}

// Per-thread buffers of one attention task: g query rows attending to up to n keys.
template <typename C>
struct AttendBuffers {
  std::vector<C> q, scores, acc, rows;
  AttendBuffers(int64_t g, int64_t d, int64_t n)
      : q(static_cast<size_t>(g * d)),
        scores(static_cast<size_t>(g * n)),
        acc(static_cast<size_t>(g * d)),
        rows(static_cast<size_t>(kKeyBlock * d)) {}
};

// out[r] (d, rows out_stride apart) = softmax(q[r] . keys[j], j < n) weighted sum of values[j]
// for the g query rows in buf.q; keys/values: n contiguous rows of d elements of K. softcap > 0:
// the scores s are softcap tanh(s / softcap).
template <typename T, typename K>
void attend(int64_t g, const K* keys, const K* values, int64_t n, int64_t d, float softcap,
            AttendBuffers<compute_t<T>>& buf, T* out, int64_t out_stride) {
  using C = compute_t<T>;
  static_assert(std::is_same_v<C, compute_t<K>>);
  C* scores = buf.scores.data();
  const bool avx512 = attend_avx512<C>(d);
  for (int64_t j = 0; j < n; j += kKeyBlock) {
    const int64_t len = std::min(kKeyBlock, n - j);
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (std::is_same_v<C, float>)
      if (avx512) {
        score_rows_avx512(buf.q.data(), g, keys + j * d, len, d, scores + j, n);
        continue;
      }
#endif
    score_rows_any(buf.q.data(), g, cache_rows(keys + j * d, len, d, buf.rows.data()), len, d,
                   scores + j, n);
  }
  if (softcap > 0) {
    const C cap = softcap;
    for (int64_t i = 0; i < g * n; i++) scores[i] = cap * std::tanh(scores[i] / cap);
  }
  double sums[kMaxGroup];
  for (int64_t r = 0; r < g; r++) sums[r] = softmax_weights_any(scores + r * n, n);
  C* acc = buf.acc.data();
  std::fill(acc, acc + g * d, C(0));
  for (int64_t j = 0; j < n; j += kKeyBlock) {
    const int64_t len = std::min(kKeyBlock, n - j);
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (std::is_same_v<C, float>)
      if (avx512) {
        accumulate_rows_avx512(scores + j, n, values + j * d, len, d, g, acc);
        continue;
      }
#endif
    accumulate_rows_any(scores + j, n, cache_rows(values + j * d, len, d, buf.rows.data()), len, d,
                        g, acc);
  }
  for (int64_t r = 0; r < g; r++) {
    const C inv = static_cast<C>(1.0 / sums[r]);
    C* a = acc + r * d;
    for (int64_t e = 0; e < d; e++) a[e] *= inv;
    store_row<T>(a, d, out + r * out_stride);
  }
}

}  // namespace

// Rows of work: the b*h*t rows of q (rotated into q_out), then the b*kvh*t rows of k (rotated
// into k_cache), then those of v (copied into v_cache).
void CpuDevice::rope_kv_cache(View q, View k, View v, const CacheView& k_cache,
                              const CacheView& v_cache, const RopeTableViews& tables, View pos,
                              const View* slots, bool interleaved, Storage& q_out) {
  const char* op = "rope_kv_cache";
  const Layout &lq = q.layout, &lk = k.layout, &lv = v.layout;
  WICK_ASSERT(lq.rank() == 4 && lk.rank() == 4 && lv.shape == lk.shape);
  const int64_t b = lq.shape[0], h = lq.shape[1], t = lq.shape[2], d = lq.shape[3];
  const int64_t kvh = lk.shape[1], half = d / 2, max_seq = k_cache.layout.shape[2];
  WICK_ASSERT(k_cache.layout.is_contiguous() && v_cache.layout.is_contiguous());
  check_span(k_cache.layout, k_cache.storage, op);
  check_span(v_cache.layout, v_cache.storage, op);
  const ItemSlots items = read_items(pos, slots, b, t, k_cache.layout, true, op);
  dispatch_cache(q.storage.dtype(), k_cache.storage.dtype(), op, [&](auto zero, auto kzero) {
    using T = decltype(zero);
    using K = decltype(kzero);
    using C = compute_t<T>;
    T* qo = cpu_storage(q_out).as<T>();
    K* kc = cpu_storage(k_cache.storage).as<K>() + k_cache.layout.start_offset;
    K* vc = cpu_storage(v_cache.storage).as<K>() + v_cache.layout.start_offset;
    const int64_t nq = b * h * t, nk = b * kvh * t;
    // The destination row of cache row (bi, hi, ti): row pos + ti of the item's slot.
    auto cache_row = [&](K* cache, int64_t bi, int64_t hi, int64_t ti) {
      const auto i = static_cast<size_t>(bi);
      return cache + ((items.slot[i] * kvh + hi) * max_seq + items.pos[i] + ti) * d;
    };
    auto table_row = [&](View tab, int64_t bi, int64_t ti, C* buf) {
      const Layout& l = tab.layout;
      const int64_t row = items.pos[static_cast<size_t>(bi)] + ti;
      return row_view(data_of<T>(tab) + l.start_offset + row * l.strides[0], l.strides[1], half,
                      buf);
    };
    parallel_for(
        nq + 2 * nk, std::max<int64_t>(1, kParallelGrain / (16 * d)), [&](int64_t rb, int64_t re) {
          std::vector<C> xbuf(static_cast<size_t>(d)), ybuf(static_cast<size_t>(d));
          std::vector<C> cbuf(static_cast<size_t>(half)), sbuf(static_cast<size_t>(half));
          for (int64_t r = rb; r < re; r++) {
            const bool is_q = r < nq;
            const int64_t rr = is_q ? r : (r - nq) % nk, heads = is_q ? h : kvh;
            const int64_t bi = rr / (heads * t), hi = rr / t % heads, ti = rr % t;
            const Layout& lx = is_q ? lq : r < nq + nk ? lk : lv;
            const T* xp = data_of<T>(is_q          ? q
                                     : r < nq + nk ? k
                                                   : v) +
                          lx.start_offset + bi * lx.strides[0] + hi * lx.strides[1] +
                          ti * lx.strides[2];
            if (r >= nq + nk) {  // v: copied as stored (rounded to a 16-bit cache)
              K* dst = cache_row(vc, bi, hi, ti);
              if constexpr (std::is_same_v<T, K>) {
                for (int64_t e = 0; e < d; e++) dst[e] = xp[e * lx.strides[3]];
              } else {
                for (int64_t e = 0; e < d; e++)
                  dst[e] = from_compute<K>(to_compute(xp[e * lx.strides[3]]));
              }
              continue;
            }
            const C* xv = row_view(xp, lx.strides[3], d, xbuf.data());
            const C* cv = table_row(is_q ? tables.cos_q : tables.cos_k, bi, ti, cbuf.data());
            const C* sv = table_row(is_q ? tables.sin_q : tables.sin_k, bi, ti, sbuf.data());
            rope_row(xv, cv, sv, half, interleaved, ybuf.data());
            if (is_q)
              store_row<T>(ybuf.data(), d, qo + r * d);
            else
              store_row<K>(ybuf.data(), d, cache_row(kc, bi, hi, ti));
          }
        });
  });
}

void CpuDevice::attention_cached(View q, View k_cache, View v_cache, View pos, const View* slots,
                                 const AttentionOptions& options, Storage& dst) {
  const char* op = "attention_cached";
  const Layout& lq = q.layout;
  WICK_ASSERT(lq.rank() == 4 && k_cache.layout.rank() == 4);
  const int64_t b = lq.shape[0], h = lq.shape[1], t = lq.shape[2], d = lq.shape[3];
  const int64_t kvh = k_cache.layout.shape[1], max_seq = k_cache.layout.shape[2], g = h / kvh;
  WICK_ASSERT(k_cache.layout.is_contiguous() && v_cache.layout.is_contiguous());
  check_span(k_cache.layout, k_cache.storage, op);
  check_span(v_cache.layout, v_cache.storage, op);
  const ItemSlots items = read_items(pos, slots, b, t, k_cache.layout, false, op);
  if (options.max_keys > 0 && items.max_pos + t > options.max_keys)
    fail(ErrorKind::OutOfRange, op, "a query attends to ", items.max_pos + t,
         " cache rows, more than options.max_keys = ", options.max_keys);
  dispatch_cache(q.storage.dtype(), k_cache.storage.dtype(), op, [&](auto zero, auto kzero) {
    using T = decltype(zero);
    using K = decltype(kzero);
    using C = compute_t<T>;
    const T* qp = data_of<T>(q) + lq.start_offset;
    const K* kc = data_of<K>(k_cache) + k_cache.layout.start_offset;
    const K* vc = data_of<K>(v_cache) + v_cache.layout.start_offset;
    T* out = cpu_storage(dst).as<T>();
    // A task per kv head, query position and group of up to kMaxGroup of the kv head's query
    // heads: each cache row is read once for the group. Its cost grows with the keys it reads.
    const int64_t groups = (g + kMaxGroup - 1) / kMaxGroup, per = (g + groups - 1) / groups;
    const int64_t cost = std::max<int64_t>(1, 4 * per * (items.max_pos + t) * d);
    parallel_for(
        b * kvh * t * groups, std::max<int64_t>(1, kParallelGrain / cost),
        [&](int64_t rb, int64_t re) {
          AttendBuffers<C> buf(per, d, items.max_pos + t);
          for (int64_t r = rb; r < re; r++) {
            const int64_t part = r % groups, ti = r / groups % t, row = r / (groups * t);
            const int64_t bi = row / kvh, kh = row % kvh;
            const int64_t h0 = kh * g + part * per, n_heads = std::min(per, g - part * per);
            for (int64_t j = 0; j < n_heads; j++) {
              const T* qr = qp + bi * lq.strides[0] + (h0 + j) * lq.strides[1] + ti * lq.strides[2];
              load_row(qr, lq.strides[3], d, buf.q.data() + j * d);
            }
            const auto item = static_cast<size_t>(bi);
            // Keys [lo, p]: the row's own position p and before, within the window.
            const int64_t p = items.pos[item] + ti;
            const int64_t lo =
                options.window > 0 ? std::max<int64_t>(0, p - options.window + 1) : 0;
            const int64_t first = ((items.slot[item] * kvh + kh) * max_seq + lo) * d;
            attend<T, K>(n_heads, kc + first, vc + first, p + 1 - lo, d,
                         static_cast<float>(options.softcap), buf,
                         out + ((bi * h + h0) * t + ti) * d, t * d);
          }
        });
  });
}

}  // namespace wick::cpu
