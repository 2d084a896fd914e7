// Reductions: sum, mean, max, min, argmax, argmin against a float64 reference, on every dtype and
// input layout, over single and multiple dims, broadcast inputs, empty dims, the threaded paths,
// NaN, ties and integer wrap-around, plus every error path of the front end.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <sstream>

#include "harness.h"

namespace wick::testing {
namespace {

enum class Red { Sum, Max, Min, ArgMax, ArgMin, Mean };

const char* red_name(Red op) {
  switch (op) {
    case Red::Sum:
      return "sum";
    case Red::Max:
      return "max";
    case Red::Min:
      return "min";
    case Red::ArgMax:
      return "argmax";
    case Red::ArgMin:
      return "argmin";
    case Red::Mean:
      return "mean";
  }
  return "?";
}

bool is_arg(Red op) {
  return op == Red::ArgMax || op == Red::ArgMin;
}

// Integer sums wrap in the dtype's width.
double wrap_int(long double exact, DType dt) {
  const auto v = static_cast<int64_t>(exact);
  switch (dt) {
    case DType::U8:
      return static_cast<uint8_t>(static_cast<uint64_t>(v));
    case DType::U32:
      return static_cast<uint32_t>(static_cast<uint64_t>(v));
    case DType::I32:
      return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    default:
      return static_cast<double>(v);
  }
}

struct RefResult {
  Ref out;             // keepdim shape
  double abs_sum = 0;  // largest sum of finite |x| over one output's elements (sum tolerances)
  int64_t n = 1;       // elements reduced into each output
};

// Float64 reference of a reduction over `dims` (resolved, sorted), keepdim shape.
RefResult reduce_ref(const Ref& x, const std::vector<size_t>& dims, Red op, DType dt) {
  std::vector<int64_t> kd = x.shape.dims();
  RefResult res;
  for (size_t d : dims) {
    res.n *= kd[d];
    kd[d] = 1;
  }
  const Shape ks(kd);
  const auto nout = static_cast<size_t>(ks.numel());
  std::vector<long double> acc(nout, 0), abs(nout, 0);
  std::vector<double> best(nout, std::nan("")), idx(nout, -1);
  const bool is_max = op == Red::Max || op == Red::ArgMax;
  // Output strides with reduced dims zeroed: the output element of a multi-index is a dot product.
  std::vector<int64_t> ostride = ks.contiguous_strides();
  for (size_t d : dims) ostride[d] = 0;
  // Row-major walk over x with the multi-index and the output element kept up to date.
  std::vector<int64_t> i(x.shape.rank(), 0);
  int64_t oi = 0;
  for (size_t flat = 0; flat < x.v.size(); flat++) {
    const auto u = static_cast<size_t>(oi);
    const double v = x.v[flat];
    acc[u] += v;
    if (std::isfinite(v)) abs[u] += std::abs(v);
    // First index wins ties; NaN beats everything and the first NaN stays.
    bool take = idx[u] < 0;
    if (!take && !std::isnan(best[u])) take = std::isnan(v) || (is_max ? v > best[u] : v < best[u]);
    if (take) {
      best[u] = v;
      idx[u] = dims.empty() ? 0 : static_cast<double>(i[dims[0]]);
    }
    for (size_t k = i.size(); k-- > 0;) {
      oi += ostride[k];
      if (++i[k] < x.shape[k]) break;
      oi -= ostride[k] * x.shape[k];
      i[k] = 0;
    }
  }
  res.out = Ref{ks, std::vector<double>(nout)};
  for (size_t u = 0; u < nout; u++) {
    res.abs_sum = std::max(res.abs_sum, static_cast<double>(abs[u]));
    switch (op) {
      case Red::Sum:
        res.out.v[u] = is_float(dt) ? static_cast<double>(acc[u]) : wrap_int(acc[u], dt);
        break;
      case Red::Mean:
        res.out.v[u] = static_cast<double>(acc[u] / static_cast<long double>(res.n));
        break;
      case Red::Max:
      case Red::Min:
        res.out.v[u] = best[u];
        break;
      case Red::ArgMax:
      case Red::ArgMin:
        res.out.v[u] = idx[u];
        break;
    }
  }
  return res;
}

// Tolerance of a float sum of n terms. Rounding to the output dtype costs u_out relative; the
// accumulation (f32 for f32/f16/bf16, f64 for f64) may err by depth * u_acc * sum|x|, where depth
// is the number of sequential adds into one partial. A blocked or tree summation keeps depth
// near 100 however long the row is (naive f32 accumulation does not: see SumOfAMillion).
Tol sum_tol(DType dt, int64_t n, double abs_sum) {
  if (!is_float(dt)) return {0, 0};
  const double u_out = unit_roundoff(dt);
  const double u_acc = dt == DType::F64 ? unit_roundoff(DType::F64) : unit_roundoff(DType::F32);
  const double depth = static_cast<double>(std::min<int64_t>(n, 128) + 2);
  return {depth * u_acc * abs_sum + 1e-300, 2 * u_out};
}

Shape drop_dims(const Shape& s, const std::vector<size_t>& dims) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < s.rank(); i++)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) out.push_back(s[i]);
  return Shape(out);
}

