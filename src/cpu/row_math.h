// Contiguous-row arithmetic shared by the CPU reduction, normalisation, rope and sort kernels.
//
// Kernels compute in a "compute type": float for f32/f16/bf16, double for f64, the type itself for
// integers. A strided or 16-bit row is first converted into a small contiguous buffer of the
// compute type (load_row), so the hot loops only ever see contiguous float/double arrays. Every
// loop here is written branch-free (selects, fixed-width lane arrays) so the compiler vectorises
// it for the baseline ISA; no -march flags are needed.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cpu/strided.h"
#include "wick/dtype.h"
#include "wick/error.h"

namespace wick::cpu {

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, f16> || std::is_same_v<T, bf16>, float, T>;

template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<compute_t<T>>;

// Marks a function to be compiled for several x86-64 levels (AVX-512, AVX2+FMA, baseline) and
// picked when the program loads (GCC target_clones through an ifunc), so builds stay portable
// (no -march) yet use the host's vector width. For instruction-bound loops (exp): 4.5x faster
// with AVX-512 than with baseline SSE2 on the build machine. Elsewhere: one baseline version.
// ThreadSanitizer builds take the baseline: its runtime is not up yet when ifunc resolvers run.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__)
#define WICK_MULTIVERSION \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define WICK_MULTIVERSION
#endif

// Row helpers are forced inline: GCC does not inline a function compiled for the baseline into
// a WICK_MULTIVERSION clone, and a call would leave the loop at baseline width.
#define WICK_ROW_INLINE [[gnu::always_inline]] inline

// Elements per converted chunk and per f32 summation block (see sum_f32).
inline constexpr int64_t kRowChunk = 1024;

// c ? a : b through bit masks. gcc (under its default -ftrapping-math) sinks FP arithmetic used
// by one arm of a ?: into that arm, and then cannot vectorise the loop; a mask keeps it flat.
template <typename T>
WICK_ROW_INLINE T select(bool c, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  const U m = U(0) - static_cast<U>(c);
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & ~m)));
}

// ---- 16-bit float conversions that vectorise ---------------------------------------------------
// Same results as f16/bf16's own conversions (tests/conformance/test_row_math.cpp checks this).

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t shifted = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent+mantissa in place
  const uint32_t exp = shifted & 0x0f800000u;
  const uint32_t normal = shifted + 0x38000000u;   // rebias 15 -> 127
  const uint32_t inf_nan = shifted + 0x70000000u;  // exponent 31 -> 255
  // Subnormal: build 2^-14 * (1 + m/1024) exactly, then subtract 2^-14 (no denormal arithmetic).
  const float sub = std::bit_cast<float>(shifted + 0x38800000u) - std::bit_cast<float>(0x38800000u);
  uint32_t bits = select(exp == 0x0f800000u, inf_nan, normal);
  bits = select(exp == 0u, std::bit_cast<uint32_t>(sub), bits);
  return std::bit_cast<float>(bits | sign);
}

// Round to nearest even, NaN stays NaN (quiet), overflow goes to inf.
inline uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  // Normal result: rebias the exponent, round the 13 dropped bits to nearest even.
  const uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  // Subnormal result: adding 0.5 puts the f16 subnormal step (2^-24) at the f32 ulp, so the
  // hardware addition rounds exactly as f16 does.
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - 0x3f000000u;
  const uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  uint32_t h = select(a < 0x38800000u, sub, normal);
  h = select(a >= 0x477ff000u, 0x7c00u, h);
  h = select(a > 0x7f800000u, nan, h);
  return static_cast<uint16_t>(h | sign);
}

template <typename T>
inline compute_t<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, f16>)
    return half_to_float(v.bits);
  else if constexpr (std::is_same_v<T, bf16>)
    return std::bit_cast<float>(static_cast<uint32_t>(v.bits) << 16);
  else
    return v;
}

// Compute type -> storage type, rounding to nearest even for the 16-bit floats.
template <typename T>
inline T from_compute(compute_t<T> v) {
  if constexpr (std::is_same_v<T, f16>)
    return f16::from_bits(float_to_half(v));
  else if constexpr (std::is_same_v<T, bf16>)
    return bf16(v);
  else
    return v;
}

// out[j] = to_compute(p[j * stride]), j < n.
template <typename T>
inline void load_row(const T* p, int64_t stride, int64_t n, compute_t<T>* out) {
  if (stride == 1)
    for (int64_t j = 0; j < n; j++) out[j] = to_compute(p[j]);
  else
    for (int64_t j = 0; j < n; j++) out[j] = to_compute(p[j * stride]);
}

// The row as a contiguous compute-type array: p itself when it already is one, else `buf`
// (at least n elements) after conversion.
template <typename T>
inline const compute_t<T>* row_view(const T* p, int64_t stride, int64_t n, compute_t<T>* buf) {
  if constexpr (std::is_same_v<T, compute_t<T>>)
    if (stride == 1) return p;
  load_row(p, stride, n, buf);
  return buf;
}

