// matmul: every dtype, every input layout, batch broadcasting, against a float64 reference.
#include <cmath>
#include <cstdint>

#include "harness.h"

namespace wick::testing {
namespace {

// Tolerance for a sum of k products of values in [-2, 2] (|a * b| <= 4). Floats accumulate in
// f32 (f64 for f64): each of the ~2k roundings errs by at most u_acc times a partial sum, and
// partial sums stay within a few times sqrt(k) * 4 for random signs, so k * u_acc * 8 bounds the
// absolute error with margin while a wrong element (an O(1) error) still fails. f16/bf16 then
// round the result once: relative error u_out.
Tol matmul_tol(DType dt, int64_t k) {
  const double u_acc = dt == DType::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  double u_out = u_acc;
  if (dt == DType::F16) u_out = std::ldexp(1.0, -11);
  if (dt == DType::BF16) u_out = std::ldexp(1.0, -8);
  if (is_int(dt)) return {0, 0};
  return {static_cast<double>(k) * u_acc * 8 + 4 * u_acc, 2 * u_out};
}

// Values for dt: floats in [-2, 2]; integers small enough that no sum of <= 12 products wraps.
Ref random_values(Rng& rng, const Shape& s, DType dt) {
  if (dt == DType::I64) return random_int_ref(rng, s, -3, 3);
  if (is_int(dt)) return random_int_ref(rng, s, 0, 3);
  return random_ref(rng, s);
}

const std::vector<DType> kMatmulDTypes = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                          DType::U8,  DType::U32, DType::I64};

class Matmul : public DeviceTest {};

// Runs a @ b for one pair of reference operands through the given layouts and checks the result.
void check_matmul(const Device& dev, const Ref& a, const Ref& b, DType dt, Variant va, Variant vb) {
  SCOPED_TRACE(std::string(dtype_name(dt)) + " a=" + a.shape.str() + " " + variant_name(va) +
               " b=" + b.shape.str() + " " + variant_name(vb));
  const Ref ra = round_ref(a, dt), rb = round_ref(b, dt);
  const Tensor got = make_tensor(ra, dt, dev, va).matmul(make_tensor(rb, dt, dev, vb));
  EXPECT_EQ(got.dtype(), dt);
  WICK_EXPECT_CLOSE(got, round_ref(ref_matmul(ra, rb), dt), matmul_tol(dt, a.shape.dims().back()));
}

TEST_P(Matmul, EveryDTypeAndLayout) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : kMatmulDTypes)
    for (Variant va : kAllVariants)
      for (Variant vb : kAllVariants) {
        // Sizes from 1 so m == 1, n == 1 and k == 1 all come up.
        const int64_t m = rng.integer(1, 7), k = rng.integer(1, 12), n = rng.integer(1, 7);
        const bool batched = rng.integer(0, 1) == 1;
        const Shape sa = batched ? Shape{3, m, k} : Shape{m, k};
        const Shape sb = batched ? Shape{3, k, n} : Shape{k, n};
        check_matmul(dev, random_values(rng, sa, dt), random_values(rng, sb, dt), dt, va, vb);
      }
}

// x @ W^T with W's rows contiguous (a Linear's plain weight): the CPU multiplies f16/bf16 rows of x
// by W's rows as stored, 8 x rows a pass (half_matmul.cpp). Row counts around the pass and the
// 64-row limit, k around the 8- and 32-element vector steps, batches sharing one W, x strided.
TEST_P(Matmul, HalfRowsTimesTransposedWeight) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : {DType::F16, DType::BF16})
    for (int64_t m : {1, 2, 3, 5, 8, 9, 17, 64, 65})
      for (int64_t k : {1, 7, 8, 31, 33, 100, 576}) {
        const int64_t n = rng.integer(1, 40);
        const Ref x = random_values(rng, {2, m, k}, dt), w = random_values(rng, {n, k}, dt);
        SCOPED_TRACE(std::string(dtype_name(dt)) + " m=" + std::to_string(m) +
                     " k=" + std::to_string(k) + " n=" + std::to_string(n));
        const Ref rx = round_ref(x, dt), rw = round_ref(w, dt);
        Ref wt{Shape{k, n}, std::vector<double>(static_cast<size_t>(k * n))};
        for (int64_t j = 0; j < n; j++)
          for (int64_t p = 0; p < k; p++)
            wt.v[static_cast<size_t>(p * n + j)] = rw.v[static_cast<size_t>(j * k + p)];
        Ref want_in{Shape{2, k, n}, {}};
        for (int bi = 0; bi < 2; bi++) want_in.v.insert(want_in.v.end(), wt.v.begin(), wt.v.end());
        const Ref want = round_ref(ref_matmul(rx, want_in), dt);
        const Tensor wv = make_tensor(rw, dt, dev).t();  // (k, n), W's rows contiguous
        for (Variant vx : {Variant::Contiguous, Variant::Transposed, Variant::Narrowed}) {
          const Tensor got = make_tensor(rx, dt, dev, vx).matmul(wv);
          EXPECT_EQ(got.dtype(), dt);
          ASSERT_EQ(got.shape(), (Shape{2, m, n})) << variant_name(vx);
          WICK_EXPECT_CLOSE(got, want, matmul_tol(dt, k)) << variant_name(vx);
        }
      }
}

