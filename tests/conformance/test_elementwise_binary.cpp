// Binary element-wise ops, comparisons and where_cond: every op x dtype x layout, broadcasting,
// tensor-scalar forms and operators, large (threaded) and empty tensors, NaN and integer
// semantics, error paths.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "conformance/elementwise_ref.h"
#include "cpu/strided.h"

namespace wick::testing {
namespace {

using namespace elementwise;

constexpr int64_t kLargeRows = 300, kLargeCols = 260;
static_assert(kLargeRows * kLargeCols > 2 * cpu::kParallelGrain);

// Random operands for case c in dtype dt: ints from int_range (b nonzero for div).
Ref random_a(Rng& rng, const BinaryCase& c, const Shape& s, DType dt) {
  if (is_float(dt)) return random_ref(rng, s, c.lo, c.hi);
  const auto [lo, hi] = int_range(dt);
  return random_int_ref(rng, s, lo, hi);
}
Ref random_b(Rng& rng, const BinaryCase& c, const Shape& s, DType dt) {
  if (is_float(dt)) {
    Ref r = random_ref(rng, s, c.b_lo, c.b_hi);
    if (c.name == "div")  // both signs, away from 0
      for (double& v : r.v) v = rng.uniform(0, 1) < 0.5 ? -v : v;
    return r;
  }
  if (c.name != "div") return random_a(rng, c, s, dt);
  Ref r = random_int_ref(rng, s, 1, dt == DType::U8 ? 255 : 1 << 20);
  if (dt == DType::I64 || dt == DType::I32)
    for (double& v : r.v) v = rng.uniform(0, 1) < 0.5 ? -v : v;
  return r;
}

// Checks c's result on operands holding xa and xb (rounded to dt) against the reference.
::testing::AssertionResult check_result(const BinaryCase& c, const Tensor& got, const Ref& xa,
                                        const Ref& xb, DType dt) {
  if (got.dtype() != dt)
    return ::testing::AssertionFailure() << c.name << " returned " << got.dtype();
  if (is_float(dt)) return close(got, round_ref(zip_ref(xa, xb, c.ref), dt), tol_for(dt));
  const Shape shape = broadcast_shapes(xa.shape, xb.shape, "test");
  const Ref ba = broadcast_ref(xa, shape), bb = broadcast_ref(xb, shape);
  std::vector<int64_t> want;
  for (size_t i = 0; i < ba.v.size(); i++)
    want.push_back(
        int_binary_ref(c.name, dt, static_cast<int64_t>(ba.v[i]), static_cast<int64_t>(bb.v[i])));
  return ints_equal(got, shape, want);
}

::testing::AssertionResult check_binary(const BinaryCase& c, const Tensor& a, const Tensor& b,
                                        const Ref& xa, const Ref& xb, DType dt) {
  return check_result(c, c.run(a, b), xa, xb, dt);
}

bool takes(const BinaryCase& c, DType dt) {
  return is_float(dt) || !c.float_only;
}

class Binary : public DeviceTest {};

TEST_P(Binary, EveryOpDTypeAndLayout) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (const BinaryCase& c : binary_cases())
    for (DType dt : compute_dtypes(dev)) {
      if (!takes(c, dt)) continue;
      for (size_t i = 0; i < std::size(kAllVariants); i++) {
        // a in each layout, b in another one.
        const Variant va = kAllVariants[i], vb = kAllVariants[(i + 2) % std::size(kAllVariants)];
        SCOPED_TRACE(c.name + " " + dtype_name(dt) + " " + variant_name(va) + " / " +
                     variant_name(vb));
        const Shape shape = random_shape(rng, 1, 4, 7);
        const Ref ra = random_a(rng, c, shape, dt), rb = random_b(rng, c, shape, dt);
        EXPECT_TRUE(check_binary(c, make_tensor(ra, dt, dev, va), make_tensor(rb, dt, dev, vb),
                                 round_ref(ra, dt), round_ref(rb, dt), dt));
      }
    }
}

TEST_P(Binary, Broadcasting) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  // Scalar either side, row, column, rank extension, both sides broadcast, size-1 vector.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5, 7}, {}},        {{}, {5, 7}},           {{5, 7}, {7}}, {{5, 7}, {5, 1}},
      {{2, 3, 4}, {3, 4}}, {{4, 1, 3}, {1, 5, 1}}, {{1}, {6}},    {{3, 1}, {1, 4}}};
  for (const BinaryCase& c : binary_cases())
    for (DType dt : compute_dtypes(dev)) {
      if (!takes(c, dt)) continue;
      for (size_t i = 0; i < shapes.size(); i++) {
        const auto& [sa, sb] = shapes[i];
        const Variant va = kAllVariants[i % std::size(kAllVariants)];
        SCOPED_TRACE(c.name + " " + dtype_name(dt) + " " + sa.str() + " " + variant_name(va) +
                     " with " + sb.str());
        const Ref ra = random_a(rng, c, sa, dt), rb = random_b(rng, c, sb, dt);
        EXPECT_TRUE(check_binary(c, make_tensor(ra, dt, dev, va), make_tensor(rb, dt, dev),
                                 round_ref(ra, dt), round_ref(rb, dt), dt));
      }
    }
}