template <typename T>
inline void store_row(const compute_t<T>* y, int64_t n, T* out) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    if (y != out) std::memcpy(out, y, static_cast<size_t>(n) * sizeof(T));
  } else {
    for (int64_t j = 0; j < n; j++) out[j] = from_compute<T>(y[j]);
  }
}

// ---- sums -----------------------------------------------------------------------------------
// f32 rows are summed in 16 f32 lanes over blocks of kRowChunk elements and the block sums are
// added in f64: as fast as plain f32 lanes (the loop is load-bound) yet the error no longer grows
// with the row length (1e6 uniform values: rel. error 2e-9, against 2e-6 for f32 lanes; f64 lanes
// are exact but 35% slower in cache). f(v) maps each element first (squares for rms_norm).
template <typename F>
WICK_ROW_INLINE double sum_f32(const float* p, int64_t n, F&& f) {
  double total = 0;
  for (int64_t b = 0; b < n; b += kRowChunk) {
    const int64_t e = std::min(n, b + kRowChunk);
    float lane[16] = {};
    int64_t i = b;
    for (; i + 16 <= e; i += 16)
      for (int k = 0; k < 16; k++) lane[k] += f(p[i + k]);
    float s = 0;
    for (; i < e; i++) s += f(p[i]);
    for (int k = 0; k < 16; k++) s += lane[k];
    total += static_cast<double>(s);
  }
  return total;
}

template <typename F>
WICK_ROW_INLINE double sum_f64(const double* p, int64_t n, F&& f) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) lane[k] += f(p[i + k]);
  double s = 0;
  for (; i < n; i++) s += f(p[i]);
  for (int k = 0; k < 8; k++) s += lane[k];
  return s;
}

// Sum of f(x) over a contiguous float or double array, in double.
template <typename C, typename F>
WICK_ROW_INLINE double sum_mapped(const C* p, int64_t n, F&& f) {
  if constexpr (std::is_same_v<C, float>)
    return sum_f32(p, n, f);
  else
    return sum_f64(p, n, f);
}
template <typename C>
WICK_ROW_INLINE double sum_plain(const C* p, int64_t n) {
  return sum_mapped(p, n, [](C v) { return v; });
}

// ---- max / min ------------------------------------------------------------------------------
// NaN wins (propagates) in both directions, as in PyTorch.
template <bool kMax, typename C>
WICK_ROW_INLINE C pick_extreme(C best, C v) {
  bool take = kMax ? v > best : v < best;
  if constexpr (std::is_floating_point_v<C>) take = take | (v != v);
  return take ? v : best;
}

template <bool kMax, typename C>
inline constexpr C extreme_identity() {
  if constexpr (std::is_floating_point_v<C>)
    return kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  else
    return kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
}

// Lanes of the max/min and search loops. gcc vectorises an element-wise update of a lane array
// this long (as a loop over lanes), not a short one (unrolled into scalar reductions).
inline constexpr int kScanLanes = 64;

// Max (kMax) or min of a contiguous array, NaN if any element is NaN; identity when n == 0.
// Plain selects (max/min instructions) plus separate lanes that catch NaNs: one select that
// also takes NaN does not vectorise.
template <bool kMax, typename C>
WICK_ROW_INLINE C extreme_of(const C* p, int64_t n) {
  C lane[kScanLanes], nan[kScanLanes];  // nan[k]: 0, or a NaN seen in lane k
  for (int k = 0; k < kScanLanes; k++) {
    lane[k] = extreme_identity<kMax, C>();
    nan[k] = 0;
  }
  int64_t i = 0;
  for (; i + kScanLanes <= n; i += kScanLanes) {
    for (int k = 0; k < kScanLanes; k++) {
      const C v = p[i + k];
      lane[k] = (kMax ? v > lane[k] : v < lane[k]) ? v : lane[k];
      if constexpr (std::is_floating_point_v<C>) nan[k] = v != v ? v : nan[k];
    }
  }
  C best = extreme_identity<kMax, C>();
  for (; i < n; i++) best = pick_extreme<kMax>(best, p[i]);
  for (int k = 0; k < kScanLanes; k++) best = pick_extreme<kMax>(best, lane[k]);
  for (int k = 0; k < kScanLanes; k++) best = nan[k] != nan[k] ? nan[k] : best;
  return best;
}

// Index of the first element equal to `target` (the first NaN when target is NaN), or n.
// Tests a block of lanes without branching, then finds the element inside the block.
template <typename C>
WICK_ROW_INLINE int64_t find_first(const C* p, int64_t n, C target) {
  const bool nan = target != target;
  int64_t i = 0;
  for (; i + kScanLanes <= n; i += kScanLanes) {
    int hits = 0;
    if (nan)
      for (int k = 0; k < kScanLanes; k++) hits += p[i + k] != p[i + k];
    else
      for (int k = 0; k < kScanLanes; k++) hits += p[i + k] == target;
    if (hits) break;
  }
  for (; i < n; i++)
    if (nan ? p[i] != p[i] : p[i] == target) return i;
  return n;
}

