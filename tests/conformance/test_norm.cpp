// softmax, log_softmax, rms_norm, layer_norm, rope and rope_i against float64 references, on
// every float dtype and input layout, plus the threaded path, masked (-inf) and NaN rows, and
// every error path of the front end.
#include <cmath>
#include <limits>

#include "harness.h"

namespace wick::testing {
namespace {

// Applies f(row in, row out) to every row of the last dim of r.
template <typename F>
Ref map_last_dim(const Ref& r, F&& f) {
  Ref out{r.shape, std::vector<double>(r.v.size())};
  const int64_t n = r.shape[r.shape.rank() - 1];
  for (int64_t b = 0; b < r.numel(); b += n)
    f(&r.v[static_cast<size_t>(b)], &out.v[static_cast<size_t>(b)], n);
  return out;
}

Ref softmax_ref(const Ref& r, bool log) {
  return map_last_dim(r, [&](const double* x, double* y, int64_t n) {
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++) m = std::isnan(x[j]) || std::isnan(m) ? NAN : std::max(m, x[j]);
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += std::exp(x[j] - m);
    for (int64_t j = 0; j < n; j++) y[j] = log ? (x[j] - m) - std::log(s) : std::exp(x[j] - m) / s;
  });
}

// Swaps dim d of r with the last (the reference of softmax(dim) runs on rows); its own inverse.
Ref swap_with_last(const Ref& r, size_t d) {
  std::vector<int64_t> dims = r.shape.dims();
  const size_t last = dims.size() - 1;
  std::swap(dims[d], dims[last]);
  Ref out{Shape(dims), {}};
  for_each_index(out.shape, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j = i;
    std::swap(j[d], j[last]);
    out.v.push_back(r.at(j));
  });
  return out;
}

// exp(x - max) is computed from x - max rounded in the compute type: a relative error of up to
// spread * u, spread bounding |x - max|; then a few ulps (exp, the division) and the output
// rounding. Results below f32's normal range are flushed to 0 (f32 compute), and f16 rounds
// its subnormals to steps of 2^-24. log_softmax's values are x - max - log(sum): the same
// errors, absolute.
Tol softmax_tol(DType dt, double spread, bool log) {
  const double u = compute_roundoff(dt), uo = unit_roundoff(dt);
  if (log) return {4 * (spread + 8) * u, 8 * u + uo};
  const double tiny = dt == DType::F16   ? std::ldexp(1.0, -25)
                      : dt == DType::F64 ? 1e-300
                                         : std::ldexp(1.0, -126);
  return {tiny, (spread + 8) * u + uo};
}

class Softmax : public DeviceTest {};

TEST_P(Softmax, LastDimEveryDTypeAndLayout) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : kFloatDTypes)
    for (Variant v : kAllVariants)
      for (bool log : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << dt << " " << variant_name(v) << (log ? " log_softmax" : " softmax"));
        const Shape s = random_shape(rng, 1, 4, 9);
        const Ref xr = round_ref(random_ref(rng, s, -8, 8), dt);
        const Tensor x = make_tensor(xr, dt, device(), v);
        const Tensor y = log ? x.log_softmax(-1) : x.softmax_last_dim();
        EXPECT_EQ(y.dtype(), dt);
        const Tol tol = softmax_tol(dt, 16, log);
        WICK_EXPECT_CLOSE(y, softmax_ref(xr, log), tol);
        if (!log) {  // every row sums to 1 (up to each element's output rounding)
          const Ref got = to_ref(y);
          const int64_t n = s[s.rank() - 1];
          for (int64_t b = 0; b < got.numel(); b += n) {
            double sum = 0;
            for (int64_t j = 0; j < n; j++) sum += got.v[static_cast<size_t>(b + j)];
            EXPECT_NEAR(sum, 1.0, tol.rtol) << "row " << b / n;
          }
        }
      }
}

TEST_P(Softmax, AnyDim) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : {DType::F32, DType::BF16})
    for (bool log : {false, true}) {
      const Shape s = random_shape(rng, 2, 4, 6);
      const Ref xr = round_ref(random_ref(rng, s, -4, 4), dt);
      const Tensor x = make_tensor(xr, dt, device(), Variant::Permuted);
      const auto d = static_cast<size_t>(rng.integer(0, static_cast<int64_t>(s.rank()) - 1));
      const Tensor y = log ? x.log_softmax(static_cast<int64_t>(d))
                           : x.softmax(static_cast<int64_t>(d) - static_cast<int64_t>(s.rank()));
      const Ref want = swap_with_last(softmax_ref(swap_with_last(xr, d), log), d);
      WICK_EXPECT_CLOSE(y, want, softmax_tol(dt, 8, log));
    }
}

