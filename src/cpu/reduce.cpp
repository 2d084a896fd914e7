// CPU reductions: sum, mean, max, min over any set of dims; argmax / argmin over one dim.
//
// The input's dims are split into kept dims (one output element each) and reduced dims; each group
// is collapsed into a StridedPlan. Two loop orders:
//  - row mode: per output element, walk its reduced elements with a contiguous-row kernel;
//  - column mode, when a kept dim is closer to contiguous than every reduced dim (a sum over dim 0
//    of a row-major matrix): stream the input rows and accumulate a tile of outputs at once.
// Large inputs run in parallel over outputs; with fewer outputs than threads the reduced range is
// split instead, and the per-thread partials are combined in index order.
//
// Semantics: f16/bf16 compute in f32; f32 sums accumulate in blocked f32 lanes with f64 block
// totals (see sum_f32); a mean divides the sum by the count before its one rounding to the
// dtype; integer sums wrap in the dtype (modular arithmetic, as candle and GPU integer adds do,
// and independent of summation order). max/min propagate NaN; argmax/argmin return the first
// index of the extreme, a NaN counting as the extreme (as PyTorch).
#include <algorithm>
#include <numeric>

#include "cpu/cpu_device.h"
#include "cpu/row_math.h"
#include "cpu/strided.h"

namespace wick::cpu {

using backend::ReduceOp;
using backend::Storage;
using backend::View;

namespace {

// Outputs accumulated together in column mode (acc + block buffers stay in L1).
constexpr int64_t kTile = 1024;
// f32 column sums are flushed to f64 every kColumnBlock rows (same error argument as sum_f32).
constexpr int kColumnBlock = 64;

template <typename T>
struct wrap_type {  // integer sums wrap in the dtype's width
  using type = std::make_unsigned_t<T>;
};
template <>
struct wrap_type<float> {
  using type = double;
};
template <>
struct wrap_type<double> {
  using type = double;
};
template <>
struct wrap_type<f16> {
  using type = double;
};
template <>
struct wrap_type<bf16> {
  using type = double;
};

// f32 rows (f16/bf16 ones too, after conversion) are compare-bound in cache: built for the
// host's vector width (3x faster with AVX-512 than with SSE2). Sums are load-bound: no gain.
WICK_MULTIVERSION float max_row_f32(const float* p, int64_t n) {
  return extreme_of<true>(p, n);
}
WICK_MULTIVERSION float min_row_f32(const float* p, int64_t n) {
  return extreme_of<false>(p, n);
}

template <bool kMax, typename C>
C extreme_row(const C* p, int64_t n) {
  if constexpr (std::is_same_v<C, float>)
    return kMax ? max_row_f32(p, n) : min_row_f32(p, n);
  else
    return extreme_of<kMax>(p, n);
}

// ---- reducers -------------------------------------------------------------------------------
// A reducer defines the partial result of part of a reduction (Acc), how to compute it over a
// strided row, how to merge two (the second covering later indices), how to turn it into the
// output element, and `Columns`: the column-mode accumulator of a tile of outputs.

template <typename T>
struct SumReducer {
  using Elem = T;
  using Out = T;
  using C = compute_t<T>;
  using Acc = typename wrap_type<T>::type;

  double divisor = 1;  // the reduced count for a mean: divided before the one rounding

  static Acc identity() { return Acc(0); }
  static void merge(Acc& a, Acc b) { a = static_cast<Acc>(a + b); }
  Out finish(Acc a) const {
    if constexpr (is_float_v<T>)
      return from_f64<T>(a / divisor);
    else
      return static_cast<T>(a);  // modular
  }

  static Acc row(const T* p, int64_t n, int64_t st, int64_t) {
    if constexpr (is_float_v<T>) {
      C buf[kRowChunk];
      double s = 0;
      for (int64_t b = 0; b < n; b += kRowChunk) {
        const int64_t len = std::min(kRowChunk, n - b);
        s += sum_plain(row_view(p + b * st, st, len, buf), len);
      }
      return s;
    } else {
      Acc lane[16] = {};
      int64_t i = 0;
      if (st == 1)
        for (; i + 16 <= n; i += 16)
          for (int k = 0; k < 16; k++)
            lane[k] = static_cast<Acc>(lane[k] + static_cast<Acc>(p[i + k]));
      Acc s = 0;
      for (; i < n; i++) s = static_cast<Acc>(s + static_cast<Acc>(p[i * st]));
      for (int k = 0; k < 16; k++) s = static_cast<Acc>(s + lane[k]);
      return s;
    }
  }