const BinaryCase& binary_case(const std::string& name) {
  for (const BinaryCase& c : binary_cases())
    if (c.name == name) return c;
  throw std::runtime_error("no binary case " + name);
}

// The threaded split is shared by all ops; these cover each loop kind and grain: contiguous,
// strided and broadcast rows, a libm call (pow, smaller grain), 16-bit rows, integers.
TEST_P(Binary, LargeTensorsSplitOverThreads) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const struct {
    const char* op;
    DType dt;
    Variant va;
    bool row;  // b is one row broadcast over a
  } runs[] = {{"add", DType::F32, Variant::Contiguous, false},
              {"sub", DType::F32, Variant::Transposed, false},
              {"mul", DType::F32, Variant::Contiguous, true},
              {"pow", DType::F32, Variant::Contiguous, false},
              {"div", DType::F16, Variant::Contiguous, false},
              {"maximum", DType::BF16, Variant::Permuted, true},
              {"div", DType::I64, Variant::Contiguous, false},
              {"mul", DType::U32, Variant::Transposed, true}};
  for (const auto& run : runs) {
    const BinaryCase& c = binary_case(run.op);
    SCOPED_TRACE(std::string(run.op) + " " + dtype_name(run.dt) + " " + variant_name(run.va) +
                 (run.row ? " row" : ""));
    const Ref ra = random_a(rng, c, {kLargeRows, kLargeCols}, run.dt);
    const Ref rb =
        random_b(rng, c, run.row ? Shape{kLargeCols} : Shape{kLargeRows, kLargeCols}, run.dt);
    EXPECT_TRUE(check_binary(c, make_tensor(ra, run.dt, dev, run.va), make_tensor(rb, run.dt, dev),
                             round_ref(ra, run.dt), round_ref(rb, run.dt), run.dt));
  }
}

TEST_P(Binary, EmptyTensors) {
  const Device dev = device();
  for (const BinaryCase& c : binary_cases())
    for (DType dt : compute_dtypes(dev)) {
      if (!takes(c, dt)) continue;
      for (const auto& [sa, sb, out] : {std::tuple{Shape{0, 3}, Shape{0, 3}, Shape{0, 3}},
                                        std::tuple{Shape{0, 3}, Shape{3}, Shape{0, 3}},
                                        std::tuple{Shape{2, 0}, Shape{2, 1}, Shape{2, 0}}}) {
        const Tensor got = c.run(Tensor::ones(sa, dt, dev), Tensor::ones(sb, dt, dev));
        EXPECT_EQ(got.shape(), out) << c.name;
        EXPECT_EQ(got.dtype(), dt) << c.name;
      }
    }
}