TEST_P(Softmax, LargeRowsThreadedAndExtremeValues) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  // 300 x 700: past the parallel grain. Values up to +-80 (1000 would overflow a naive exp).
  Ref xr = round_ref(random_ref(rng, {300, 700}, -80, 80), DType::F32);
  for (size_t j = 0; j < 700; j++) xr.v[700 + j] = 1000.0 + static_cast<double>(j % 3);
  const Tensor x = make_tensor(xr, DType::F32, device());
  WICK_EXPECT_CLOSE(x.softmax_last_dim(), softmax_ref(xr, false),
                    softmax_tol(DType::F32, 160, false));
  WICK_EXPECT_CLOSE(x.log_softmax(1), softmax_ref(xr, true), softmax_tol(DType::F32, 160, true));
}

TEST_P(Softmax, MaskedAndNaNRows) {
  const double inf = std::numeric_limits<double>::infinity(),
               nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    // Row 0: some -inf (masked) -> 0 there; row 1: all -inf -> NaN (0/0, as PyTorch);
    // row 2: a NaN -> all NaN; row 3: +inf -> NaN at inf (inf - inf), 0 elsewhere.
    const Ref xr{{4, 5}, {0.5, -inf, 1.5, -inf, -2, -inf, -inf, -inf, -inf, -inf,
                          1,   2,    nan, 3,    4,  1,    inf,  2,    3,    4}};
    const Tensor x = make_tensor(xr, dt, device());
    WICK_EXPECT_CLOSE(x.softmax_last_dim(), softmax_ref(xr, false), softmax_tol(dt, 8, false));
    WICK_EXPECT_CLOSE(x.log_softmax(-1), softmax_ref(xr, true), softmax_tol(dt, 8, true));
  }
}

TEST_P(Softmax, Errors) {
  const Tensor s = Tensor::full(1.0, {}, DType::F32, device());
  expect_error([&] { s.softmax_last_dim(); }, ErrorKind::Shape, {"softmax_last_dim", "scalar"});
  expect_error([&] { s.softmax(0); }, ErrorKind::OutOfRange, {"softmax", "[]"});
  expect_error([&] { s.log_softmax(0); }, ErrorKind::OutOfRange, {"log_softmax", "[]"});
  const Tensor i = Tensor::zeros({2, 3}, DType::U32, device());
  expect_error([&] { i.softmax_last_dim(); }, ErrorKind::DType,
               {"softmax_last_dim", "u32", "[2, 3]"});
  expect_error([&] { i.log_softmax(0); }, ErrorKind::DType, {"log_softmax", "u32", "[3, 2]"});
  const Tensor x = Tensor::zeros({2, 3}, DType::F32, device());
  expect_error([&] { x.softmax(2); }, ErrorKind::OutOfRange, {"softmax", "[2, 3]"});
  expect_error([&] { x.log_softmax(-3); }, ErrorKind::OutOfRange, {"log_softmax", "[2, 3]"});
}

WICK_INSTANTIATE_DEVICES(Softmax);

// ---- rms_norm / layer_norm ---------------------------------------------------------------------

struct NormRef {
  Ref y;
  double max_scale = 0;  // largest 1 / sqrt(var + eps) over the rows
};

NormRef norm_ref(const Ref& x, const Ref& alpha, const Ref* beta, double eps) {
  NormRef r;
  r.y = map_last_dim(x, [&](const double* v, double* y, int64_t n) {
    double mean = 0, sq = 0;
    for (int64_t j = 0; j < n; j++) mean += v[j] / static_cast<double>(n);
    if (!beta) mean = 0;  // rms_norm: no centring
    for (int64_t j = 0; j < n; j++) sq += (v[j] - mean) * (v[j] - mean) / static_cast<double>(n);
    const double scale = 1 / std::sqrt(sq + eps);
    r.max_scale = std::max(r.max_scale, scale);
    for (int64_t j = 0; j < n; j++) {
      const auto k = static_cast<size_t>(j);
      y[j] = (v[j] - mean) * scale * alpha.v[k] + (beta ? beta->v[k] : 0.0);
    }
  });
  return r;
}