TEST_P(Matmul, DegenerateDims) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  // (m, k, n) with ones in every position (one-row and one-column products take the GEMV path),
  // including a 1 x 1 result and outer products.
  const int64_t cases[][3] = {{1, 5, 4}, {4, 5, 1}, {4, 1, 5}, {1, 1, 1}, {1, 7, 1}, {6, 1, 1}};
  // One dtype per kernel path: sgemm/sgemv, dgemm/dgemv, widened to f32, integer loop.
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::I64})
    for (const auto& c : cases)
      for (Variant va : kAllVariants)
        for (Variant vb : kAllVariants)
          check_matmul(dev, random_values(rng, {2, c[0], c[1]}, dt),
                       random_values(rng, {2, c[1], c[2]}, dt), dt, va, vb);
}

TEST_P(Matmul, BroadcastBatchDims) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  // Rank 2 x rank 3, rank 4 x rank 2, size-1 batch dims on either side, missing leading dims.
  const std::pair<Shape, Shape> cases[] = {
      {{3, 4}, {2, 4, 5}},          {{2, 3, 4}, {4, 5}},          {{2, 1, 3, 4}, {5, 4, 2}},
      {{1, 3, 3, 4}, {2, 1, 4, 5}}, {{2, 3, 2, 4}, {1, 4, 3}},    {{3, 1, 2, 4}, {2, 4, 1}},
      {{1, 1, 2, 4}, {2, 3, 4, 2}}, {{4, 1, 1, 3}, {1, 2, 3, 2}},
  };
  for (DType dt : kMatmulDTypes)
    for (const auto& [sa, sb] : cases)
      for (Variant v : kAllVariants)
        check_matmul(dev, random_values(rng, sa, dt), random_values(rng, sb, dt), dt, v,
                     v == Variant::Permuted ? Variant::Contiguous : Variant::Transposed);
}

// r with its size-1 dims repeated to shape `to` (same rank).
Ref broadcast_ref(const Ref& r, const Shape& to) {
  Ref out{to, {}};
  for_each_index(to, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j = i;
    for (size_t d = 0; d < j.size(); d++)
      if (r.shape[d] == 1) j[d] = 0;
    out.v.push_back(r.at(j));
  });
  return out;
}

// r with its last two dims swapped.
Ref transpose_ref(const Ref& r) {
  std::vector<int64_t> d = r.shape.dims();
  std::swap(d[d.size() - 1], d[d.size() - 2]);
  Ref out{Shape(d), {}};
  for_each_index(out.shape, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j = i;
    std::swap(j[j.size() - 1], j[j.size() - 2]);
    out.v.push_back(r.at(j));
  });
  return out;
}

