// Unary element-wise ops: every op x dtype x layout, broadcast (stride-0) inputs, tensors large
// enough to be split over threads, empty tensors, domain edges, integer semantics, error paths.
// Binary ops, comparisons and where_cond are in test_elementwise_binary.cpp.
#include <cmath>
#include <limits>

#include "conformance/elementwise_ref.h"
#include "cpu/strided.h"

namespace wick::testing {
namespace {

using namespace elementwise;

// Elements of the "large" tests: enough for every CPU loop to be split over two threads.
constexpr int64_t kLargeRows = 300, kLargeCols = 260;
static_assert(kLargeRows * kLargeCols > 2 * cpu::kParallelGrain);

// Exact ops must match the rounded reference bit for bit. The others are computed in f32 (f64
// for f64) and rounded once, like the reference: at a rounding boundary the two may land one
// ulp of the dtype apart, which tol_for's rtol covers (f16 ulp 2^-10 < 2e-3, bf16 2^-7 < 1.6e-2;
// f32 kernels stay within a few f32 ulp, far below 1e-5).
Tol unary_tol(const UnaryCase& c, DType dt) {
  return c.exact ? Tol{0, 0} : tol_for(dt);
}

// Runs c on `in`, whose values are `x` (already rounded to dt), against the reference.
::testing::AssertionResult check_unary(const UnaryCase& c, const Tensor& in, const Ref& x,
                                       DType dt) {
  const Tensor got = c.run(in);
  if (got.dtype() != dt)
    return ::testing::AssertionFailure() << c.name << " returned " << got.dtype();
  return close(got, round_ref(map_ref(x, c.ref), dt), unary_tol(c, dt));
}

class Unary : public DeviceTest {};

TEST_P(Unary, EveryOpDTypeAndLayout) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (const UnaryCase& c : unary_cases())
    for (DType dt : kFloatDTypes)
      for (Variant v : kAllVariants) {
        SCOPED_TRACE(c.name + " " + dtype_name(dt) + " " + variant_name(v));
        const Ref r = random_ref(rng, random_shape(rng, 1, 4, 7), c.lo, c.hi);
        EXPECT_TRUE(check_unary(c, make_tensor(r, dt, dev, v), round_ref(r, dt), dt));
      }
}

TEST_P(Unary, BroadcastInputs) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  // A stride-0 middle dim, and one element broadcast everywhere.
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 1, 4}, {3, 5, 4}}, {{1}, {6, 9}}, {{}, {2, 3}}};
  for (const UnaryCase& c : unary_cases())
    for (DType dt : kFloatDTypes)
      for (const auto& [from, to] : cases) {
        SCOPED_TRACE(c.name + " " + dtype_name(dt) + " " + from.str() + " -> " + to.str());
        const Ref r = random_ref(rng, from, c.lo, c.hi);
        EXPECT_TRUE(check_unary(c, make_broadcast(r, to, dt, dev),
                                broadcast_ref(round_ref(r, dt), to), dt));
      }
}

// The threaded split is shared by all ops; these cover each loop kind and grain: a plain op, a
// vectorised function, a libm call (smaller grain), 16-bit rows, an integer op, a strided input.
TEST_P(Unary, LargeTensorsSplitOverThreads) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const Ref r = random_ref(rng, {kLargeRows, kLargeCols}, -4, 4);
  const struct {
    const char* op;
    DType dt;
    Variant v;
  } runs[] = {{"neg", DType::F32, Variant::Contiguous},   {"exp", DType::F32, Variant::Contiguous},
              {"sin", DType::F32, Variant::Transposed},   {"gelu", DType::F16, Variant::Contiguous},
              {"tanh", DType::BF16, Variant::Transposed}, {"sqr", DType::F64, Variant::Permuted}};
  for (const auto& run : runs) {
    SCOPED_TRACE(std::string(run.op) + " " + dtype_name(run.dt) + " " + variant_name(run.v));
    EXPECT_TRUE(check_unary(unary_case(run.op), make_tensor(r, run.dt, dev, run.v),
                            round_ref(r, run.dt), run.dt));
  }
  const Ref ints = random_int_ref(rng, {kLargeRows, kLargeCols}, -1000, 1000);
  std::vector<int64_t> want;
  for (int64_t x : to_ints(ints)) want.push_back(int_unary_ref("abs", DType::I64, x));
  EXPECT_TRUE(
      ints_equal(make_tensor(ints, DType::I64, dev, Variant::Transposed).abs(), ints.shape, want));
}

