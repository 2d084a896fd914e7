// The GPU runtime's reductions, softmax, norms, rope, arg-sort and matmul against a float64
// reference, on every dtype they take and through strided inputs, on each GPU device under test
// (the kernels' own cases: rows a thread or a workgroup reduces, tile edges, batch strides).
#include <cmath>
#include <numeric>

#include "gpu_test_util.h"

namespace wick::testing {
namespace {

using backend::ReduceOp;

Ref values(Rng& rng, const Shape& s, DType dt) {
  if (is_float(dt)) return round_ref(random_ref(rng, s), dt);
  return random_int_ref(rng, s, dt == DType::I64 ? -100 : 0, 200);
}

// The reference reduction of r over `dims` (kept as size 1).
Ref reduce_ref(const Ref& r, const std::vector<size_t>& dims, ReduceOp op, DType dt) {
  std::vector<int64_t> od = r.shape.dims();
  for (size_t d : dims) od[d] = 1;
  Ref out{Shape(od), std::vector<double>(static_cast<size_t>(Shape(od).numel()), NAN)};
  std::vector<int64_t> best_index(out.v.size(), -1);
  for_each_index(r.shape, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> o = i;
    int64_t along = 0;
    for (size_t d : dims) {
      along = i[d];
      o[d] = 0;
    }
    const size_t k = static_cast<size_t>(out.index(o));
    const double v = r.at(i);
    double& acc = out.v[k];
    const bool first = best_index[k] < 0;
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Mean:  // divided below
        acc = first ? v : acc + v;
        break;
      case ReduceOp::Max:  // NaN beats numbers; the first of equals (or of NaNs) wins
      case ReduceOp::ArgMax:
        if (first || (!std::isnan(acc) && (std::isnan(v) || v > acc)))
          acc = v, best_index[k] = along;
        break;
      case ReduceOp::Min:
      case ReduceOp::ArgMin:
        if (first || (!std::isnan(acc) && (std::isnan(v) || v < acc)))
          acc = v, best_index[k] = along;
        break;
    }
    if (first) best_index[k] = std::max<int64_t>(best_index[k], 0);
  });
  if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin)
    for (size_t k = 0; k < out.v.size(); k++) out.v[k] = static_cast<double>(best_index[k]);
  if (op == ReduceOp::Mean)
    for (double& x : out.v) x /= static_cast<double>(r.numel() / out.numel());
  if (op == ReduceOp::Sum && (dt == DType::U8 || dt == DType::U32)) {
    const double mod = dt == DType::U8 ? 256.0 : 4294967296.0;
    for (double& x : out.v) x = std::fmod(x, mod);
  }
  return out;
}

class GpuReduce : public GpuDeviceTest {};

TEST_P(GpuReduce, AllOpsAllDTypesStrided) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : compute_dtypes(d)) {
    SCOPED_TRACE(dtype_name(dt));
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax,
                        ReduceOp::ArgMin, ReduceOp::Mean}) {
      if (op == ReduceOp::Mean && !is_float(dt)) continue;
      SCOPED_TRACE(backend::reduce_op_name(op));
      // Short rows (a thread per output) and long ones (a workgroup per output).
      for (int64_t inner : {5, 300}) {
        const Shape s{3, inner, 4};
        const Ref r = values(rng, s, dt);
        const Variant v = kAllVariants[rng.integer(0, 4)];
        SCOPED_TRACE(variant_name(v));
        const Tensor t = make_tensor(r, dt, d, v);
        Tensor got;
        switch (op) {
          case ReduceOp::Sum:
            got = t.sum_keepdim(1);
            break;
          case ReduceOp::Max:
            got = t.max(1, true);
            break;
          case ReduceOp::Min:
            got = t.min(1, true);
            break;
          case ReduceOp::ArgMax:
            got = t.argmax(1, true);
            break;
          case ReduceOp::ArgMin:
            got = t.argmin(1, true);
            break;
          case ReduceOp::Mean:
            got = t.mean(1, true);
            break;
        }
        Ref want = reduce_ref(r, {1}, op, dt);
        const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
        Tol tol{0, 0};
        if ((op == ReduceOp::Sum || op == ReduceOp::Mean) && is_float(dt)) {
          want = round_ref(want, dt);
          tol = tol_for(dt);
          tol.atol *= std::sqrt(static_cast<double>(inner)) * 4;
        }
        EXPECT_EQ(got.dtype(), arg ? DType::U32 : dt);
        WICK_EXPECT_CLOSE(got, want, tol);
      }
    }
  }
}