// Operands whose stride-0 dims arrive as they are: broadcast batch dims, and broadcast rows or
// columns inside the matrix (which BLAS cannot read in place).
TEST_P(Matmul, StrideZeroOperands) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : kMatmulDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Ref a = round_ref(random_values(rng, {1, 3, 4}, dt), dt);
    const Ref row = round_ref(random_values(rng, {1, 5}, dt), dt);
    const Ref col = round_ref(random_values(rng, {4, 1}, dt), dt);
    const Tensor ta = make_broadcast(a, {2, 3, 4}, dt, dev);
    const Tensor trow = make_broadcast(row, {4, 5}, dt, dev);  // every row the same
    const Tensor tcol = make_broadcast(col, {4, 5}, dt, dev);  // every column the same
    const Ref ra = broadcast_ref(a, {2, 3, 4}), rrow = broadcast_ref(row, {4, 5});
    const Ref rcol = broadcast_ref(col, {4, 5});
    const Tol tol = matmul_tol(dt, 4);
    WICK_EXPECT_CLOSE(ta.matmul(trow), round_ref(ref_matmul(ra, rrow), dt), tol);
    WICK_EXPECT_CLOSE(ta.matmul(tcol), round_ref(ref_matmul(ra, rcol), dt), tol);
    WICK_EXPECT_CLOSE(tcol.t().matmul(ta.t()),
                      round_ref(ref_matmul(transpose_ref(rcol), transpose_ref(ra)), dt), tol);
  }
}

// Batch dims that are narrowed, permuted or both: each batch must be found through its own
// per-dim strides.
TEST_P(Matmul, StridedBatchDims) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : kMatmulDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Ref big = round_ref(random_values(rng, {3, 5, 4, 6}, dt), dt);
    const Ref w = round_ref(random_values(rng, {2, 3, 6, 3}, dt), dt);
    const Tensor tbig = make_tensor(big, dt, dev);
    const Tensor tw = make_tensor(w, dt, dev);
    // a = big[1:3, 1:4] permuted to (3, 2, 4, 6); b = w permuted to (3, 2, 6, 3).
    const Tensor a = tbig.narrow(0, 1, 2).narrow(1, 1, 3).permute({1, 0, 2, 3});
    const Tensor b = tw.permute({1, 0, 2, 3});
    Ref ra{{3, 2, 4, 6}, {}}, rb{{3, 2, 6, 3}, {}};
    for_each_index(ra.shape, [&](const std::vector<int64_t>& i) {
      ra.v.push_back(big.at({i[1] + 1, i[0] + 1, i[2], i[3]}));
    });
    for_each_index(rb.shape, [&](const std::vector<int64_t>& i) {
      rb.v.push_back(w.at({i[1], i[0], i[2], i[3]}));
    });
    WICK_EXPECT_CLOSE(a.matmul(b), round_ref(ref_matmul(ra, rb), dt), matmul_tol(dt, 6));
    // The same with a transposed inner matrix on the right.
    Ref rbt{{3, 2, 3, 6}, {}};
    for_each_index(rbt.shape, [&](const std::vector<int64_t>& i) {
      rbt.v.push_back(rb.at({i[0], i[1], i[3], i[2]}));
    });
    WICK_EXPECT_CLOSE(a.matmul(make_tensor(rbt, dt, dev).transpose(-1, -2)),
                      round_ref(ref_matmul(ra, rb), dt), matmul_tol(dt, 6));
  }
}

// The seed's `batch_mm` experiment: a batch dim narrowed on dim 1 read wrong memory on Metal.
TEST_P(Matmul, SeedBatchMm) {
  const Device dev = device();
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = Tensor::randn(0, 1, {2, 4, 3, 5}, dt, dev);
    const Tensor y = Tensor::randn(0, 1, {2, 2, 5, 6}, dt, dev);
    const Tensor xn = x.narrow(1, 0, 2);
    EXPECT_EQ(xn.layout().strides, (std::vector<int64_t>{60, 15, 5, 1}));
    const Tensor got = xn.matmul(y);
    const Ref want = round_ref(ref_matmul(to_ref(xn), to_ref(y)), dt);
    WICK_EXPECT_CLOSE(got, want, matmul_tol(dt, 5));
    WICK_EXPECT_CLOSE(got, to_ref(xn.contiguous().matmul(y)), Tol{0, 0});
  }
}

// Enough batches of small matrices to be split over threads (64 x 32^3 = 2^21 multiply-adds,
// two threads' worth), and one product big enough for OpenBLAS to use its own threads.
TEST_P(Matmul, ManyBatchesAndLargeMatrices) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
    SCOPED_TRACE(dtype_name(dt));
    const Ref a = random_values(rng, {64, 32, 32}, dt), b = random_values(rng, {32, 32}, dt);
    check_matmul(dev, a, b, dt, Variant::Contiguous, Variant::Transposed);
  }
  const Ref a = random_ref(rng, {70, 90}), b = random_ref(rng, {90, 80});
  check_matmul(dev, a, b, DType::F32, Variant::Transposed, Variant::Contiguous);
  check_matmul(dev, a, b, DType::F64, Variant::Contiguous, Variant::Narrowed);
}