TEST_P(Unary, EmptyTensors) {
  const Device dev = device();
  for (const UnaryCase& c : unary_cases())
    for (DType dt : kFloatDTypes)
      for (const Shape& shape : {Shape{0}, Shape{3, 0, 2}}) {
        const Tensor out = c.run(Tensor::zeros(shape, dt, dev));
        EXPECT_EQ(out.shape(), shape) << c.name;
        EXPECT_EQ(out.dtype(), dt) << c.name;
      }
}

// Zeros of both signs, infinities, NaN, a subnormal, overflow and underflow of exp, halves for
// round: every op against the reference (which follows IEEE / libm on these).
TEST_P(Unary, DomainEdges) {
  const Device dev = device();
  const double inf = std::numeric_limits<double>::infinity();
  const Ref specials{{22}, {0.0,  -0.0,  1.0, -1.0, inf, -inf, NAN, 1e-40, -1e-40, 100.0, -100.0,
                            88.0, -87.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,  1e-3,   -1e-3, 30.0}};
  for (const UnaryCase& c : unary_cases())
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(c.name + " " + dtype_name(dt));
      EXPECT_TRUE(check_unary(c, make_tensor(specials, dt, dev), round_ref(specials, dt), dt));
    }
  // The brief's edges, spelled out for f32.
  auto one = [&](double v) { return Tensor::full(v, {1}, DType::F32, dev); };
  EXPECT_EQ(one(0).log().to_scalar<float>(), -INFINITY);
  EXPECT_TRUE(std::isnan(one(-1).log().to_scalar<float>()));
  EXPECT_TRUE(std::isnan(one(-1).sqrt().to_scalar<float>()));
  EXPECT_EQ(one(0).recip().to_scalar<float>(), INFINITY);
  EXPECT_EQ(one(-0.0).recip().to_scalar<float>(), -INFINITY);
  EXPECT_EQ(one(100).exp().to_scalar<float>(), INFINITY);
  EXPECT_EQ(one(-200).exp().to_scalar<float>(), 0.0f);
  EXPECT_EQ(one(2.5).round().to_scalar<float>(), 3.0f);  // half away from zero, not to even
  EXPECT_EQ(one(-2.5).round().to_scalar<float>(), -3.0f);
}

TEST_P(Unary, IntegerOps) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (const UnaryCase& c : unary_cases()) {
    if (!c.takes_int) continue;
    for (DType dt : kIntDTypes) {
      if (c.name == "neg" && dt != DType::I64) continue;  // refused: see Errors
      for (Variant v : kAllVariants) {
        SCOPED_TRACE(c.name + " " + dtype_name(dt) + " " + variant_name(v));
        const auto [lo, hi] = int_range(dt);
        const Ref r = random_int_ref(rng, random_shape(rng, 1, 4, 7), lo, hi);
        std::vector<int64_t> want;
        for (int64_t x : to_ints(r)) want.push_back(int_unary_ref(c.name, dt, x));
        const Tensor got = c.run(make_tensor(r, dt, dev, v));
        EXPECT_EQ(got.dtype(), dt);
        EXPECT_TRUE(ints_equal(got, r.shape, want));
      }
    }
  }
  // The wrapping corner: abs and neg of the most negative i64 stay there.
  const int64_t min = std::numeric_limits<int64_t>::min();
  const Tensor m = Tensor::from_vec(std::vector<int64_t>{min, -5, 7}, {3}, dev);
  EXPECT_EQ(m.abs().to_vec<int64_t>(), (std::vector<int64_t>{min, 5, 7}));
  EXPECT_EQ(m.neg().to_vec<int64_t>(), (std::vector<int64_t>{min, 5, -7}));
  // Clamp keeps in-range values exactly even where doubles could not hold them.
  const int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_EQ(
      Tensor::from_vec(std::vector<int64_t>{big}, {1}, dev).clamp(0, 1e19).to_vec<int64_t>()[0],
      big);
}

TEST_P(Unary, Errors) {
  const Device dev = device();
  for (const UnaryCase& c : unary_cases())
    for (DType dt : kIntDTypes) {
      if (c.takes_int) continue;
      expect_error(
          [&] {
            c.run(Tensor::zeros({2, 3}, dt, dev));
          },
          ErrorKind::DType, {c.name, dtype_name(dt), "[2, 3]"});
    }
  for (DType dt : {DType::U8, DType::U32})
    expect_error([&] { Tensor::ones({4}, dt, dev).neg(); }, ErrorKind::DType,
                 {"neg", dtype_name(dt), "[4]"});
  expect_error([&] { Tensor::ones({4}, DType::F32, dev).clamp(2, 1); }, ErrorKind::OutOfRange,
               {"clamp"});
}

WICK_INSTANTIATE_DEVICES(Unary);

}  // namespace
}  // namespace wick::testing