// x - mean is rounded in the compute type (up to ~4u * max|x| with the mean's own rounding), then
// scaled by 1 / sqrt(var + eps) and alpha; the products add a few ulps; then the output rounding.
Tol norm_tol(DType dt, const NormRef& r, double max_x, double max_alpha) {
  const double u = compute_roundoff(dt), uo = unit_roundoff(dt);
  return {8 * u * max_x * r.max_scale * max_alpha + 8 * u, 8 * u + uo};
}

// A rank-1 parameter of length n, either contiguous, a strided view or a stride-0 broadcast.
Tensor make_param(Rng& rng, Ref& values, DType dt, const Device& dev, int kind) {
  const int64_t n = values.numel();
  if (kind == 2) {  // one value broadcast (stride 0)
    const Ref one = round_ref(random_ref(rng, {1}, -2, 2), dt);
    values.v.assign(static_cast<size_t>(n), one.v[0]);
    return make_broadcast(one, {n}, dt, dev);
  }
  values = round_ref(values, dt);
  if (kind == 1) {  // every other element of a longer vector
    Ref big{{2 * n}, std::vector<double>(static_cast<size_t>(2 * n), 99.0)};
    for (int64_t j = 0; j < n; j++)
      big.v[static_cast<size_t>(2 * j)] = values.v[static_cast<size_t>(j)];
    return make_tensor(big, dt, dev).reshape({n, 2}).narrow(1, 0, 1).squeeze(1);
  }
  return make_tensor(values, dt, dev);
}

class Norm : public DeviceTest {};

TEST_P(Norm, RmsAndLayerNormEveryDTypeAndLayout) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : kFloatDTypes)
    for (Variant v : kAllVariants)
      for (bool layer : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << dt << " " << variant_name(v) << (layer ? " layer_norm" : " rms_norm"));
        const Shape s = random_shape(rng, 1, 4, 9);
        const int64_t n = s[s.rank() - 1];
        const Ref xr = round_ref(random_ref(rng, s, -2, 2), dt);
        const Tensor x = make_tensor(xr, dt, device(), v);
        Ref ar = random_ref(rng, {n}, -2, 2), br = random_ref(rng, {n}, -2, 2);
        const Tensor alpha = make_param(rng, ar, dt, device(), static_cast<int>(rng.integer(0, 2)));
        const Tensor beta = make_param(rng, br, dt, device(), static_cast<int>(rng.integer(0, 2)));
        const double eps = rng.integer(0, 1) ? 1e-5 : 1e-2;
        const Tensor y = layer ? x.layer_norm(alpha, beta, eps) : x.rms_norm(alpha, eps);
        EXPECT_EQ(y.dtype(), dt);
        const NormRef want = norm_ref(xr, ar, layer ? &br : nullptr, eps);
        WICK_EXPECT_CLOSE(y, want.y, norm_tol(dt, want, 2, 2));
      }
}

TEST_P(Norm, LargeThreaded) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Ref xr = round_ref(random_ref(rng, {256, 512}, -3, 5), DType::F32);
  Ref ar = random_ref(rng, {512}), br = random_ref(rng, {512});
  const Tensor x = make_tensor(xr, DType::F32, device());
  const Tensor alpha = make_param(rng, ar, DType::F32, device(), 0),
               beta = make_param(rng, br, DType::F32, device(), 0);
  const NormRef rms = norm_ref(xr, ar, nullptr, 1e-6), layer = norm_ref(xr, ar, &br, 1e-6);
  WICK_EXPECT_CLOSE(x.rms_norm(alpha, 1e-6), rms.y, norm_tol(DType::F32, rms, 5, 2));
  WICK_EXPECT_CLOSE(x.layer_norm(alpha, beta, 1e-6), layer.y, norm_tol(DType::F32, layer, 5, 2));
}

