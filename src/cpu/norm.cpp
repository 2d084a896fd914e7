// CPU softmax / log-softmax over the last dim, rms_norm, layer_norm and rotary embeddings.
//
// Each row is read as a contiguous compute-type array (f16/bf16 rows converted to f32 in a
// per-thread buffer, contiguous f32/f64 rows used in place), computed with row_math.h's
// vectorised loops, and written to dst. Reductions inside a row accumulate in f64 (sum_f32's
// blocked f32 lanes for f32 rows), so statistics stay accurate on long rows.
#include <cmath>
#include <vector>

#include "cpu/cpu_device.h"
#include "cpu/fused_rows.h"
#include "cpu/row_math.h"

namespace wick::cpu {

using backend::Storage;
using backend::View;

namespace {

inline float exp_c(float v) {
  return exp_f32(v);
}
inline double exp_c(double v) {
  return std::exp(v);
}

// Runs kernel(v, y, n, row) over every row of x's last dim: v is the row as a contiguous compute
// array, y (n elements) receives the result, which is then stored to dst's row. y may be v.
template <typename T, typename K>
void map_rows(View x, Storage& dst, int64_t cost_per_element, K&& kernel) {
  using C = compute_t<T>;
  const LastDimRows rows = last_dim_rows(x.layout);
  const T* xp = data_of<T>(x);
  T* out = cpu_storage(dst).as<T>();
  const int64_t n = rows.n;
  parallel_rows(rows, cost_per_element, [&](int64_t b, int64_t e) {
    std::vector<C> buf;
    if (!std::is_same_v<T, C> || rows.stride != 1) buf.resize(static_cast<size_t>(n));
    visit_rows(rows, b, e, [&](int64_t row, int64_t off) {
      T* dst_row = out + row * n;
      const C* v = row_view(xp + off, rows.stride, n, buf.data());
      if constexpr (std::is_same_v<T, C>) {
        kernel(v, dst_row, n);
      } else {
        kernel(v, buf.data(), n);
        store_row<T>(buf.data(), n, dst_row);
      }
    });
  });
}

template <typename C>
WICK_ROW_INLINE void softmax_row(const C* v, C* y, int64_t n) {
  const C m = extreme_of<true>(v, n);
  exp_shifted(v, m, y, n);
  const C inv = static_cast<C>(1.0 / sum_plain(y, n));
  for (int64_t j = 0; j < n; j++) y[j] *= inv;
}

template <typename C>
WICK_ROW_INLINE void log_softmax_row(const C* v, C* y, int64_t n) {
  const C m = extreme_of<true>(v, n);
  C e[kRowChunk];
  double sum = 0;
  for (int64_t b = 0; b < n; b += kRowChunk) {
    const int64_t len = std::min(kRowChunk, n - b);
    exp_shifted(v + b, m, e, len);
    sum += sum_plain(e, len);
  }
  const C log_sum = static_cast<C>(std::log(sum));
  for (int64_t j = 0; j < n; j++) y[j] = (v[j] - m) - log_sum;
}

// The f32 rows (also those of f16/bf16) are exp-bound: compiled for the host's vector width.
WICK_MULTIVERSION void softmax_row_f32(const float* v, float* y, int64_t n) {
  softmax_row(v, y, n);
}
WICK_MULTIVERSION void log_softmax_row_f32(const float* v, float* y, int64_t n) {
  log_softmax_row(v, y, n);
}
void softmax_row_any(const float* v, float* y, int64_t n) {
  softmax_row_f32(v, y, n);
}
void softmax_row_any(const double* v, double* y, int64_t n) {
  softmax_row(v, y, n);
}
void log_softmax_row_any(const float* v, float* y, int64_t n) {
  log_softmax_row_f32(v, y, n);
}
void log_softmax_row_any(const double* v, double* y, int64_t n) {
  log_softmax_row(v, y, n);
}

// A rank-1 parameter (alpha, beta) as a contiguous compute-type vector.
template <typename T>
std::vector<compute_t<T>> load_param(View p) {
  std::vector<compute_t<T>> out(static_cast<size_t>(p.layout.numel()));
  load_row(data_of<T>(p) + p.layout.start_offset, p.layout.strides[0], p.layout.numel(),
           out.data());
  return out;
}

}  // namespace

// Softmax and log-softmax subtract the row max first, so exp never overflows. A row holding
// NaN comes out all NaN, as does a row of -inf only (0/0), as in PyTorch.
void CpuDevice::softmax_last_dim(View x, Storage& dst) {
  dispatch_float(x.storage.dtype(), "softmax_last_dim", [&](auto zero) {
    using T = decltype(zero);
    map_rows<T>(x, dst, 8, [](const auto* v, auto* y, int64_t n) { softmax_row_any(v, y, n); });
  });
}

void CpuDevice::log_softmax_last_dim(View x, Storage& dst) {
  dispatch_float(x.storage.dtype(), "log_softmax", [&](auto zero) {
    using T = decltype(zero);
    map_rows<T>(x, dst, 8, [](const auto* v, auto* y, int64_t n) { log_softmax_row_any(v, y, n); });
  });
}

namespace {

template <typename C>
void rms_norm_row_any(const C* v, const C* a, int64_t n, double eps, C* y) {
  const double mean_sq = sum_mapped(v, n, [](C e) { return e * e; }) / static_cast<double>(n);
  const C scale = static_cast<C>(1.0 / std::sqrt(mean_sq + eps));
  for (int64_t j = 0; j < n; j++) y[j] = v[j] * scale * a[j];
}

}  // namespace

void rms_norm_row(const float* x, const float* alpha, int64_t n, double eps, float* y) {
  rms_norm_row_any(x, alpha, n, eps, y);
}

void CpuDevice::rms_norm(View x, View alpha, double eps, Storage& dst) {
  WICK_ASSERT(alpha.layout.rank() == 1 && alpha.layout.shape[0] == x.layout.shape.dims().back());
  dispatch_float(x.storage.dtype(), "rms_norm", [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const std::vector<C> a = load_param<T>(alpha);
    map_rows<T>(x, dst, 2,
                [&](const C* v, C* y, int64_t n) { rms_norm_row_any(v, a.data(), n, eps, y); });
  });
}

// Two passes over the (cached) row: the mean, then the biased variance around it, which avoids
// the cancellation of E[x^2] - E[x]^2.
void CpuDevice::layer_norm(View x, View alpha, View beta, double eps, Storage& dst) {
  WICK_ASSERT(alpha.layout.rank() == 1 && alpha.layout.shape[0] == x.layout.shape.dims().back());
  WICK_ASSERT(beta.layout.rank() == 1 && beta.layout.shape[0] == x.layout.shape.dims().back());
  dispatch_float(x.storage.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const std::vector<C> a = load_param<T>(alpha), b = load_param<T>(beta);
    map_rows<T>(x, dst, 3, [&](const C* v, C* y, int64_t n) {
      const C mean = static_cast<C>(sum_plain(v, n) / static_cast<double>(n));
      const double var = sum_mapped(v, n, [mean](C e) { return (e - mean) * (e - mean); }) /
                         static_cast<double>(n);
      const C scale = static_cast<C>(1.0 / std::sqrt(var + eps));
      for (int64_t j = 0; j < n; j++)
        y[j] = (v[j] - mean) * scale * a[static_cast<size_t>(j)] + b[static_cast<size_t>(j)];
    });
  });
}