TEST_P(GpuReduce, SeveralDimsAndAllDims) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  const Ref r = values(rng, {4, 3, 5, 2}, DType::F32);
  const Tensor t = make_tensor(r, DType::F32, d, Variant::Permuted);
  const Tol tol{1e-4, 1e-5};
  WICK_EXPECT_CLOSE(t.sum({0, 2}, true), reduce_ref(r, {0, 2}, ReduceOp::Sum, DType::F32), tol);
  WICK_EXPECT_CLOSE(t.sum({1, 3}, true), reduce_ref(r, {1, 3}, ReduceOp::Sum, DType::F32), tol);
  const Ref all = reduce_ref(r, {0, 1, 2, 3}, ReduceOp::Sum, DType::F32);
  WICK_EXPECT_CLOSE(t.sum_all(), (Ref{{}, all.v}), tol);
  // Alternating kept and reduced dims of a rank-8 view: more groups than the kernel takes, so the
  // input is packed first.
  const Ref big = values(rng, {2, 3, 2, 3, 2, 3, 2, 3}, DType::F32);
  const Tensor tb = make_tensor(big, DType::F32, d, Variant::Permuted);
  WICK_EXPECT_CLOSE(tb.sum({1, 3, 5, 7}, true),
                    reduce_ref(big, {1, 3, 5, 7}, ReduceOp::Sum, DType::F32), tol);
}

TEST_P(GpuReduce, TiesPickTheFirstIndex) {
  const Device d = device();
  std::vector<float> v(600, 1.0f);
  v[37] = v[420] = 5.0f;
  v[100] = v[599] = -3.0f;
  const Tensor t = Tensor::from_vec(v, Shape{600}, d);
  EXPECT_EQ(t.argmax(0).to_scalar<uint32_t>(), 37u);
  EXPECT_EQ(t.argmin(0).to_scalar<uint32_t>(), 100u);
  EXPECT_EQ(t.max(0).to_scalar<float>(), 5.0f);
}

// A few rows longer than kWideRowMin (gpu_reduce.cpp): a workgroup of the device's widest size
// each (decode's argmax over the vocabulary), every op, ties and a strided view.
TEST_P(GpuReduce, FewLongRows) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  const int64_t n = 40000 + rng.integer(0, 9000);
  const Shape s{3, n};
  Ref r = values(rng, s, DType::F32);
  // The row maximum twice in row 1 (the first index wins), the minimum at the end of row 2.
  const int64_t a = rng.integer(0, n / 2), b = rng.integer(n / 2, n - 1);
  r.v[static_cast<size_t>(n + a)] = r.v[static_cast<size_t>(n + b)] = 100.0;
  r.v[static_cast<size_t>(3 * n - 1)] = -100.0;
  for (const Variant v : {Variant::Contiguous, Variant::Permuted}) {
    SCOPED_TRACE(variant_name(v));
    const Tensor t = make_tensor(r, DType::F32, d, v);
    const Tol exact{0, 0}, sum_tol{1e-5 * std::sqrt(static_cast<double>(n)) * 4, 1e-5};
    WICK_EXPECT_CLOSE(t.argmax(1, true), reduce_ref(r, {1}, ReduceOp::ArgMax, DType::F32), exact);
    WICK_EXPECT_CLOSE(t.argmin(1, true), reduce_ref(r, {1}, ReduceOp::ArgMin, DType::F32), exact);
    WICK_EXPECT_CLOSE(t.max(1, true), reduce_ref(r, {1}, ReduceOp::Max, DType::F32), exact);
    WICK_EXPECT_CLOSE(t.min(1, true), reduce_ref(r, {1}, ReduceOp::Min, DType::F32), exact);
    WICK_EXPECT_CLOSE(t.sum_keepdim(1), reduce_ref(r, {1}, ReduceOp::Sum, DType::F32), sum_tol);
    WICK_EXPECT_CLOSE(t.mean(1, true), reduce_ref(r, {1}, ReduceOp::Mean, DType::F32), sum_tol);
  }
  EXPECT_EQ(Tensor::from_vec(std::vector<float>(r.v.begin() + n, r.v.begin() + 2 * n), Shape{n}, d)
                .argmax(0)
                .to_scalar<uint32_t>(),
            static_cast<uint32_t>(a));
}