Tensor run_op(const Tensor& x, Red op, const std::vector<int64_t>& dims, bool keepdim) {
  switch (op) {
    case Red::Sum:
      return x.sum(dims, keepdim);
    case Red::Mean:
      return x.mean(dims, keepdim);
    case Red::Max:
      return x.max(dims[0], keepdim);
    case Red::Min:
      return x.min(dims[0], keepdim);
    case Red::ArgMax:
      return x.argmax(dims[0], keepdim);
    case Red::ArgMin:
      return x.argmin(dims[0], keepdim);
  }
  return x;
}

// Runs op on x (holding xr's values, already rounded to dt) and compares with the reference.
void check_reduce(const Tensor& x, const Ref& xr, Red op, const std::vector<int64_t>& dims,
                  bool keepdim) {
  const DType dt = x.dtype();
  SCOPED_TRACE(::testing::Message()
               << red_name(op) << " " << dt << " " << x.shape() << " strides " << x.layout().str()
               << " dims " << ::testing::PrintToString(dims) << " keepdim " << keepdim);
  std::vector<size_t> rd;
  for (int64_t d : dims) rd.push_back(x.shape().dim(d, "test"));
  std::sort(rd.begin(), rd.end());
  RefResult want = reduce_ref(xr, rd, op, dt);
  if (!keepdim) want.out.shape = drop_dims(want.out.shape, rd);
  const Tensor got = run_op(x, op, dims, keepdim);
  EXPECT_EQ(got.dtype(), is_arg(op) ? DType::U32 : dt);
  Tol tol{0, 0};
  if (op == Red::Sum) tol = sum_tol(dt, want.n, want.abs_sum);
  if (op == Red::Mean) {  // the sum's error divided by n; one rounding to the dtype
    const Tol s = sum_tol(dt, want.n, want.abs_sum);
    tol = {s.atol / static_cast<double>(std::max<int64_t>(want.n, 1)), s.rtol};
  }
  WICK_EXPECT_CLOSE(got, want.out, tol);
}

// Values for a dtype: floats in [-2, 2]; integers over most of their range, so sums wrap.
Ref random_values(Rng& rng, const Shape& s, DType dt) {
  switch (dt) {
    case DType::U8:
      return random_int_ref(rng, s, 0, 255);
    case DType::U32:
      return random_int_ref(rng, s, 0, 4000000000LL);
    case DType::I64:
      return random_int_ref(rng, s, -1000000000LL, 1000000000LL);
    case DType::I32:
      return random_int_ref(rng, s, INT32_MIN, INT32_MAX);
    default:
      return random_ref(rng, s);
  }
}