TEST_P(Norm, Errors) {
  const Tensor x = Tensor::zeros({2, 3}, DType::F32, device());
  const Tensor a3 = Tensor::ones({3}, DType::F32, device());
  const Tensor a4 = Tensor::ones({4}, DType::F32, device());
  const Tensor a13 = Tensor::ones({1, 3}, DType::F32, device());
  const Tensor h3 = Tensor::ones({3}, DType::F16, device());
  expect_error([&] { x.rms_norm(a4, 1e-5); }, ErrorKind::Shape,
               {"rms_norm", "alpha", "[3]", "[4]", "[2, 3]"});
  expect_error([&] { x.rms_norm(a13, 1e-5); }, ErrorKind::Shape, {"rms_norm", "alpha", "[1, 3]"});
  expect_error([&] { x.rms_norm(h3, 1e-5); }, ErrorKind::DType, {"rms_norm", "f16", "f32"});
  expect_error([&] { x.layer_norm(a4, a3, 1e-5); }, ErrorKind::Shape,
               {"layer_norm", "alpha", "[4]"});
  expect_error([&] { x.layer_norm(a3, a4, 1e-5); }, ErrorKind::Shape,
               {"layer_norm", "beta", "[4]", "[2, 3]"});
  expect_error([&] { x.layer_norm(a3, h3, 1e-5); }, ErrorKind::DType, {"layer_norm", "f16"});
  const Tensor s = Tensor::full(1.0, {}, DType::F32, device());
  expect_error([&] { s.rms_norm(a3, 1e-5); }, ErrorKind::Shape, {"rms_norm", "scalar"});
  expect_error([&] { s.layer_norm(a3, a3, 1e-5); }, ErrorKind::Shape, {"layer_norm", "scalar"});
  const Tensor i = Tensor::zeros({2, 3}, DType::I64, device());
  expect_error([&] { i.rms_norm(a3, 1e-5); }, ErrorKind::DType, {"rms_norm", "i64"});
}

WICK_INSTANTIATE_DEVICES(Norm);

// ---- rope / rope_i -----------------------------------------------------------------------------

// x (b, h, t, d); cos/sin (b, t, d/2) values (already expanded over b).
Ref rope_ref(const Ref& x, const Ref& cos, const Ref& sin, bool interleaved) {
  Ref out{x.shape, std::vector<double>(x.v.size())};
  const int64_t nb = x.shape[0], nh = x.shape[1], nt = x.shape[2], d = x.shape[3], half = d / 2;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t h = 0; h < nh; h++)
      for (int64_t t = 0; t < nt; t++) {
        const auto row = static_cast<size_t>(((b * nh + h) * nt + t) * d),
                   cs = static_cast<size_t>((b * nt + t) * half);
        for (int64_t k = 0; k < half; k++) {
          const double c = cos.v[cs + static_cast<size_t>(k)],
                       s = sin.v[cs + static_cast<size_t>(k)];
          const auto i1 = row + static_cast<size_t>(interleaved ? 2 * k : k);
          const auto i2 = row + static_cast<size_t>(interleaved ? 2 * k + 1 : k + half);
          out.v[i1] = x.v[i1] * c - x.v[i2] * s;
          out.v[i2] = x.v[i1] * s + x.v[i2] * c;
        }
      }
  return out;
}

// Expands (t, d/2) values to (b, t, d/2).
Ref expand_b(const Ref& r, int64_t b) {
  Ref out{{b, r.shape[0], r.shape[1]}, {}};
  for (int64_t i = 0; i < b; i++) out.v.insert(out.v.end(), r.v.begin(), r.v.end());
  return out;
}

class Rope : public DeviceTest {};

TEST_P(Rope, BothFormsEveryDTypeLayoutAndCosShape) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : kFloatDTypes)
    for (Variant v : kAllVariants)
      for (bool interleaved : {false, true})
        for (bool per_batch : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << dt << " " << variant_name(v) << (interleaved ? " rope_i" : " rope")
                       << (per_batch ? " (b, t, d/2)" : " (t, d/2)"));
          const int64_t b = rng.integer(1, 3), h = rng.integer(1, 3), t = rng.integer(1, 5),
                        d = 2 * rng.integer(1, 6);
          const Ref xr = round_ref(random_ref(rng, {b, h, t, d}), dt);
          const Shape cs = per_batch ? Shape{b, t, d / 2} : Shape{t, d / 2};
          const Ref cr = round_ref(random_ref(rng, cs, -1, 1), dt),
                    sr = round_ref(random_ref(rng, cs, -1, 1), dt);
          const Tensor x = make_tensor(xr, dt, device(), v);
          // cos/sin laid out differently from x, so their strides are exercised too.
          const Variant cv = kAllVariants[rng.integer(0, 4)];
          const Tensor c = make_tensor(cr, dt, device(), cv), s = make_tensor(sr, dt, device(), cv);
          const Tensor y = interleaved ? x.rope_i(c, s) : x.rope(c, s);
          EXPECT_EQ(y.dtype(), dt);
          const Ref want = rope_ref(xr, per_batch ? cr : expand_b(cr, b),
                                    per_batch ? sr : expand_b(sr, b), interleaved);
          // Two products and a sum of terms up to 2 in size, computed in f32/f64, then rounded.
          const double u = compute_roundoff(dt), uo = unit_roundoff(dt);
          WICK_EXPECT_CLOSE(y, want, (Tol{16 * u, uo}));
        }
}