// argmax, argmin, max and min of t's rows (the reference r in dtype dt), exactly.
void expect_split_ops(const Tensor& t, const Ref& r, DType dt) {
  for (ReduceOp op : {ReduceOp::ArgMax, ReduceOp::ArgMin, ReduceOp::Max, ReduceOp::Min}) {
    SCOPED_TRACE(backend::reduce_op_name(op));
    const Tensor got = op == ReduceOp::ArgMax   ? t.argmax(1, true)
                       : op == ReduceOp::ArgMin ? t.argmin(1, true)
                       : op == ReduceOp::Max    ? t.max(1, true)
                                                : t.min(1, true);
    WICK_EXPECT_CLOSE(got, reduce_ref(r, {1}, op, dt), (Tol{0, 0}));
  }
}

// Max/min and the arg ops split such rows over workgroups (gpu_reduce.cpp's kSplitSpan), the
// last to finish merging the parts: every dtype, ties and NaNs in different parts (the first
// index wins), one row and several, run twice (the split counters reset between ops).
TEST_P(GpuReduce, FewLongRowsSplitOverWorkgroups) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::U32, DType::I64}) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t rows : {1, 5}) {
      const int64_t n = 20000 + rng.integer(0, 30000);
      Ref r = values(rng, {rows, n}, dt);
      const auto at = [&](int64_t row, int64_t j) -> double& {
        return r.v[static_cast<size_t>(row * n + j)];
      };
      // Row 0: its maximum in a late part and again in an early one; its minimum twice.
      const int64_t a = rng.integer(0, 2047), b = rng.integer(n / 2, n - 1);
      at(0, b) = at(0, a) = is_float(dt) ? 1000.0 : 250.0;
      at(0, n - 1) = at(0, n / 3) = is_float(dt) ? -1000.0 : dt == DType::U32 ? 0.0 : -150.0;
      if (is_float(dt) && rows > 1) at(1, n - 5) = at(1, n / 2) = NAN;  // the first NaN wins
      const Tensor t = make_tensor(r, dt, d);
      for (int rep = 0; rep < 2; rep++) expect_split_ops(t, r, dt);
      EXPECT_EQ(t.argmax(1).to_vec<uint32_t>()[0], static_cast<uint32_t>(a));
    }
  }
  // More parts than a workgroup has threads (the last workgroup's threads take several each):
  // the maximum alone in a part past the first 256, the minimum tied between the second part
  // and such a part (the first index wins).
  const int64_t tail = 256 * 2048, n = tail + rng.integer(1, 5000);
  Ref r = values(rng, {1, n}, DType::F32);
  const int64_t a = rng.integer(2048, 4095), b = tail + rng.integer(0, n - tail - 1);
  r.v[static_cast<size_t>(b)] = 1000.0;
  r.v[static_cast<size_t>(a)] = r.v[static_cast<size_t>(n - 1 - (b - tail))] = -1000.0;
  if (n - 1 - (b - tail) == b) r.v[static_cast<size_t>(b)] = 1000.0;
  const Tensor t = make_tensor(r, DType::F32, d);
  expect_split_ops(t, r, DType::F32);
  EXPECT_EQ(t.argmax(1).to_vec<uint32_t>()[0], static_cast<uint32_t>(b));
  EXPECT_EQ(t.argmin(1).to_vec<uint32_t>()[0], static_cast<uint32_t>(a));
}