// ---- exp ------------------------------------------------------------------------------------
// exp for float arrays, vectorisable: exp(x) = 2^k * exp(r), k = round(x / ln 2), |r| <= ln2 / 2,
// exp(r) by its degree-7 Taylor polynomial (truncation < 3e-8 relative, about 1 ulp overall).
// NaN -> NaN, x > 88.72 -> inf, x < -87.3 -> 0 (true value below 1.2e-38: flushed, as denormal
// results would take the slow path of x86 multipliers).
WICK_ROW_INLINE float exp_f32(float x) {
  // Clamp; NaN -> -87.3, so the int conversion below is defined. Above the clamp, x in
  // (88.72, 89] overflows to inf through 2^k by itself.
  float xc = select(x > -87.3f, x, -87.3f);
  xc = select(xc < 89.0f, xc, 89.0f);
  const float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float k = (xc * 1.44269504f + round_magic) - round_magic;
  // ln 2 split so k * ln2_hi is exact for |k| < 2^9.
  const float r = (xc - k * 0.693145752f) - k * 1.42860677e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^k in two factors: k reaches 128 near the overflow threshold, beyond one f32 exponent.
  const int32_t ki = static_cast<int32_t>(k), k1 = ki >> 1;
  const float s1 = std::bit_cast<float>(static_cast<uint32_t>(k1 + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<uint32_t>(ki - k1 + 127) << 23);
  const float y = p * s1 * s2;
  // Mask selects (see select): the arms hold computed values.
  return select(x != x, x, select(x < -87.3f, 0.0f, y));
}

// y[j] = exp(v[j] - shift) for float arrays.
WICK_ROW_INLINE void exp_shifted(const float* v, float shift, float* y, int64_t n) {
  for (int64_t j = 0; j < n; j++) y[j] = exp_f32(v[j] - shift);
}
WICK_ROW_INLINE void exp_shifted(const double* v, double shift, double* y, int64_t n) {
  for (int64_t j = 0; j < n; j++) y[j] = std::exp(v[j] - shift);
}

// ---- rotary embeddings -----------------------------------------------------------------------
// y = x (2 * half elements) with each pair rotated by angle i's cos c[i] and sin s[i]: the pairs
// (2i, 2i + 1) when interleaved (rope_i), else (i, i + half) (rope). The one definition of the
// arithmetic, so that rope and rope_kv_cache agree bit for bit. y must not alias x.
template <typename C>
WICK_ROW_INLINE void rope_row(const C* x, const C* c, const C* s, int64_t half, bool interleaved,
                              C* y) {
  if (interleaved) {
    for (int64_t i = 0; i < half; i++) {
      const C x1 = x[2 * i], x2 = x[2 * i + 1];
      y[2 * i] = x1 * c[i] - x2 * s[i];
      y[2 * i + 1] = x1 * s[i] + x2 * c[i];
    }
  } else {
    for (int64_t i = 0; i < half; i++) {
      const C x1 = x[i], x2 = x[i + half];
      y[i] = x1 * c[i] - x2 * s[i];
      y[i + half] = x1 * s[i] + x2 * c[i];
    }
  }
}

// fn(T{}) for a float dtype T; Error(DType) naming `op` otherwise.
template <typename Fn>
void dispatch_float(DType dt, const char* op, Fn&& fn) {
  dispatch_dtype(dt, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (is_float_v<T>)
      fn(zero);
    else
      fail(ErrorKind::DType, op, "needs a float dtype, got ", dt);
  });
}

// ---- the rows of the last dim ----------------------------------------------------------------

// A view seen as rows of its last dim: `rows` rows of `n` elements at `stride`, row r being the
// r-th in row-major order.
struct LastDimRows {
  StridedPlan<1> plan;  // over the leading dims
  int64_t rows = 0, n = 0, stride = 1;
};

inline LastDimRows last_dim_rows(const Layout& l) {
  std::vector<int64_t> lead = l.shape.dims();
  LastDimRows r;
  r.n = lead.back();
  r.stride = l.strides.back();
  lead.back() = 1;
  const Layout lead_layout(Shape(lead), l.strides, l.start_offset);
  r.plan = make_plan<1>(lead_layout.shape, {&lead_layout});
  r.rows = r.plan.numel;
  return r;
}

// Calls f(row, offset of its first element) for rows [b, e).
template <typename F>
void visit_rows(const LastDimRows& r, int64_t b, int64_t e, F&& f) {
  int64_t row = b;
  visit_range(r.plan, b, e,
              [&](const std::array<int64_t, 1>& o, int64_t n, const std::array<int64_t, 1>& st) {
                for (int64_t j = 0; j < n; j++) f(row++, o[0] + j * st[0]);
              });
}

// Splits rows over threads so each thread gets about kParallelGrain * cost_per_element work.
// f(b, e) handles rows [b, e) (allocate per-thread buffers there, then call visit_rows).
template <typename F>
void parallel_rows(const LastDimRows& r, int64_t cost_per_element, F&& f) {
  const int64_t per_row = std::max<int64_t>(1, r.n * cost_per_element);
  parallel_for(r.rows, std::max<int64_t>(1, kParallelGrain / per_row), f);
}

}  // namespace wick::cpu
