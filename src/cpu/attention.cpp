// CPU decode attention: rope_kv_cache (rotary embedding of q and k, k and v written into the
// caches) and attention_cached (causal softmax(q k^T) v over the cache rows).
//
// attention_cached runs a query row per task: its scores against contiguous cache rows (dot
// products in lanes, f32 for f32/f16/bf16, f64 for f64; 16-bit rows converted a block at a time),
// the softmax over them with the row maximum subtracted, then the probability-weighted sum of
// the value rows. Query heads of one kv head read the same cache rows from the shared caches.
#include <algorithm>
#include <vector>

#include "cpu/cpu_device.h"
#include "cpu/row_math.h"

namespace wick::cpu {

using backend::CacheView;
using backend::RopeTableViews;
using backend::Storage;
using backend::View;

namespace {

// Cache rows converted to the compute type per block (16-bit caches).
constexpr int64_t kKeyBlock = 64;

// The value of the one-element u32 tensor pos, checked against the cache: pos + t <= max_seq.
int64_t read_pos(View pos, int64_t t, int64_t max_seq, const char* op) {
  const int64_t p = data_of<uint32_t>(pos)[pos.layout.start_offset];
  if (p > max_seq - t)
    fail(ErrorKind::OutOfRange, op, "position ", p, " + ", t, " tokens exceeds the cache of ",
         max_seq, " positions");
  return p;
}

// Dot product of two contiguous rows in lanes (vectorised; the order differs from a plain loop).
template <typename C>
WICK_ROW_INLINE C dot_row(const C* a, const C* b, int64_t n) {
  constexpr int kLanes = sizeof(C) == 4 ? 16 : 8;
  C lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; k++) lane[k] += a[i + k] * b[i + k];
  C s = 0;
  for (; i < n; i++) s += a[i] * b[i];
  for (int k = 0; k < kLanes; k++) s += lane[k];
  return s;
}

// scores[j] = q . keys[j] for `len` contiguous rows of d.
template <typename C>
WICK_ROW_INLINE void score_rows(const C* q, const C* keys, int64_t len, int64_t d, C* scores) {
  for (int64_t j = 0; j < len; j++) scores[j] = dot_row(q, keys + j * d, d);
}

// acc += sum_j p[j] * values[j] for `len` contiguous rows of d.
template <typename C>
WICK_ROW_INLINE void accumulate_rows(const C* p, const C* values, int64_t len, int64_t d, C* acc) {
  for (int64_t j = 0; j < len; j++) {
    const C w = p[j];
    const C* v = values + j * d;
    for (int64_t e = 0; e < d; e++) acc[e] += w * v[e];
  }
}

// The f32 loops are compiled for the host's vector width (row_math.h).
WICK_MULTIVERSION void score_rows_f32(const float* q, const float* keys, int64_t len, int64_t d,
                                      float* scores) {
  score_rows(q, keys, len, d, scores);
}
WICK_MULTIVERSION void accumulate_rows_f32(const float* p, const float* values, int64_t len,
                                           int64_t d, float* acc) {
  accumulate_rows(p, values, len, d, acc);
}
WICK_MULTIVERSION void softmax_weights_f32(float* s, int64_t n, double* sum) {
  const float m = extreme_of<true>(s, n);
  exp_shifted(s, m, s, n);
  *sum = sum_plain(s, n);
}
void score_rows_any(const float* q, const float* k, int64_t len, int64_t d, float* s) {
  score_rows_f32(q, k, len, d, s);
}
void score_rows_any(const double* q, const double* k, int64_t len, int64_t d, double* s) {
  score_rows(q, k, len, d, s);
}
void accumulate_rows_any(const float* p, const float* v, int64_t len, int64_t d, float* acc) {
  accumulate_rows_f32(p, v, len, d, acc);
}
void accumulate_rows_any(const double* p, const double* v, int64_t len, int64_t d, double* acc) {
  accumulate_rows(p, v, len, d, acc);
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

// `len` contiguous rows of d elements as compute-type values: the rows themselves when T is
// its own compute type, else converted into buf.
template <typename T>
const compute_t<T>* cache_rows(const T* rows, int64_t len, int64_t d, compute_t<T>* buf) {
  return row_view(rows, 1, len * d, buf);
}

// Per-thread buffers of one attention task.
template <typename C>
struct AttendBuffers {
  std::vector<C> q, scores, acc, rows;
  AttendBuffers(int64_t d, int64_t max_seq)
      : q(static_cast<size_t>(d)),
        scores(static_cast<size_t>(max_seq)),
        acc(static_cast<size_t>(d)),
        rows(static_cast<size_t>(kKeyBlock * d)) {}
};

// out (d) = softmax(q . keys[j], j < n) weighted sum of values[j]; keys/values: n contiguous
// rows of d elements.
template <typename T>
void attend(const compute_t<T>* q, const T* keys, const T* values, int64_t n, int64_t d,
            AttendBuffers<compute_t<T>>& buf, T* out) {
  using C = compute_t<T>;
  C* scores = buf.scores.data();
  for (int64_t j = 0; j < n; j += kKeyBlock) {
    const int64_t len = std::min(kKeyBlock, n - j);
    score_rows_any(q, cache_rows(keys + j * d, len, d, buf.rows.data()), len, d, scores + j);
  }
  const double sum = softmax_weights_any(scores, n);
  C* acc = buf.acc.data();
  std::fill(acc, acc + d, C(0));
  for (int64_t j = 0; j < n; j += kKeyBlock) {
    const int64_t len = std::min(kKeyBlock, n - j);
    accumulate_rows_any(scores + j, cache_rows(values + j * d, len, d, buf.rows.data()), len, d,
                        acc);
  }
  const C inv = static_cast<C>(1.0 / sum);
  for (int64_t e = 0; e < d; e++) acc[e] *= inv;
  store_row<T>(acc, d, out);
}

}  // namespace

// Rows of work: the b*h*t rows of q (rotated into q_out), then the b*kvh*t rows of k (rotated
// into k_cache), then those of v (copied into v_cache).
void CpuDevice::rope_kv_cache(View q, View k, View v, const CacheView& k_cache,
                              const CacheView& v_cache, const RopeTableViews& tables, View pos,
                              bool interleaved, Storage& q_out) {
  const char* op = "rope_kv_cache";
  const Layout &lq = q.layout, &lk = k.layout, &lv = v.layout;
  WICK_ASSERT(lq.rank() == 4 && lk.rank() == 4 && lv.shape == lk.shape);
  const int64_t b = lq.shape[0], h = lq.shape[1], t = lq.shape[2], d = lq.shape[3];
  const int64_t kvh = lk.shape[1], half = d / 2, max_seq = k_cache.layout.shape[2];
  WICK_ASSERT(k_cache.layout.is_contiguous() && v_cache.layout.is_contiguous());
  check_span(k_cache.layout, k_cache.storage, op);
  check_span(v_cache.layout, v_cache.storage, op);
  const int64_t p = read_pos(pos, t, max_seq, op);
  dispatch_float(q.storage.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    T* qo = cpu_storage(q_out).as<T>();
    T* kc = cpu_storage(k_cache.storage).as<T>() + k_cache.layout.start_offset;
    T* vc = cpu_storage(v_cache.storage).as<T>() + v_cache.layout.start_offset;
    const int64_t nq = b * h * t, nk = b * kvh * t;
    // The destination row of cache row (bi, hi, ti).
    auto cache_row = [&](T* cache, int64_t bi, int64_t hi, int64_t ti) {
      return cache + ((bi * kvh + hi) * max_seq + p + ti) * d;
    };
    auto table_row = [&](View tab, int64_t ti, C* buf) {
      const Layout& l = tab.layout;
      return row_view(data_of<T>(tab) + l.start_offset + (p + ti) * l.strides[0], l.strides[1],
                      half, buf);
    };
    parallel_for(nq + 2 * nk, std::max<int64_t>(1, kParallelGrain / (2 * d)),
                 [&](int64_t rb, int64_t re) {
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
                     if (r >= nq + nk) {  // v: copied as stored
                       T* dst = cache_row(vc, bi, hi, ti);
                       for (int64_t e = 0; e < d; e++) dst[e] = xp[e * lx.strides[3]];
                       continue;
                     }
                     const C* xv = row_view(xp, lx.strides[3], d, xbuf.data());
                     const C* cv = table_row(is_q ? tables.cos_q : tables.cos_k, ti, cbuf.data());
                     const C* sv = table_row(is_q ? tables.sin_q : tables.sin_k, ti, sbuf.data());
                     T* dst = is_q ? qo + r * d : cache_row(kc, bi, hi, ti);
                     if constexpr (std::is_same_v<T, C>) {
                       rope_row(xv, cv, sv, half, interleaved, dst);
                     } else {
                       rope_row(xv, cv, sv, half, interleaved, ybuf.data());
                       store_row<T>(ybuf.data(), d, dst);
                     }
                   }
                 });
  });
}