WICK_INSTANTIATE_GPU_DEVICES(GpuReduce);

// ---- softmax and norms --------------------------------------------------------------------------

class GpuNorm : public GpuDeviceTest {};

TEST_P(GpuNorm, SoftmaxAndLogSoftmax) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t n : {7, 700}) {
      const Ref r = round_ref(random_ref(rng, {3, 2, n}, -4, 4), dt);
      Ref sm = r, lsm = r;
      for (size_t row = 0; row < r.v.size(); row += static_cast<size_t>(n)) {
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; j++) m = std::max(m, r.v[row + j]);
        for (int64_t j = 0; j < n; j++) sum += std::exp(r.v[row + j] - m);
        for (int64_t j = 0; j < n; j++) {
          sm.v[row + j] = std::exp(r.v[row + j] - m) / sum;
          lsm.v[row + j] = r.v[row + j] - m - std::log(sum);
        }
      }
      Tol tol = tol_for(dt);
      if (dt == DType::F32) tol = {2e-5, 2e-5};
      if (dt == DType::F64) tol = {1e-13, 1e-13};
      const Variant v = kAllVariants[rng.integer(0, 4)];
      const Tensor t = make_tensor(r, dt, d, v);
      WICK_EXPECT_CLOSE(t.softmax_last_dim(), round_ref(sm, dt), tol);
      WICK_EXPECT_CLOSE(t.log_softmax(-1), round_ref(lsm, dt), tol);
    }
  }
}

TEST_P(GpuNorm, RmsNormAndLayerNorm) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t n = rng.integer(1, 300);
    const Ref r = round_ref(random_ref(rng, {4, n}), dt);
    const Ref alpha = round_ref(random_ref(rng, {n}), dt),
              beta = round_ref(random_ref(rng, {n}), dt);
    const double eps = 1e-5;
    Ref rms = r, ln = r;
    for (int64_t row = 0; row < 4; row++) {
      double ss = 0, mean = 0, var = 0;
      for (int64_t j = 0; j < n; j++) mean += r.v[row * n + j] / n;
      for (int64_t j = 0; j < n; j++) {
        const double x = r.v[row * n + j];
        ss += x * x / n;
        var += (x - mean) * (x - mean) / n;
      }
      for (int64_t j = 0; j < n; j++) {
        const double x = r.v[row * n + j];
        rms.v[row * n + j] = x / std::sqrt(ss + eps) * alpha.v[j];
        ln.v[row * n + j] = (x - mean) / std::sqrt(var + eps) * alpha.v[j] + beta.v[j];
      }
    }
    Tol tol = tol_for(dt);
    if (dt == DType::F32) tol = {1e-5, 5e-5};
    if (dt == DType::F64) tol = {1e-10, 1e-10};
    const Tensor t = make_tensor(r, dt, d, Variant::Transposed);
    // alpha and beta as strided views (every other element of a longer tensor).
    const Tensor a = make_tensor(alpha, dt, d, Variant::Narrowed);
    const Tensor b = make_tensor(beta, dt, d, Variant::Offset);
    WICK_EXPECT_CLOSE(t.rms_norm(a, eps), round_ref(rms, dt), tol);
    WICK_EXPECT_CLOSE(t.layer_norm(a, b, eps), round_ref(ln, dt), tol);
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuNorm);

class GpuRope : public GpuDeviceTest {};