TEST_P(Binary, TensorScalarFormsAndOperators) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (const BinaryCase& c : binary_cases())
    for (DType dt : compute_dtypes(dev)) {
      if (!takes(c, dt)) continue;
      SCOPED_TRACE(c.name + " " + dtype_name(dt));
      const Shape shape = random_shape(rng, 1, 3, 6);
      const Ref ra = random_a(rng, c, shape, dt);
      // A scalar the dtype holds exactly (integer tensors refuse others, see Errors).
      const double s = round_ref(random_b(rng, c, {1}, dt), dt).v[0];
      for (Variant v : {Variant::Contiguous, Variant::Transposed, Variant::Offset})
        EXPECT_TRUE(check_result(c, c.run_scalar(make_tensor(ra, dt, dev, v), s), round_ref(ra, dt),
                                 Ref{{}, {s}}, dt))
            << variant_name(v);
    }
  // Operators are the methods.
  const Ref ra = random_ref(rng, {4, 5}), rb = random_ref(rng, {5}, 0.5, 2);
  const Tensor a = make_tensor(ra, DType::F32, dev), b = make_tensor(rb, DType::F32, dev);
  const Ref xa = round_ref(ra, DType::F32), xb = round_ref(rb, DType::F32);
  const Tol tol = tol_for(DType::F32);
  WICK_EXPECT_CLOSE(a + b, zip_ref(xa, xb, [](double x, double y) { return x + y; }), tol);
  WICK_EXPECT_CLOSE(a - b, zip_ref(xa, xb, [](double x, double y) { return x - y; }), tol);
  WICK_EXPECT_CLOSE(a * b, zip_ref(xa, xb, [](double x, double y) { return x * y; }), tol);
  WICK_EXPECT_CLOSE(a / b, zip_ref(xa, xb, [](double x, double y) { return x / y; }), tol);
  WICK_EXPECT_CLOSE(a + 2.5, map_ref(xa, [](double x) { return x + 2.5; }), tol);
  WICK_EXPECT_CLOSE(a - 2.5, map_ref(xa, [](double x) { return x - 2.5; }), tol);
  WICK_EXPECT_CLOSE(a * 2.5, map_ref(xa, [](double x) { return x * 2.5; }), tol);
  WICK_EXPECT_CLOSE(a / 2.5, map_ref(xa, [](double x) { return x / 2.5; }), tol);
  WICK_EXPECT_CLOSE(-a, map_ref(xa, [](double x) { return -x; }), Tol{0, 0});
}

TEST_P(Binary, NaNAndInfinity) {
  const Device dev = device();
  const double inf = std::numeric_limits<double>::infinity();
  // Every pairing of NaN, infinities, zeros and ordinary values, both ways round.
  const std::vector<double> vals = {NAN, inf, -inf, 0.0, -0.0, 1.5, -2.0};
  Ref ra{{static_cast<int64_t>(vals.size()), static_cast<int64_t>(vals.size())}, {}}, rb = ra;
  for (double x : vals)
    for (double y : vals) {
      ra.v.push_back(x);
      rb.v.push_back(y);
    }
  for (const BinaryCase& c : binary_cases())
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(c.name + " " + dtype_name(dt));
      EXPECT_TRUE(check_binary(c, make_tensor(ra, dt, dev), make_tensor(rb, dt, dev), ra, rb, dt));
    }
  const Tensor nan = Tensor::full(NAN, {1}, DType::F32, dev),
               one = Tensor::ones({1}, DType::F32, dev);
  EXPECT_TRUE(std::isnan(nan.maximum(one).to_scalar<float>()));
  EXPECT_TRUE(std::isnan(one.maximum(nan).to_scalar<float>()));
  EXPECT_TRUE(std::isnan(nan.minimum(one).to_scalar<float>()));
  EXPECT_TRUE(std::isnan(one.minimum(nan).to_scalar<float>()));
}