  struct Columns {
    Acc acc[kTile];
    C block[kTile];  // f32 partial of the current block (float types only)
    C buf[kTile];
    int count = 0;
    int64_t len = 0;

    void reset(int64_t n) {
      len = n;
      count = 0;
      std::fill(acc, acc + n, Acc(0));
      if constexpr (std::is_same_v<C, float>) std::fill(block, block + n, 0.0f);
    }
    void add(const T* p, int64_t st, int64_t) {
      const C* v = row_view(p, st, len, buf);
      if constexpr (std::is_same_v<C, float>) {
        for (int64_t j = 0; j < len; j++) block[j] += v[j];
        if (++count == kColumnBlock) {
          for (int64_t j = 0; j < len; j++) acc[j] += static_cast<double>(block[j]);
          std::fill(block, block + len, 0.0f);
          count = 0;
        }
      } else {
        for (int64_t j = 0; j < len; j++)
          acc[j] = static_cast<Acc>(acc[j] + static_cast<Acc>(v[j]));
      }
    }
    Acc get(int64_t j) const {
      if constexpr (std::is_same_v<C, float>)
        return acc[j] + static_cast<double>(block[j]);
      else
        return acc[j];
    }
  };
};

template <typename T, bool kMax>
struct ExtremeReducer {
  using Elem = T;
  using Out = T;
  using C = compute_t<T>;
  using Acc = C;

  static Acc identity() { return extreme_identity<kMax, C>(); }
  static void merge(Acc& a, Acc b) { a = pick_extreme<kMax>(a, b); }
  static Out finish(Acc a) { return from_compute<T>(a); }  // exact: a is one of the inputs

  static Acc row(const T* p, int64_t n, int64_t st, int64_t) {
    C buf[kRowChunk];
    Acc best = identity();
    for (int64_t b = 0; b < n; b += kRowChunk) {
      const int64_t len = std::min(kRowChunk, n - b);
      best = pick_extreme<kMax>(best, extreme_row<kMax>(row_view(p + b * st, st, len, buf), len));
    }
    return best;
  }

  struct Columns {
    Acc acc[kTile];
    C buf[kTile];
    int64_t len = 0;

    void reset(int64_t n) {
      len = n;
      std::fill(acc, acc + n, identity());
    }
    void add(const T* p, int64_t st, int64_t) {
      const C* v = row_view(p, st, len, buf);
      for (int64_t j = 0; j < len; j++) acc[j] = pick_extreme<kMax>(acc[j], v[j]);
    }
    Acc get(int64_t j) const { return acc[j]; }
  };
};

template <typename C>
struct ValueIndex {
  C value;
  int64_t index;  // -1: nothing seen yet
};

template <typename T, bool kMax>
struct ArgReducer {
  using Elem = T;
  using Out = uint32_t;
  using C = compute_t<T>;
  using Acc = ValueIndex<C>;

  // Strictly better, so the earlier index wins ties; a NaN beats any number.
  static bool better(C v, C best) {
    bool b = kMax ? v > best : v < best;
    if constexpr (std::is_floating_point_v<C>) b = b || (v != v && best == best);
    return b;
  }
  static Acc identity() { return {extreme_identity<kMax, C>(), -1}; }
  static void merge(Acc& a, Acc b) {
    if (b.index >= 0 && (a.index < 0 || better(b.value, a.value))) a = b;
  }
  static Out finish(Acc a) { return static_cast<uint32_t>(a.index); }

  // Two vectorised passes: the extreme value, then the first index holding it.
  static Acc row(const T* p, int64_t n, int64_t st, int64_t first) {
    const C best = ExtremeReducer<T, kMax>::row(p, n, st, first);
    C buf[kRowChunk];
    for (int64_t b = 0; b < n; b += kRowChunk) {
      const int64_t len = std::min(kRowChunk, n - b);
      const int64_t j = find_first(row_view(p + b * st, st, len, buf), len, best);
      if (j < len) return {best, first + b + j};
    }
    return {best, -1};  // unreachable for n > 0: best is one of the elements
  }

  struct Columns {
    C val[kTile];
    int64_t idx[kTile];
    C buf[kTile];
    int64_t len = 0;