// A random non-empty set of dims of a rank-r shape, some given as negative indices.
std::vector<int64_t> random_dims(Rng& rng, size_t rank) {
  std::vector<int64_t> dims;
  while (dims.empty())
    for (size_t d = 0; d < rank; d++)
      if (rng.integer(0, 2) == 0) dims.push_back(static_cast<int64_t>(d));
  for (int64_t& d : dims)
    if (rng.integer(0, 1)) d -= static_cast<int64_t>(rank);
  std::shuffle(dims.begin(), dims.end(), rng.gen());
  return dims;
}

class Reduce : public DeviceTest {};

TEST_P(Reduce, SumMaxMinEveryDTypeAndLayout) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : compute_dtypes(device()))
    for (Variant v : kAllVariants)
      for (int rep = 0; rep < 3; rep++) {
        SCOPED_TRACE(variant_name(v));
        const Shape s = random_shape(rng, 1, 4, 7);
        const Ref xr = round_ref(random_values(rng, s, dt), dt);
        const Tensor x = make_tensor(xr, dt, device(), v);
        check_reduce(x, xr, Red::Sum, random_dims(rng, s.rank()), rng.integer(0, 1));
        const int64_t d =
            rng.integer(-static_cast<int64_t>(s.rank()), static_cast<int64_t>(s.rank()) - 1);
        check_reduce(x, xr, Red::Max, {d}, rng.integer(0, 1));
        check_reduce(x, xr, Red::Min, {d}, rng.integer(0, 1));
      }
}

TEST_P(Reduce, ArgMaxArgMinEveryDTypeAndLayoutWithTies) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : compute_dtypes(device()))
    for (Variant v : kAllVariants)
      for (int rep = 0; rep < 3; rep++) {
        SCOPED_TRACE(variant_name(v));
        const Shape s = random_shape(rng, 1, 4, 7);
        // Every other case draws from 5 values so ties are everywhere.
        const Ref xr =
            round_ref(rep % 2 ? random_int_ref(rng, s, 1, 5) : random_values(rng, s, dt), dt);
        const Tensor x = make_tensor(xr, dt, device(), v);
        const int64_t d =
            rng.integer(-static_cast<int64_t>(s.rank()), static_cast<int64_t>(s.rank()) - 1);
        check_reduce(x, xr, Red::ArgMax, {d}, rng.integer(0, 1));
        check_reduce(x, xr, Red::ArgMin, {d}, rng.integer(0, 1));
      }
}

TEST_P(Reduce, MeanEveryFloatDTypeAndLayout) {  // needs the affine op (elementwise)
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : kFloatDTypes)
    for (Variant v : kAllVariants) {
      SCOPED_TRACE(variant_name(v));
      const Shape s = random_shape(rng, 1, 4, 7);
      const Ref xr = round_ref(random_ref(rng, s), dt);
      const Tensor x = make_tensor(xr, dt, device(), v);
      check_reduce(x, xr, Red::Mean, random_dims(rng, s.rank()), rng.integer(0, 1));
      const Tensor all = x.mean_all();
      std::vector<size_t> every(s.rank());
      std::iota(every.begin(), every.end(), size_t{0});
      const RefResult want = reduce_ref(xr, every, Red::Mean, dt);
      const Tol st = sum_tol(dt, want.n, want.abs_sum);
      WICK_EXPECT_CLOSE(all, (Ref{Shape{}, want.out.v}),
                        Tol{st.atol / static_cast<double>(want.n), st.rtol});
    }
}

// The range of values `dt` may hold for an exact result `v` computed with an absolute error up to
// `err` before its one rounding: from the rounding of v - err to that of v + err (one value
// unless v lies within err of a rounding midpoint).
std::pair<double, double> rounded_once(double v, double err, DType dt) {
  const Ref r = round_ref(Ref{Shape{2}, {v - err, v + err}}, dt);
  return {r.v[0], r.v[1]};
}