// Products big enough for the Vulkan table's large tiles (vk_matmul.cpp: 128 x 128 for 32-bit
// dtypes once there are 128 such tiles over the batch, else 64 x 64; 64 x 64 for f64): k not a
// multiple of the k-tile; m and n odd (scalar fetches, every bound checked), multiples of 4 (vec4
// fetches where a dim is contiguous; the right operand broadcast over the batch) or multiples of
// every tile (no bound checks). f32 runs every layout on each side; the other dtypes the two orders
// that give each operand vec4 fetches along k and along m or n. Each (tile, fetch modes, dtype) is
// a pipeline to build, a third of a second on lavapipe: hence not every dtype x layout x layout.
TEST_P(Matmul, LargeTiles) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const std::pair<Shape, Shape> odd{{32, 131, 37}, {32, 37, 129}}, by4{{32, 132, 36}, {36, 260}},
      exact{{32, 256, 24}, {32, 24, 256}};
  std::vector<std::pair<Variant, Variant>> every;  // each layout once on each side
  for (size_t i = 0; i < std::size(kAllVariants); i++)
    every.emplace_back(kAllVariants[i], kAllVariants[(i + 1) % std::size(kAllVariants)]);
  const std::vector<std::pair<Variant, Variant>> crossed = {
      {Variant::Contiguous, Variant::Transposed}, {Variant::Transposed, Variant::Contiguous}};
  auto run = [&](DType dt, const std::pair<Shape, Shape>& shapes,
                 const std::vector<std::pair<Variant, Variant>>& layouts) {
    const auto& [sa, sb] = shapes;
    SCOPED_TRACE(std::string(dtype_name(dt)) + " a=" + sa.str() + " b=" + sb.str());
    const Ref a = round_ref(random_values(rng, sa, dt), dt);
    const Ref b = round_ref(random_values(rng, sb, dt), dt);
    const Ref want = round_ref(ref_matmul(a, b), dt);  // once: the slow part on a CPU
    for (const auto& [va, vb] : layouts) {
      SCOPED_TRACE(std::string(variant_name(va)) + " x " + variant_name(vb));
      WICK_EXPECT_CLOSE(make_tensor(a, dt, dev, va).matmul(make_tensor(b, dt, dev, vb)), want,
                        matmul_tol(dt, sa.dims().back()));
    }
  };
  run(DType::F32, odd, every);
  run(DType::F32, by4, every);
  run(DType::F32, exact, crossed);
  run(DType::F32, {{2, 132, 36}, {2, 36, 260}}, crossed);  // too few 128-tiles: 64 x 64, k-tile 16
  for (DType dt : {DType::F16, DType::BF16, DType::F64}) run(dt, by4, crossed);
  // Integers: vec4 fetches along k of 8-bit and 64-bit words (k = 24 keeps u8 sums below 256).
  run(DType::U8, exact, {crossed[0]});
  run(DType::I64, by4, {crossed[0]});
}

// Row counts on both sides of the GEMM libraries' row buckets (CUDA: products of up to 64 rows
// exact, then per 64, per 256 past 1024, sharing their bucket's algorithm), in rising and
// falling order so that a bucket's algorithm is first chosen by either end, against float64:
// every row of every count written and right (a wrong or stale row shows in the comparison).
TEST_P(Matmul, RowCountsAcrossGemmBuckets) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const int64_t k = 96, n = 80;
  std::vector<int64_t> rows = {64, 65, 100, 127, 128, 129, 191, 257, 1000, 1024, 1025, 1100};
  if (dev.is_cpu()) rows = {64, 65, 129, 1025};  // the CPU has no buckets: a few, for the harness
  rows.push_back(rng.integer(66, 1200));
  for (DType dt : {DType::F16, DType::BF16, DType::F32}) {
    const Ref b = round_ref(random_values(rng, {k, n}, dt), dt);
    const Tensor bt = make_tensor(b, dt, dev, Variant::Transposed);  // a weight's layout
    for (bool rising : {true, false})
      for (size_t i = 0; i < rows.size(); i++) {
        const int64_t m = rows[rising ? i : rows.size() - 1 - i];
        SCOPED_TRACE(std::string(dtype_name(dt)) + " m=" + std::to_string(m));
        const Ref a = round_ref(random_values(rng, {m, k}, dt), dt);
        WICK_EXPECT_CLOSE(make_tensor(a, dt, dev, Variant::Contiguous).matmul(bt),
                          round_ref(ref_matmul(a, b), dt), matmul_tol(dt, k));
      }
  }
}