// x: (b, h, t, d) strided; cos/sin: (b, t, d/2) strided (stride-0 b when shared); dst contiguous.
// rope rotates the pairs (i, i + d/2), rope_i the pairs (2i, 2i + 1), by angle i's cos/sin.
void CpuDevice::rope(View x, View cos, View sin, bool interleaved, Storage& dst) {
  const char* name = interleaved ? "rope_i" : "rope";
  const Layout& lx = x.layout;
  WICK_ASSERT(lx.rank() == 4 && lx.shape[3] % 2 == 0);
  WICK_ASSERT(cos.layout.shape == Shape({lx.shape[0], lx.shape[2], lx.shape[3] / 2}));
  WICK_ASSERT(sin.layout.shape == cos.layout.shape);
  dispatch_float(x.storage.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const int64_t h = lx.shape[1], t = lx.shape[2], d = lx.shape[3], half = d / 2;
    const int64_t rows = lx.shape[0] * h * t;
    const T* xp = data_of<T>(x);
    const T* cp = data_of<T>(cos);
    const T* sp = data_of<T>(sin);
    T* out = cpu_storage(dst).as<T>();
    const auto& xs = lx.strides;
    const auto& cs = cos.layout.strides;
    const auto& ss = sin.layout.strides;
    parallel_for(rows, std::max<int64_t>(1, kParallelGrain / (2 * d)), [&](int64_t rb, int64_t re) {
      std::vector<C> xbuf(static_cast<size_t>(d)), ybuf(static_cast<size_t>(d));
      std::vector<C> cbuf(static_cast<size_t>(half)), sbuf(static_cast<size_t>(half));
      for (int64_t r = rb; r < re; r++) {
        const int64_t bi = r / (h * t), hi = r / t % h, ti = r % t;
        const C* xv = row_view(xp + lx.start_offset + bi * xs[0] + hi * xs[1] + ti * xs[2], xs[3],
                               d, xbuf.data());
        const C* cv = row_view(cp + cos.layout.start_offset + bi * cs[0] + ti * cs[1], cs[2], half,
                               cbuf.data());
        const C* sv = row_view(sp + sin.layout.start_offset + bi * ss[0] + ti * ss[1], ss[2], half,
                               sbuf.data());
        T* dst_row = out + r * d;
        C* y;
        if constexpr (std::is_same_v<T, C>)
          y = dst_row;
        else
          y = ybuf.data();
        rope_row(xv, cv, sv, half, interleaved, y);
        if constexpr (!std::is_same_v<T, C>) store_row<T>(y, d, dst_row);
      }
    });
  });
}

}  // namespace wick::cpu