    void reset(int64_t n) {
      len = n;
      std::fill(val, val + n, extreme_identity<kMax, C>());
      std::fill(idx, idx + n, int64_t{-1});
    }
    void add(const T* p, int64_t st, int64_t index) {
      const C* v = row_view(p, st, len, buf);
      for (int64_t j = 0; j < len; j++) {
        if (idx[j] < 0 || better(v[j], val[j])) {
          val[j] = v[j];
          idx[j] = index;
        }
      }
    }
    Acc get(int64_t j) const { return {val[j], idx[j]}; }
  };
};

// ---- plans ----------------------------------------------------------------------------------

struct ReducePlans {
  StridedPlan<2> kept;  // over the outputs: operand 0 = x, operand 1 = dst (element offsets)
  StridedPlan<1> red;   // over one output's reduced elements, offsets relative to its first
  int64_t n_out = 0, n_red = 0;
  bool column = false;  // see the file comment
};

ReducePlans plan_reduce(const Layout& x, const std::vector<size_t>& dims) {
  const size_t rank = x.rank();
  std::vector<bool> reduced(rank, false);
  for (size_t d : dims) reduced[d] = true;
  std::vector<int64_t> keep_dims = x.shape.dims();
  for (size_t d : dims) keep_dims[d] = 1;
  const std::vector<int64_t> out_strides = Shape(keep_dims).contiguous_strides();

  // Both groups ordered by decreasing input stride: the most contiguous dim goes innermost, and
  // reduced dims of a permuted input merge. Neither order changes a result: outputs are placed
  // by their own strides, and an arg reduction has a single reduced dim.
  std::vector<size_t> kept_order, red_order;
  for (size_t i = 0; i < rank; i++) (reduced[i] ? red_order : kept_order).push_back(i);
  const auto by_stride = [&](size_t a, size_t b) { return x.strides[a] > x.strides[b]; };
  std::stable_sort(kept_order.begin(), kept_order.end(), by_stride);
  std::stable_sort(red_order.begin(), red_order.end(), by_stride);

  std::vector<int64_t> ks, kx, ko, rs, rx;
  for (size_t i : kept_order) {
    ks.push_back(x.shape[i]);
    kx.push_back(x.strides[i]);
    ko.push_back(out_strides[i]);
  }
  for (size_t i : red_order) {
    rs.push_back(x.shape[i]);
    rx.push_back(x.strides[i]);
  }
  const Layout kept_x(Shape(ks), kx, x.start_offset), kept_out(Shape(ks), ko, 0);
  const Layout red_x(Shape(rs), rx, 0);

  ReducePlans p;
  p.kept = make_plan<2>(kept_x.shape, {&kept_x, &kept_out});
  p.red = make_plan<1>(red_x.shape, {&red_x});
  p.n_out = p.kept.numel;
  p.n_red = p.red.numel;
  const int64_t kept_inner = p.kept.shape.back(), kept_stride = p.kept.strides[0].back();
  const int64_t red_stride = p.red.strides[0].back();
  p.column = kept_inner > 1 && kept_stride != 0 && kept_stride < red_stride;
  return p;
}

// Calls f(offset, n, stride, first) for the rows of the reduced plan covering its flat elements
// [b, e); `first` is the flat index of the row's first element.
template <typename F>
void for_reduced_rows(const StridedPlan<1>& p, int64_t b, int64_t e, F&& f) {
  if (p.shape.size() == 1) {  // the common case, without visit_range's index bookkeeping
    f(p.offsets[0] + b * p.strides[0][0], e - b, p.strides[0][0], b);
    return;
  }
  int64_t pos = b;
  visit_range(p, b, e,
              [&](const std::array<int64_t, 1>& o, int64_t n, const std::array<int64_t, 1>& st) {
                f(o[0], n, st[0], pos);
                pos += n;
              });
}

// Reduces outputs [ob, oe) (flat, in kept-plan order) over reduced elements [rb, re), calling
// emit(output element offset, partial).
template <typename R, typename Emit>
void reduce_range(const ReducePlans& p, const typename R::Elem* x, int64_t ob, int64_t oe,
                  int64_t rb, int64_t re, Emit&& emit) {
  using Acc = typename R::Acc;
  if (!p.column) {
    visit_range(p.kept, ob, oe,
                [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
                  for (int64_t j = 0; j < n; j++) {
                    const auto* base = x + o[0] + j * st[0];
                    Acc acc = R::identity();
                    for_reduced_rows(p.red, rb, re,
                                     [&](int64_t off, int64_t rn, int64_t rst, int64_t first) {
                                       R::merge(acc, R::row(base + off, rn, rst, first));
                                     });
                    emit(o[1] + j * st[1], acc);
                  }
                });
    return;
  }
  auto cols = std::make_unique<typename R::Columns>();  // tens of KiB: not on an OpenMP stack
  visit_range(p.kept, ob, oe,
              [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
                for (int64_t t = 0; t < n; t += kTile) {
                  const int64_t len = std::min(kTile, n - t);
                  const auto* base = x + o[0] + t * st[0];
                  cols->reset(len);
                  for_reduced_rows(p.red, rb, re,
                                   [&](int64_t off, int64_t rn, int64_t rst, int64_t first) {
                                     for (int64_t i = 0; i < rn; i++)
                                       cols->add(base + off + i * rst, st[0], first + i);
                                   });
                  for (int64_t j = 0; j < len; j++) emit(o[1] + (t + j) * st[1], cols->get(j));
                }
              });
}

template <typename R>
void run_reduce(const ReducePlans& p, const typename R::Elem* x, typename R::Out* out,
                const R& reducer = R{}) {
  using Acc = typename R::Acc;
  const int64_t threads = max_threads();
  // Fewer outputs than a few per thread: split the reduced range and merge partials in order.
  const int64_t chunks = std::min<int64_t>(threads, p.n_red / kParallelGrain);
  if (p.n_out < 4 * threads && chunks >= 2) {
    std::vector<Acc> part(static_cast<size_t>(chunks * p.n_out), R::identity());
    parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; c++) {
        Acc* mine = part.data() + c * p.n_out;
        reduce_range<R>(p, x, 0, p.n_out, p.n_red * c / chunks, p.n_red * (c + 1) / chunks,
                        [&](int64_t oi, const Acc& a) { mine[oi] = a; });
      }
    });
    for (int64_t oi = 0; oi < p.n_out; oi++) {
      Acc acc = part[static_cast<size_t>(oi)];
      for (int64_t c = 1; c < chunks; c++)
        R::merge(acc, part[static_cast<size_t>(c * p.n_out + oi)]);
      out[oi] = reducer.finish(acc);
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / p.n_red);
  parallel_for(p.n_out, grain, [&](int64_t b, int64_t e) {
    reduce_range<R>(p, x, b, e, 0, p.n_red,
                    [&](int64_t oi, const Acc& a) { out[oi] = reducer.finish(a); });
  });
}

}  // namespace