void CpuDevice::attention_cached(View q, View k_cache, View v_cache, View pos, Storage& dst) {
  const char* op = "attention_cached";
  const Layout& lq = q.layout;
  WICK_ASSERT(lq.rank() == 4 && k_cache.layout.rank() == 4);
  const int64_t b = lq.shape[0], h = lq.shape[1], t = lq.shape[2], d = lq.shape[3];
  const int64_t kvh = k_cache.layout.shape[1], max_seq = k_cache.layout.shape[2], g = h / kvh;
  WICK_ASSERT(k_cache.layout.is_contiguous() && v_cache.layout.is_contiguous());
  check_span(k_cache.layout, k_cache.storage, op);
  check_span(v_cache.layout, v_cache.storage, op);
  const int64_t p = read_pos(pos, t, max_seq, op);
  dispatch_float(q.storage.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const T* qp = data_of<T>(q) + lq.start_offset;
    const T* kc = data_of<T>(k_cache) + k_cache.layout.start_offset;
    const T* vc = data_of<T>(v_cache) + v_cache.layout.start_offset;
    T* out = cpu_storage(dst).as<T>();
    // A task per query row; its cost grows with the rows it attends to (about pos + t).
    const int64_t cost = std::max<int64_t>(1, 4 * (p + t) * d);
    parallel_for(b * h * t, std::max<int64_t>(1, kParallelGrain / cost),
                 [&](int64_t rb, int64_t re) {
                   AttendBuffers<C> buf(d, max_seq);
                   for (int64_t r = rb; r < re; r++) {
                     const int64_t bi = r / (h * t), hi = r / t % h, ti = r % t;
                     const C* qv =
                         row_view(qp + bi * lq.strides[0] + hi * lq.strides[1] + ti * lq.strides[2],
                                  lq.strides[3], d, buf.q.data());
                     const int64_t first = (bi * kvh + hi / g) * max_seq * d;
                     attend<T>(qv, kc + first, vc + first, p + ti + 1, d, buf, out + r * d);
                   }
                 });
  });
}

}  // namespace wick::cpu