// A mean of f16/bf16 is rounded once: a sum rounded to the dtype and then divided (and rounded
// again) lands an ulp off. The reproduction of issue 9 item 10, then random rows, each checked
// to be the correctly rounded mean (within the f32 accumulation's error).
TEST_P(Reduce, MeanOf16BitDTypesRoundsOnce) {
  const Ref repro{Shape{5}, {-2.875, -3.09375, -1.03125, -1.21875, -0.25}};
  const Tensor t = make_tensor(repro, DType::BF16, device());
  EXPECT_EQ(t.mean_all().to_scalar<double>(), -1.6953125);  // rounding the sum first: -1.703125
  EXPECT_EQ(t.mean(0).to_scalar<double>(), -1.6953125);
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : {DType::BF16, DType::F16})
    for (int64_t n : {3, 5, 7, 24, 200}) {  // 200: a workgroup per row on vulkan
      const int64_t rows = 64;
      const Ref xr = round_ref(random_ref(rng, {rows, n}, -4, 4), dt);
      // Row means as rows of xr (Contiguous, dim 1), and as columns of its transpose (dim 0).
      for (const bool columns : {false, true}) {
        SCOPED_TRACE(::testing::Message() << dt << " n " << n << (columns ? " columns" : " rows"));
        const Tensor x = make_tensor(xr, dt, device());
        const std::vector<double> got =
            (columns ? x.transpose(0, 1).contiguous().mean(0) : x.mean(1)).to_vec<double>();
        int bad = 0;
        std::ostringstream first;
        for (int64_t r = 0; r < rows; r++) {
          double sum = 0, abs_sum = 0;  // exact in double: short sums of 16-bit values
          for (int64_t j = 0; j < n; j++) {
            sum += xr.v[static_cast<size_t>(r * n + j)];
            abs_sum += std::abs(xr.v[static_cast<size_t>(r * n + j)]);
          }
          const double mean = sum / static_cast<double>(n);
          // f32 accumulation (n adds) and an f32 division: far below half an ulp of the dtype.
          const double err =
              (static_cast<double>(n) + 3) * std::ldexp(abs_sum, -24) / static_cast<double>(n);
          const auto [lo, hi] = rounded_once(mean, err, dt);
          const double g = got[static_cast<size_t>(r)];
          if (!(g >= lo && g <= hi) && bad++ < 3)
            first << "\n  row " << r << ": got " << g << ", the mean " << mean << " rounds to "
                  << lo;
        }
        EXPECT_EQ(bad, 0) << "rows off the correctly rounded mean, the first:" << first.str();
      }
    }
}

// The mean of 40000 f16 values near 2 is near 2, though their sum (80000) is past f16's range.
TEST_P(Reduce, MeanOfF16DoesNotOverflow) {  // needs the affine op (elementwise)
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Ref xr = round_ref(random_ref(rng, {2, 40000}, 1.5, 2.5), DType::F16);
  const RefResult want = reduce_ref(xr, {1}, Red::Mean, DType::F16);
  WICK_EXPECT_CLOSE(make_tensor(xr, DType::F16, device(), Variant::Transposed).mean(1),
                    (Ref{Shape{2}, want.out.v}), (Tol{0, 2 * unit_roundoff(DType::F16)}));
}

TEST_P(Reduce, SeveralDimsAndAllDims) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : compute_dtypes(device()))
    for (Variant v : kAllVariants) {
      SCOPED_TRACE(variant_name(v));
      const Shape s{rng.integer(1, 6), rng.integer(1, 6), rng.integer(1, 6)};
      const Ref xr = round_ref(random_values(rng, s, dt), dt);
      const Tensor x = make_tensor(xr, dt, device(), v);
      check_reduce(x, xr, Red::Sum, {0, 2}, false);
      check_reduce(x, xr, Red::Sum, {-1, 0}, true);
      check_reduce(x, xr, Red::Sum, {2, 0, 1}, true);
      check_reduce(x, xr, Red::Sum, {}, false);  // no dims: a copy
      // sum_all / max_all / min_all give rank-0 tensors.
      const RefResult all = reduce_ref(xr, {0, 1, 2}, Red::Sum, dt);
      WICK_EXPECT_CLOSE(x.sum_all(), (Ref{Shape{}, all.out.v}), sum_tol(dt, all.n, all.abs_sum));
      const Ref flat{Shape{xr.numel()}, xr.v};
      WICK_EXPECT_CLOSE(x.max_all(), (Ref{Shape{}, reduce_ref(flat, {0}, Red::Max, dt).out.v}),
                        Tol{0, 0});
      WICK_EXPECT_CLOSE(x.min_all(), (Ref{Shape{}, reduce_ref(flat, {0}, Red::Min, dt).out.v}),
                        Tol{0, 0});
    }
}