TEST_P(Binary, IntegerDivision) {
  const Device dev = device();
  const int64_t min = std::numeric_limits<int64_t>::min();
  const Tensor a = Tensor::from_vec(std::vector<int64_t>{-7, 7, -7, min, 9}, {5}, dev);
  const Tensor b = Tensor::from_vec(std::vector<int64_t>{2, -2, -2, -1, 10}, {5}, dev);
  // Truncation toward zero; i64 min / -1 wraps instead of trapping.
  EXPECT_EQ(a.div(b).to_vec<int64_t>(), (std::vector<int64_t>{-3, -3, 3, min, 0}));
  for (DType dt : kIntDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    // One zero divisor among many, in the threaded path too: an error, never SIGFPE.
    for (int64_t n : {int64_t{5}, kLargeRows * kLargeCols}) {
      Tensor num = Tensor::full(7, {n}, dt, dev), den = Tensor::full(3, {n}, dt, dev);
      den.narrow(0, n - 2, 1).const_set(0);
      expect_error([&] { num.div(den); }, ErrorKind::OutOfRange, {"div", "zero", dtype_name(dt)});
    }
    expect_error([&] { Tensor::ones({3}, dt, dev).div(0); }, ErrorKind::OutOfRange,
                 {"div", "zero"});
    expect_error(
        [&] {
          Tensor::ones({3, 2}, dt, dev).div(Tensor::zeros({2}, dt, dev));
        },
        ErrorKind::OutOfRange, {"div", "zero", "[3, 2]"});
  }
}

TEST_P(Binary, Errors) {
  const Device dev = device();
  const Tensor f32 = Tensor::ones({2, 3}, DType::F32, dev),
               f16 = Tensor::ones({2, 3}, DType::F16, dev);
  for (const BinaryCase& c : binary_cases()) {
    expect_error([&] { c.run(f32, f16); }, ErrorKind::DType, {c.name, "f32", "f16", "[2, 3]"});
    expect_error(
        [&] {
          c.run(f32, Tensor::ones({4, 3}, DType::F32, dev));
        },
        ErrorKind::Shape, {c.name, "[2, 3]", "[4, 3]"});
    if (c.float_only)
      for (DType dt : kIntDTypes) {
        expect_error([&] { c.run(Tensor::ones({2}, dt, dev), Tensor::ones({2}, dt, dev)); },
                     ErrorKind::DType, {c.name, dtype_name(dt)});
        expect_error([&] { c.run_scalar(Tensor::ones({2}, dt, dev), 2.0); }, ErrorKind::DType,
                     {c.name, dtype_name(dt)});
      }
  }
  // Scalars of other dtypes convert to the tensor's (Api.ScalarsOfOtherDTypesConvertToTheTensors).
}

WICK_INSTANTIATE_DEVICES(Binary);

class Compare : public DeviceTest {};

TEST_P(Compare, EveryOpDTypeLayoutAndBroadcast) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const std::vector<std::pair<Shape, Shape>> broadcasts = {
      {{5, 7}, {7}}, {{5, 1}, {1, 4}}, {{3, 4}, {}}};
  for (const CmpCase& c : cmp_cases())
    for (DType dt : compute_dtypes(dev)) {
      // Few distinct values, so that ties are common.
      const int64_t lo = is_float(dt) || dt == DType::I64 || dt == DType::I32 ? -3 : 0;
      auto check = [&](const Tensor& a, const Tensor& b, const Ref& xa, const Ref& xb) {
        const Tensor got = c.run(a, b);
        EXPECT_EQ(got.dtype(), DType::U8);
        const Ref want =
            zip_ref(xa, xb, [&](double x, double y) { return c.ref(x, y) ? 1.0 : 0.0; });
        EXPECT_TRUE(close(got, want, Tol{0, 0}));
      };
      for (size_t i = 0; i < std::size(kAllVariants); i++) {
        const Variant va = kAllVariants[i], vb = kAllVariants[(i + 1) % std::size(kAllVariants)];
        SCOPED_TRACE(c.name + " " + dtype_name(dt) + " " + variant_name(va) + " / " +
                     variant_name(vb));
        const Shape shape = random_shape(rng, 1, 4, 6);
        const Ref ra = random_int_ref(rng, shape, lo, 3), rb = random_int_ref(rng, shape, lo, 3);
        check(make_tensor(ra, dt, dev, va), make_tensor(rb, dt, dev, vb), ra, rb);
      }
      for (const auto& [sa, sb] : broadcasts) {
        SCOPED_TRACE(c.name + " " + dtype_name(dt) + " " + sa.str() + " with " + sb.str());
        const Ref ra = random_int_ref(rng, sa, lo, 3), rb = random_int_ref(rng, sb, lo, 3);
        check(make_tensor(ra, dt, dev), make_tensor(rb, dt, dev), ra, rb);
      }
      const Ref ra = random_int_ref(rng, {4, 3}, lo, 3);
      const Tensor got = c.run_scalar(make_tensor(ra, dt, dev, Variant::Transposed), 1);
      EXPECT_TRUE(
          close(got, map_ref(ra, [&](double x) { return c.ref(x, 1) ? 1.0 : 0.0; }), Tol{0, 0}));
    }
}