void CpuDevice::reduce(ReduceOp op, View x, const std::vector<size_t>& dims, Storage& dst) {
  const char* name = backend::reduce_op_name(op);
  const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  WICK_ASSERT(!arg || dims.size() == 1);
  WICK_ASSERT(std::is_sorted(dims.begin(), dims.end()));
  for (size_t d : dims) WICK_ASSERT(d < x.layout.rank());
  if (arg && x.layout.shape[dims[0]] > int64_t{1} << 32)
    fail(ErrorKind::Unsupported, name, "index of dim ", dims[0], " of ", x.layout.shape,
         " does not fit u32");
  const ReducePlans p = plan_reduce(x.layout, dims);
  WICK_ASSERT(static_cast<size_t>(p.n_out) == dst.numel());
  WICK_ASSERT(dst.dtype() == (arg ? DType::U32 : x.storage.dtype()));
  dispatch_dtype(x.storage.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* xp = data_of<T>(x);
    switch (op) {
      case ReduceOp::Sum:
        return run_reduce<SumReducer<T>>(p, xp, cpu_storage(dst).as<T>());
      case ReduceOp::Mean:
        WICK_ASSERT(is_float_v<T> && p.n_red > 0);
        return run_reduce<SumReducer<T>>(p, xp, cpu_storage(dst).as<T>(),
                                         {static_cast<double>(p.n_red)});
      case ReduceOp::Max:
        return run_reduce<ExtremeReducer<T, true>>(p, xp, cpu_storage(dst).as<T>());
      case ReduceOp::Min:
        return run_reduce<ExtremeReducer<T, false>>(p, xp, cpu_storage(dst).as<T>());
      case ReduceOp::ArgMax:
        return run_reduce<ArgReducer<T, true>>(p, xp, cpu_storage(dst).as<uint32_t>());
      case ReduceOp::ArgMin:
        return run_reduce<ArgReducer<T, false>>(p, xp, cpu_storage(dst).as<uint32_t>());
    }
  });
}

}  // namespace wick::cpu