TEST_P(Reduce, BroadcastInputs) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : compute_dtypes(device())) {
    // (3, 1, 5) and (1, 4, 1) broadcast to (3, 4, 5): stride-0 dims both kept and reduced.
    for (const Shape& src : {Shape{3, 1, 5}, Shape{1, 4, 1}}) {
      const Shape to{3, 4, 5};
      const Ref small = round_ref(random_values(rng, src, dt), dt);
      const Tensor x = make_broadcast(small, to, dt, device());
      Ref xr{to, {}};
      for_each_index(to, [&](const std::vector<int64_t>& i) {
        std::vector<int64_t> j = i;
        for (size_t k = 0; k < 3; k++)
          if (src[k] == 1) j[k] = 0;
        xr.v.push_back(small.at(j));
      });
      check_reduce(x, xr, Red::Sum, {1}, false);
      check_reduce(x, xr, Red::Sum, {0, 1}, true);
      check_reduce(x, xr, Red::Sum, {0, 1, 2}, false);
      for (int64_t d = 0; d < 3; d++)
        for (Red op : {Red::Max, Red::Min, Red::ArgMax, Red::ArgMin})
          check_reduce(x, xr, op, {d}, false);
    }
  }
}

TEST_P(Reduce, EmptyDims) {
  for (DType dt : compute_dtypes(device())) {
    const Tensor x = Tensor::zeros({3, 0, 4}, dt, device());
    const Tensor s = x.sum(1);
    EXPECT_EQ(s.shape(), (Shape{3, 4}));
    EXPECT_EQ(s.dtype(), dt);
    WICK_EXPECT_CLOSE(s, (Ref{Shape{3, 4}, std::vector<double>(12, 0.0)}), Tol{0, 0});
    WICK_EXPECT_CLOSE(x.sum({0, 1}, true), (Ref{Shape{1, 1, 4}, std::vector<double>(4, 0.0)}),
                      Tol{0, 0});
    EXPECT_EQ(x.sum(0).shape(), (Shape{0, 4}));  // nothing to compute
    EXPECT_EQ(x.max(2).shape(), (Shape{3, 0}));  // reducing a non-empty dim of an empty tensor
    for (const char* op : {"max", "min", "argmax", "argmin"}) {
      const std::string name = op;
      expect_error(
          [&] {
            if (name == "max") x.max(1);
            if (name == "min") x.min(-2);
            if (name == "argmax") x.argmax(1);
            if (name == "argmin") x.argmin(1, true);
          },
          ErrorKind::Shape, {op, "empty", "[3, 0, 4]"});
    }
    expect_error([&] { x.max_all(); }, ErrorKind::Shape, {"max", "[0]"});
    if (is_float(dt)) expect_error([&] { x.mean(1); }, ErrorKind::Shape, {"mean", "[3, 0, 4]"});
  }
}