TEST_P(Compare, NaNLargeAndEmpty) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const Ref ra{{4}, {NAN, NAN, 1.0, INFINITY}}, rb{{4}, {NAN, 1.0, NAN, INFINITY}};
  const Ref big_a = random_ref(rng, {kLargeRows, kLargeCols}),
            big_b = random_ref(rng, {kLargeCols});
  for (DType dt : kFloatDTypes) {
    for (const CmpCase& c : cmp_cases()) {
      SCOPED_TRACE(c.name + " " + dtype_name(dt));
      auto want = [&](const Ref& x, const Ref& y) {
        return zip_ref(x, y, [&](double p, double q) { return c.ref(p, q) ? 1.0 : 0.0; });
      };
      EXPECT_TRUE(close(c.run(make_tensor(ra, dt, dev), make_tensor(rb, dt, dev)), want(ra, rb),
                        Tol{0, 0}));
      if (c.name == "lt" &&
          (dt == DType::F32 || dt == DType::F16)) {  // the threaded split, once per row kind
        EXPECT_TRUE(close(
            c.run(make_tensor(big_a, dt, dev, Variant::Permuted), make_tensor(big_b, dt, dev)),
            want(round_ref(big_a, dt), round_ref(big_b, dt)), Tol{0, 0}));
      }
      const Tensor empty = c.run(Tensor::ones({0, 2}, dt, dev), Tensor::ones({2}, dt, dev));
      EXPECT_EQ(empty.shape(), (Shape{0, 2}));
      EXPECT_EQ(empty.dtype(), DType::U8);
    }
  }
}

TEST_P(Compare, Errors) {
  const Device dev = device();
  for (const CmpCase& c : cmp_cases()) {
    expect_error(
        [&] { c.run(Tensor::ones({2}, DType::F32, dev), Tensor::ones({2}, DType::I64, dev)); },
        ErrorKind::DType, {c.name, "f32", "i64"});
    expect_error(
        [&] {
          c.run(Tensor::ones({2, 3}, DType::F32, dev), Tensor::ones({2}, DType::F32, dev));
        },
        ErrorKind::Shape, {c.name, "[2, 3]", "[2]"});
  }
}

WICK_INSTANTIATE_DEVICES(Compare);

class WhereCond : public DeviceTest {};