// Integer matmul wraps modulo 2^bits of the dtype; the reference is exact integer arithmetic.
TEST_P(Matmul, IntegerWraps) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const int64_t m = 3, k = 9, n = 4;
  auto check = [&](auto zero, uint64_t hi) {
    using T = decltype(zero);
    std::vector<T> a(m * k), b(k * n), want(m * n);
    for (auto& x : a) x = static_cast<T>(static_cast<uint64_t>(rng.integer(0, INT64_MAX)) % hi);
    for (auto& x : b) x = static_cast<T>(static_cast<uint64_t>(rng.integer(0, INT64_MAX)) % hi);
    if constexpr (std::is_signed_v<T>) a[0] = static_cast<T>(-a[0]);  // negatives wrap too
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        uint64_t s = 0;
        for (int64_t p = 0; p < k; p++)
          s += static_cast<uint64_t>(a[i * k + p]) * static_cast<uint64_t>(b[p * n + j]);
        want[i * n + j] = static_cast<T>(s);
      }
    const Tensor got = Tensor::from_vec(a, {m, k}, dev)
                           .matmul(Tensor::from_vec(b, {k, n}, dev).t().contiguous().t());
    EXPECT_EQ(got.to_vec<T>(), want) << dtype_name(dtype_of<T>::value);
  };
  check(uint8_t{}, 256);
  check(uint32_t{}, uint64_t{1} << 32);
  check(int64_t{}, uint64_t{1} << 62);
}

TEST_P(Matmul, Errors) {
  const Device dev = device();
  const Tensor a = Tensor::zeros({2, 3}, DType::F32, dev);
  const Tensor v = Tensor::zeros({3}, DType::F32, dev);
  expect_error([&] { a.matmul(v); }, ErrorKind::Shape, {"matmul", "[2, 3]", "[3]"});
  expect_error([&] { v.matmul(a); }, ErrorKind::Shape, {"matmul", "[3]", "[2, 3]"});
  expect_error(
      [&] {
        a.matmul(Tensor::zeros({4, 5}, DType::F32, dev));
      },
      ErrorKind::Shape, {"matmul", "[2, 3] f32", "[4, 5] f32"});
  expect_error(
      [&] {
        Tensor::zeros({5, 2, 3}, DType::BF16, dev)
            .matmul(Tensor::zeros({2, 4, 3}, DType::BF16, dev));
      },
      ErrorKind::Shape, {"matmul", "[5, 2, 3] bf16", "[2, 4, 3] bf16"});
  expect_error(
      [&] {
        Tensor::zeros({2, 2, 3}, DType::F32, dev).matmul(Tensor::zeros({3, 3, 4}, DType::F32, dev));
      },
      ErrorKind::Shape, {"matmul", "[2]", "[3]"});
  expect_error(
      [&] {
        a.matmul(Tensor::zeros({3, 2}, DType::F16, dev));
      },
      ErrorKind::DType, {"matmul", "f32", "f16"});
}

TEST_P(Matmul, EmptyOperands) {
  const Device dev = device();
  for (DType dt : kMatmulDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    // k == 0: a sum of nothing is 0.
    const Tensor z = Tensor::ones({3, 0}, dt, dev).matmul(Tensor::ones({0, 4}, dt, dev));
    WICK_EXPECT_CLOSE(z, (Ref{{3, 4}, std::vector<double>(12, 0.0)}), Tol{0, 0});
    EXPECT_EQ(Tensor::ones({0, 3}, dt, dev).matmul(Tensor::ones({3, 4}, dt, dev)).shape(),
              (Shape{0, 4}));
    EXPECT_EQ(Tensor::ones({0, 2, 3}, dt, dev).matmul(Tensor::ones({3, 4}, dt, dev)).shape(),
              (Shape{0, 2, 4}));
  }
}

WICK_INSTANTIATE_DEVICES(Matmul);

}  // namespace
}  // namespace wick::testing