// Sizes past the parallel grain, so each loop order runs on several threads: row mode and
// column mode with many outputs (split over outputs), and with few outputs (split over the
// reduced range, partials merged in order).
TEST_P(Reduce, LargeInputsTakeTheThreadedPaths) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
    const Ref wide = round_ref(random_values(rng, {300, 257}, dt), dt);
    const Tensor x = make_tensor(wide, dt, device());
    check_reduce(x, wide, Red::Sum, {1}, false);
    check_reduce(x, wide, Red::Sum, {0}, false);
    check_reduce(x, wide, Red::Max, {0}, true);
    check_reduce(x, wide, Red::ArgMin, {1}, false);
  }
  for (DType dt : {DType::F32, DType::U8}) {
    const Ref tall = round_ref(random_values(rng, {70000, 3}, dt), dt);
    const Tensor t = make_tensor(tall, dt, device());
    check_reduce(t, tall, Red::Sum, {0}, false);
    check_reduce(t, tall, Red::Min, {0}, false);
    check_reduce(t, tall, Red::ArgMax, {0}, false);
    const Tensor tt =
        make_tensor(tall, dt, device(), Variant::Permuted);  // (70000, 3) as a transpose
    check_reduce(tt, tall, Red::Sum, {0}, true);
    check_reduce(tt, tall, Red::ArgMin, {0}, false);
  }
  // One long row: the extreme value at two places far apart (first one wins), both orders.
  Ref row = random_ref(rng, {140000}, -1, 1);
  const auto a = static_cast<size_t>(rng.integer(0, 69999)),
             b = static_cast<size_t>(rng.integer(70000, 139999));
  row.v[a] = row.v[b] = 5;
  row.v[b - 1] = row.v[a + 1] = -5;
  for (DType dt : {DType::F32, DType::F16}) {
    const Ref rr = round_ref(row, dt);
    const Tensor x = make_tensor(rr, dt, device());
    check_reduce(x, rr, Red::ArgMax, {0}, false);
    check_reduce(x, rr, Red::ArgMin, {0}, false);
    check_reduce(x, rr, Red::Max, {0}, false);
    check_reduce(x, rr, Red::Sum, {0}, false);
  }
}

// Sums of a million f32 values in [0, 1) along a row and down a column: within 1e-6 of the
// exact sum. A single f32 accumulator is ~1e-4 off; the blocked sum is ~1e-9 off.
TEST_P(Reduce, SumOfAMillionStaysAccurate) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Ref xr = round_ref(random_ref(rng, {1000000}, 0, 1), DType::F32);
  long double exact = 0;
  for (double v : xr.v) exact += v;
  const Tensor x = make_tensor(xr, DType::F32, device());
  EXPECT_NEAR(x.sum_all().to_scalar<float>(), static_cast<double>(exact),
              1e-6 * static_cast<double>(exact));
  const Tensor col = x.reshape({500000, 2}).sum(0);
  long double even = 0;
  for (size_t i = 0; i < xr.v.size(); i += 2) even += xr.v[i];
  EXPECT_NEAR(col.to_vec<float>()[0], static_cast<double>(even), 1e-6 * static_cast<double>(even));
  // f16 rows accumulate in f32 too: 4096 values in [0, 1) sum to ~2048, exact to f16 rounding.
  const Ref hr = round_ref(random_ref(rng, {4, 4096}, 0, 1), DType::F16);
  const Tensor h = make_tensor(hr, DType::F16, device());
  const RefResult want = reduce_ref(hr, {1}, Red::Sum, DType::F16);
  WICK_EXPECT_CLOSE(h.sum(1, true), want.out, (Tol{0, unit_roundoff(DType::F16)}));
}

TEST_P(Reduce, NaNAndInfinities) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  for (DType dt : kFloatDTypes)
    for (Variant v : kAllVariants) {
      SCOPED_TRACE(variant_name(v));
      Ref xr = round_ref(random_ref(rng, {6, 37}), dt);
      // Row 1: one NaN; row 2: two NaNs (the first is the arg); row 3: +inf and -inf; row 4: all
      // -inf.
      xr.v[1 * 37 + 20] = nan;
      xr.v[2 * 37 + 3] = xr.v[2 * 37 + 30] = nan;
      xr.v[3 * 37 + 5] = inf;
      xr.v[3 * 37 + 6] = -inf;
      for (int j = 0; j < 37; j++) xr.v[4 * 37 + static_cast<size_t>(j)] = -inf;
      const Tensor x = make_tensor(xr, dt, device(), v);
      for (Red op : {Red::Sum, Red::Max, Red::Min, Red::ArgMax, Red::ArgMin}) {
        check_reduce(x, xr, op, {1}, false);
        check_reduce(x, xr, op, {0}, false);  // NaN down the columns, column mode
      }
    }
}