TEST_P(Rope, LargeThreaded) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Ref xr = round_ref(random_ref(rng, {2, 4, 64, 128}), DType::F32);
  const Ref cr = round_ref(random_ref(rng, {64, 64}, -1, 1), DType::F32),
            sr = round_ref(random_ref(rng, {64, 64}, -1, 1), DType::F32);
  const Tensor x = make_tensor(xr, DType::F32, device(), Variant::Transposed);
  const Tensor c = make_tensor(cr, DType::F32, device()), s = make_tensor(sr, DType::F32, device());
  const double u = compute_roundoff(DType::F32);
  WICK_EXPECT_CLOSE(x.rope(c, s), rope_ref(xr, expand_b(cr, 2), expand_b(sr, 2), false),
                    (Tol{16 * u, u}));
  WICK_EXPECT_CLOSE(x.rope_i(c, s), rope_ref(xr, expand_b(cr, 2), expand_b(sr, 2), true),
                    (Tol{16 * u, u}));
}

TEST_P(Rope, Errors) {
  const Device dev = device();
  const Tensor x = Tensor::zeros({1, 2, 3, 4}, DType::F32, dev);
  const Tensor c = Tensor::zeros({3, 2}, DType::F32, dev);
  expect_error(
      [&] {
        Tensor::zeros({1, 2, 3, 5}, DType::F32, dev).rope(c, c);
      },
      ErrorKind::Shape, {"rope", "even", "[1, 2, 3, 5]"});
  expect_error(
      [&] {
        Tensor::zeros({1, 2, 3, 5}, DType::F32, dev).rope_i(c, c);
      },
      ErrorKind::Shape, {"rope_i", "even"});
  expect_error(
      [&] {
        Tensor::zeros({2, 3, 4}, DType::F32, dev).rope(c, c);
      },
      ErrorKind::Shape, {"rope", "(b, h, t, d)", "[2, 3, 4]"});
  const Tensor c_bad = Tensor::zeros({3, 3}, DType::F32, dev);
  expect_error([&] { x.rope(c_bad, c_bad); }, ErrorKind::Shape,
               {"rope", "cos/sin", "[3, 2]", "[1, 3, 2]", "[3, 3]"});
  expect_error(
      [&] {
        x.rope_i(Tensor::zeros({2, 3, 2}, DType::F32, dev),
                 Tensor::zeros({2, 3, 2}, DType::F32, dev));
      },
      ErrorKind::Shape, {"rope_i", "[2, 3, 2]", "[1, 2, 3, 4]"});
  expect_error(
      [&] {
        x.rope(c, Tensor::zeros({1, 3, 2}, DType::F32, dev));
      },
      ErrorKind::Shape, {"rope", "[3, 2]", "[1, 3, 2]"});
  expect_error(
      [&] {
        x.rope(Tensor::zeros({3, 2}, DType::F16, dev), c);
      },
      ErrorKind::DType, {"rope", "f16", "f32"});
  expect_error(
      [&] {
        Tensor::zeros({1, 2, 3, 4}, DType::U32, dev).rope(c, c);
      },
      ErrorKind::DType, {"rope", "u32"});
  expect_error([&] { Tensor::full(1.0, {}, DType::F32, dev).rope(c, c); }, ErrorKind::Shape,
               {"rope", "[]"});
}

WICK_INSTANTIATE_DEVICES(Rope);

}  // namespace
}  // namespace wick::testing