TEST_P(GpuRope, PlainAndInterleavedWithSharedAndBatchedTables) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  const int64_t b = 2, h = 3, t = 5, dim = 8;
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Ref x = round_ref(random_ref(rng, {b, h, t, dim}), dt);
    for (bool batched : {false, true}) {
      const Shape cs = batched ? Shape{b, t, dim / 2} : Shape{t, dim / 2};
      const Ref c = round_ref(random_ref(rng, cs, -1, 1), dt),
                s = round_ref(random_ref(rng, cs, -1, 1), dt);
      for (bool interleaved : {false, true}) {
        Ref want = x;
        for_each_index(x.shape, [&](const std::vector<int64_t>& i) {
          const int64_t e = i[3];
          const int64_t pair = interleaved ? e / 2 : e % (dim / 2);
          const int64_t lo = interleaved ? 2 * pair : pair,
                        hi = interleaved ? lo + 1 : pair + dim / 2;
          const std::vector<int64_t> ci =
              batched ? std::vector<int64_t>{i[0], i[2], pair} : std::vector<int64_t>{i[2], pair};
          const double cv = c.at(ci), sv = s.at(ci);
          const double a = x.at({i[0], i[1], i[2], lo}), bb = x.at({i[0], i[1], i[2], hi});
          want.v[static_cast<size_t>(x.index(i))] = e == lo ? a * cv - bb * sv : a * sv + bb * cv;
        });
        const Tensor xt = make_tensor(x, dt, d, Variant::Transposed);
        const Tensor ct = make_tensor(c, dt, d), st = make_tensor(s, dt, d, Variant::Narrowed);
        const Tensor got = interleaved ? xt.rope_i(ct, st) : xt.rope(ct, st);
        WICK_EXPECT_CLOSE(got, round_ref(want, dt),
                          dt == DType::F32 ? Tol{1e-6, 1e-6} : tol_for(dt));
      }
    }
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuRope);

// ---- arg-sort ----------------------------------------------------------------------------------

// The stable permutation sorting each row (NaN largest, -0 == +0).
std::vector<double> argsort_ref(const Ref& r, bool ascending) {
  const int64_t n = r.shape[r.shape.rank() - 1];
  std::vector<double> out;
  for (size_t row = 0; row < r.v.size(); row += static_cast<size_t>(n)) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto key = [&](int64_t j) { return r.v[row + static_cast<size_t>(j)]; };
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      const double x = key(a), y = key(b);
      if (std::isnan(x) || std::isnan(y))
        return ascending ? !std::isnan(x) && std::isnan(y) : std::isnan(x) && !std::isnan(y);
      return ascending ? x < y : x > y;
    });
    for (int64_t j : idx) out.push_back(static_cast<double>(j));
  }
  return out;
}

class GpuSort : public GpuDeviceTest {};

TEST_P(GpuSort, StableBothDirectionsEveryDType) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : compute_dtypes(d)) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t n : {1, 7, 300}) {
      // Few distinct values: ties everywhere, which only a stable sort orders right.
      Ref r = is_float(dt) ? round_ref(random_int_ref(rng, {3, n}, -3, 3), dt)
                           : random_int_ref(rng, {3, n}, 0, 4);
      if (is_float(dt) && n > 5) {
        r.v[2] = NAN;
        r.v[4] = -0.0;
      }
      const Tensor t = make_tensor(r, dt, d, Variant::Transposed);
      for (bool asc : {true, false}) {
        const Tensor got = t.arg_sort_last_dim(asc);
        EXPECT_EQ(got.dtype(), DType::U32);
        WICK_EXPECT_CLOSE(got, (Ref{r.shape, argsort_ref(r, asc)}), Tol{0, 0});
      }
    }
  }
  expect_error(
      [&] {
        Tensor::zeros({2, 3000}, DType::F32, d).arg_sort_last_dim();
      },
      ErrorKind::Unsupported, {"arg_sort_last_dim", "3000", device_kind_name(d.kind())});
}

WICK_INSTANTIATE_GPU_DEVICES(GpuSort);

// ---- matmul -------------------------------------------------------------------------------------

Tol matmul_tol(DType dt, int64_t k) {
  Tol t = tol_for(dt);
  t.atol *= std::sqrt(static_cast<double>(k)) * 4;
  if (dt == DType::F32) t.rtol = 1e-5;
  return t;
}

class GpuMatmul : public GpuDeviceTest {};