TEST_P(Reduce, IntegerSumsWrapInTheDType) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  // u8: 1000 values of 200..255 wrap many times; u32 likewise.
  const Ref u8r = random_int_ref(rng, {3, 1000}, 200, 255);
  check_reduce(make_tensor(u8r, DType::U8, device()), u8r, Red::Sum, {1}, false);
  check_reduce(make_tensor(u8r, DType::U8, device(), Variant::Transposed), u8r, Red::Sum, {0, 1},
               false);
  const Ref u32r = random_int_ref(rng, {1000, 3}, 4000000000LL, 4294967295LL);
  check_reduce(make_tensor(u32r, DType::U32, device()), u32r, Red::Sum, {0}, false);
  // i64 past 2^63 wraps to negative (two's complement).
  std::vector<int64_t> big(64);
  for (auto& b : big) b = (int64_t{1} << 62) + rng.integer(0, 1 << 20);
  uint64_t want = 0;
  for (int64_t b : big) want += static_cast<uint64_t>(b);
  const Tensor t = Tensor::from_vec(big, {64}, device());
  EXPECT_EQ(t.sum_all().to_scalar<int64_t>(), static_cast<int64_t>(want));
  EXPECT_EQ(t.reshape({8, 8}).sum(1).to_vec<int64_t>()[0],
            static_cast<int64_t>(std::accumulate(
                big.begin(), big.begin() + 8, uint64_t{0},
                [](uint64_t s, int64_t b) { return s + static_cast<uint64_t>(b); })));
}

TEST_P(Reduce, Errors) {
  const Tensor x = Tensor::zeros({2, 3, 4}, DType::F32, device());
  expect_error([&] { x.sum(3); }, ErrorKind::OutOfRange, {"sum", "3", "[2, 3, 4]"});
  expect_error([&] { x.sum(-4); }, ErrorKind::OutOfRange, {"sum", "-4", "[2, 3, 4]"});
  expect_error([&] { x.sum({0, 2, -1}); }, ErrorKind::Shape, {"sum", "repeated", "[2, 3, 4]"});
  expect_error([&] { x.mean({1, 1}); }, ErrorKind::Shape, {"mean", "repeated", "[2, 3, 4]"});
  expect_error([&] { x.max(5); }, ErrorKind::OutOfRange, {"max", "[2, 3, 4]"});
  expect_error([&] { x.min(-5); }, ErrorKind::OutOfRange, {"min", "[2, 3, 4]"});
  expect_error([&] { x.argmax(3); }, ErrorKind::OutOfRange, {"argmax", "[2, 3, 4]"});
  expect_error([&] { x.argmin(3); }, ErrorKind::OutOfRange, {"argmin", "[2, 3, 4]"});
  expect_error(
      [&] {
        Tensor::zeros({2, 3}, DType::U8, device()).mean(0);
      },
      ErrorKind::DType, {"mean", "u8", "[2, 3]"});
  // Rank 0: no dim to reduce, but the whole-tensor reductions are the identity.
  const Tensor s = Tensor::full(3.5, {}, DType::F32, device());
  expect_error([&] { s.sum(0); }, ErrorKind::OutOfRange, {"sum", "[]"});
  expect_error([&] { s.argmax(0); }, ErrorKind::OutOfRange, {"argmax", "[]"});
  EXPECT_EQ(s.sum_all().to_scalar<float>(), 3.5f);
  EXPECT_EQ(s.max_all().to_scalar<float>(), 3.5f);
  EXPECT_EQ(s.sum(std::vector<int64_t>{}).to_scalar<float>(), 3.5f);
}

WICK_INSTANTIATE_DEVICES(Reduce);

}  // namespace
}  // namespace wick::testing