TEST_P(WhereCond, EveryDTypeLayoutAndBroadcast) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  // Shapes of (cond, on_true, on_false): equal, and broadcast in every operand.
  const std::vector<std::array<Shape, 3>> shapes = {
      {Shape{4, 6}, Shape{4, 6}, Shape{4, 6}}, {Shape{4, 1}, Shape{6}, Shape{4, 6}},
      {Shape{4, 6}, Shape{}, Shape{}},         {Shape{4, 6}, Shape{4, 6}, Shape{}},
      {Shape{4, 6}, Shape{1}, Shape{4, 6}},    {Shape{1, 6}, Shape{4, 1}, Shape{1}}};
  for (DType ct : kIntDTypes)
    for (DType vt : compute_dtypes(dev)) {
      auto random_cond = [&](const Shape& s) {
        Ref r = random_int_ref(rng, s, 0, 3);
        for (double& v : r.v) v = v == 3 ? 255 : v;  // nonzero values other than 1 are true too
        return r;
      };
      auto check = [&](const Ref& rc, const Ref& rt, const Ref& rf, Variant v) {
        SCOPED_TRACE(std::string(dtype_name(ct)) + " ? " + dtype_name(vt) + " " + rc.shape.str() +
                     " " + rt.shape.str() + " " + rf.shape.str() + " " + variant_name(v));
        const Tensor got = make_tensor(rc, ct, dev, v)
                               .where_cond(make_tensor(rt, vt, dev, v), make_tensor(rf, vt, dev));
        EXPECT_EQ(got.dtype(), vt);
        const Shape out =
            broadcast_shapes(broadcast_shapes(rc.shape, rt.shape, "test"), rf.shape, "test");
        const Ref bc = broadcast_ref(rc, out), bt = broadcast_ref(round_ref(rt, vt), out),
                  bf = broadcast_ref(round_ref(rf, vt), out);
        Ref want{out, {}};
        for (size_t i = 0; i < bc.v.size(); i++) want.v.push_back(bc.v[i] != 0 ? bt.v[i] : bf.v[i]);
        EXPECT_TRUE(close(got, want, Tol{0, 0}));
      };
      for (Variant v : kAllVariants) {
        const Shape s = random_shape(rng, 1, 4, 6);
        check(random_cond(s), random_ref(rng, s, -100, 100), random_ref(rng, s, -100, 100), v);
      }
      for (const auto& [sc, st, sf] : shapes)
        check(random_cond(sc), random_ref(rng, st, -100, 100), random_ref(rng, sf, -100, 100),
              Variant::Contiguous);
    }
}

TEST_P(WhereCond, LargeAndEmpty) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const Ref rc = random_int_ref(rng, {kLargeRows, kLargeCols}, 0, 1);
  const Ref rt = random_ref(rng, {kLargeRows, kLargeCols}), rf = random_ref(rng, {kLargeCols});
  Ref want = rt;
  for (size_t i = 0; i < want.v.size(); i++)
    if (rc.v[i] == 0) want.v[i] = rf.v[i % static_cast<size_t>(kLargeCols)];
  for (Variant v : {Variant::Contiguous, Variant::Transposed}) {
    const Tensor got =
        make_tensor(rc, DType::U8, dev, v)
            .where_cond(make_tensor(rt, DType::F64, dev, v), make_tensor(rf, DType::F64, dev));
    EXPECT_TRUE(close(got, want, Tol{0, 0})) << variant_name(v);
  }
  const Tensor empty =
      Tensor::ones({0, 3}, DType::U8, dev)
          .where_cond(Tensor::ones({3}, DType::F32, dev), Tensor::ones({1}, DType::F32, dev));
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
}

TEST_P(WhereCond, Errors) {
  const Device dev = device();
  const Tensor t = Tensor::ones({2, 3}, DType::F32, dev);
  for (DType ft : kFloatDTypes)
    expect_error(
        [&] {
          Tensor::ones({2, 3}, ft, dev).where_cond(t, t);
        },
        ErrorKind::DType, {"where_cond", dtype_name(ft), "[2, 3]"});
  const Tensor c = Tensor::ones({2, 3}, DType::U8, dev);
  expect_error(
      [&] {
        c.where_cond(t, Tensor::ones({2, 3}, DType::F16, dev));
      },
      ErrorKind::DType, {"where_cond", "f32", "f16"});
  expect_error(
      [&] {
        c.where_cond(t, Tensor::ones({4, 3}, DType::F32, dev));
      },
      ErrorKind::Shape, {"where_cond", "[2, 3]", "[4, 3]"});
  expect_error([&] { Tensor::ones({5}, DType::U8, dev).where_cond(t, t); }, ErrorKind::Shape,
               {"where_cond", "[5]", "[2, 3]"});
}

WICK_INSTANTIATE_DEVICES(WhereCond);

}  // namespace
}  // namespace wick::testing