TEST_P(GpuMatmul, TiledShapesDTypesAndTranspositions) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  struct Dims {
    int64_t m, n, k;
  };
  // Unaligned small, aligned to the 32 tiles, aligned to the 64 tiles, and ragged large.
  const Dims cases[] = {{7, 9, 5}, {32, 64, 48}, {128, 128, 32}, {130, 131, 37}};
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (const Dims& c : cases) {
      SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
      const Ref a = round_ref(random_ref(rng, {c.m, c.k}), dt),
                b = round_ref(random_ref(rng, {c.k, c.n}), dt);
      const Variant va = kAllVariants[rng.integer(0, 4)], vb = kAllVariants[rng.integer(0, 4)];
      const Tensor got = make_tensor(a, dt, d, va).matmul(make_tensor(b, dt, d, vb));
      WICK_EXPECT_CLOSE(got, round_ref(ref_matmul(a, b), dt), matmul_tol(dt, c.k));
    }
  }
  // Integers: exact (u32 wraps, the inputs keep it small).
  const Ref ai = random_int_ref(rng, {5, 6}, 0, 9), bi = random_int_ref(rng, {6, 3}, 0, 9);
  WICK_EXPECT_CLOSE(make_tensor(ai, DType::U32, d).matmul(make_tensor(bi, DType::U32, d)),
                    ref_matmul(ai, bi), Tol{0, 0});
}

TEST_P(GpuMatmul, GemvBothOrientations) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t k : {9, 300}) {  // a thread per output, and a workgroup per output
      const Ref v = round_ref(random_ref(rng, {1, k}), dt),
                m = round_ref(random_ref(rng, {k, 40}), dt);
      WICK_EXPECT_CLOSE(make_tensor(v, dt, d).matmul(make_tensor(m, dt, d, Variant::Transposed)),
                        round_ref(ref_matmul(v, m), dt), matmul_tol(dt, k));
      const Ref a = round_ref(random_ref(rng, {3, 40, k}), dt),
                x = round_ref(random_ref(rng, {k, 1}), dt);
      WICK_EXPECT_CLOSE(make_tensor(a, dt, d, Variant::Narrowed).matmul(make_tensor(x, dt, d)),
                        round_ref(ref_matmul(a, x), dt), matmul_tol(dt, k));
    }
  }
}

TEST_P(GpuMatmul, AnyBatchStridesIncludingTheSeedsBatchMmCase) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  // The seed's repro: x (2,4,3,5) narrowed on dim 1 to (2,2,3,5), stride (60,15,5,1), times
  // y (2,2,5,6). candle 0.11 read batch (1, *) from offset 30 instead of 60.
  const Ref x = round_ref(random_ref(rng, {2, 4, 3, 5}), DType::F32);
  const Ref y = round_ref(random_ref(rng, {2, 2, 5, 6}), DType::F32);
  const Tensor xt = make_tensor(x, DType::F32, d), yt = make_tensor(y, DType::F32, d);
  const Tensor xn = xt.narrow(1, 0, 2);
  Ref xn_ref{{2, 2, 3, 5}, {}};
  for_each_index(xn_ref.shape, [&](const std::vector<int64_t>& i) { xn_ref.v.push_back(x.at(i)); });
  WICK_EXPECT_CLOSE(xn.matmul(yt), ref_matmul(xn_ref, y), matmul_tol(DType::F32, 5));
  // Broadcast batch dims (stride 0) on either side, and a transposed batch layout.
  const Ref p = round_ref(random_ref(rng, {3, 1, 4, 6}), DType::F32),
            q = round_ref(random_ref(rng, {5, 6, 2}), DType::F32);
  WICK_EXPECT_CLOSE(make_tensor(p, DType::F32, d, Variant::Transposed)
                        .matmul(make_tensor(q, DType::F32, d, Variant::Narrowed)),
                    ref_matmul(p, q), matmul_tol(DType::F32, 6));
}

WICK_INSTANTIATE_GPU_DEVICES(GpuMatmul);

}  // namespace
}  // namespace wick::testing
