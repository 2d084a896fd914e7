// The GPU runtime's memory, element-wise and random ops against a float64 reference, on every
// dtype they take and through every input layout, on each GPU device under test (its shared
// device, or a private one where the test needs its own seed or error state).
#include <cmath>
#include <cstdint>
#include <functional>

#include "gpu_test_util.h"

namespace wick::testing {
namespace {

using backend::BinaryOp;
using backend::CmpOp;
using backend::UnaryOp;

// ---- references ---------------------------------------------------------------------------------

double ref_unary(UnaryOp op, double x, double p0, double p1) {
  switch (op) {
    case UnaryOp::Neg:
      return -x;
    case UnaryOp::Abs:
      return std::abs(x);
    case UnaryOp::Exp:
      return std::exp(x);
    case UnaryOp::Log:
      return std::log(x);
    case UnaryOp::Sin:
      return std::sin(x);
    case UnaryOp::Cos:
      return std::cos(x);
    case UnaryOp::Tanh:
      return std::tanh(x);
    case UnaryOp::Sqrt:
      return std::sqrt(x);
    case UnaryOp::Sqr:
      return x * x;
    case UnaryOp::Recip:
      return 1 / x;
    case UnaryOp::Relu:
      return x > 0 ? x : 0;
    case UnaryOp::Gelu:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnaryOp::GeluErf:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::Erf:
      return std::erf(x);
    case UnaryOp::Silu:
      return x / (1 + std::exp(-x));
    case UnaryOp::Sigmoid:
      return 1 / (1 + std::exp(-x));
    case UnaryOp::Floor:
      return std::floor(x);
    case UnaryOp::Ceil:
      return std::ceil(x);
    case UnaryOp::Round:
      return std::round(x);
    case UnaryOp::Sign:
      return x > 0 ? 1 : x < 0 ? -1 : 0;
    case UnaryOp::Affine:
      return x * p0 + p1;
    case UnaryOp::Powf:
      return std::pow(x, p0);
    case UnaryOp::Elu:
      return x > 0 ? x : p0 * (std::exp(x) - 1);
    case UnaryOp::Clamp:
      return std::min(std::max(x, p0), p1);
  }
  return 0;
}

Tensor apply_unary(const Tensor& t, UnaryOp op, double p0, double p1) {
  switch (op) {
    case UnaryOp::Neg:
      return t.neg();
    case UnaryOp::Abs:
      return t.abs();
    case UnaryOp::Exp:
      return t.exp();
    case UnaryOp::Log:
      return t.log();
    case UnaryOp::Sin:
      return t.sin();
    case UnaryOp::Cos:
      return t.cos();
    case UnaryOp::Tanh:
      return t.tanh();
    case UnaryOp::Sqrt:
      return t.sqrt();
    case UnaryOp::Sqr:
      return t.sqr();
    case UnaryOp::Recip:
      return t.recip();
    case UnaryOp::Relu:
      return t.relu();
    case UnaryOp::Gelu:
      return t.gelu();
    case UnaryOp::GeluErf:
      return t.gelu_erf();
    case UnaryOp::Erf:
      return t.erf();
    case UnaryOp::Silu:
      return t.silu();
    case UnaryOp::Sigmoid:
      return t.sigmoid();
    case UnaryOp::Floor:
      return t.floor();
    case UnaryOp::Ceil:
      return t.ceil();
    case UnaryOp::Round:
      return t.round();
    case UnaryOp::Sign:
      return t.sign();
    case UnaryOp::Affine:
      return t.affine(p0, p1);
    case UnaryOp::Powf:
      return t.powf(p0);
    case UnaryOp::Elu:
      return t.elu(p0);
    case UnaryOp::Clamp:
      return t.clamp(p0, p1);
  }
  return t;
}

constexpr UnaryOp kUnaryOps[] = {UnaryOp::Neg,     UnaryOp::Abs,   UnaryOp::Exp,   UnaryOp::Log,
                                 UnaryOp::Sin,     UnaryOp::Cos,   UnaryOp::Tanh,  UnaryOp::Sqrt,
                                 UnaryOp::Sqr,     UnaryOp::Recip, UnaryOp::Relu,  UnaryOp::Gelu,
                                 UnaryOp::GeluErf, UnaryOp::Erf,   UnaryOp::Silu,  UnaryOp::Sigmoid,
                                 UnaryOp::Floor,   UnaryOp::Ceil,  UnaryOp::Round, UnaryOp::Sign,
                                 UnaryOp::Affine,  UnaryOp::Powf,  UnaryOp::Elu,   UnaryOp::Clamp};

// Ops that go through exp/log/sin/erf/pow approximations (not exact to the last bit).
bool is_transcendental(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Log:
    case UnaryOp::Sin:
    case UnaryOp::Cos:
    case UnaryOp::Tanh:
    case UnaryOp::Gelu:
    case UnaryOp::GeluErf:
    case UnaryOp::Erf:
    case UnaryOp::Silu:
    case UnaryOp::Sigmoid:
    case UnaryOp::Powf:
    case UnaryOp::Elu:
      return true;
    default:
      return false;
  }
}

// Inputs inside each op's domain, away from points where rounding flips a discontinuous result.
Ref unary_input(Rng& rng, UnaryOp op, const Shape& shape) {
  Ref r = random_ref(rng, shape, -3, 3);
  for (double& x : r.v) {
    if (op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Powf) x = std::abs(x) + 0.1;
    if (op == UnaryOp::Recip) x = (x < 0 ? -1 : 1) * (std::abs(x) + 0.25);
  }
  return r;
}

// Integer semantics: exact ops wrap like C++ unsigned arithmetic; affine/clamp go through double
// and convert back with wick's saturating conversion.
double ref_int_unary(UnaryOp op, DType dt, double x, double p0, double p1) {
  const double mod = dt == DType::U8 ? 256.0 : 4294967296.0;
  auto wrap = [&](double v) {
    return dt == DType::I64 ? v : std::fmod(std::fmod(v, mod) + mod, mod);
  };
  double r = 0;
  dispatch_dtype(dt, [&](auto z) {
    using T = decltype(z);
    switch (op) {
      case UnaryOp::Neg:
        r = wrap(-x);
        break;
      case UnaryOp::Abs:
        r = std::abs(x);
        break;
      case UnaryOp::Sqr:
        r = wrap(x * x);
        break;
      case UnaryOp::Relu:
        r = std::max(x, 0.0);
        break;
      case UnaryOp::Sign:
        r = x > 0 ? 1 : x < 0 ? -1 : 0;
        break;
      case UnaryOp::Affine:
        r = to_f64(from_f64<T>(x * p0 + p1));
        break;
      case UnaryOp::Clamp:
        r = to_f64(from_f64<T>(std::min(std::max(x, p0), p1)));
        break;
      default:
        break;
    }
  });
  return r;
}

Tol unary_tol(UnaryOp op, DType dt) {
  Tol t = tol_for(dt);
  // f32 transcendentals: the driver's exp/log/sin and the erf polynomial are a few ulp off.
  if (dt == DType::F32 && is_transcendental(op)) t = {2e-5, 2e-5};
  return t;
}

void check_unary_float(const Device& d, DType dt) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (UnaryOp op : kUnaryOps) {
    SCOPED_TRACE(backend::unary_op_name(op));
    const double p0 = op == UnaryOp::Clamp ? -0.7 : op == UnaryOp::Powf ? 1.7 : 1.3;
    const double p1 = op == UnaryOp::Clamp ? 0.9 : -0.4;
    for (Variant v : kAllVariants) {
      SCOPED_TRACE(variant_name(v));
      const Ref in = round_ref(unary_input(rng, op, random_shape(rng, 1, 3, 6)), dt);
      Ref want = in;
      for (double& x : want.v) x = ref_unary(op, x, p0, p1);
      WICK_EXPECT_CLOSE(apply_unary(make_tensor(in, dt, d, v), op, p0, p1), round_ref(want, dt),
                        unary_tol(op, dt));
    }
  }
}

class GpuUnary : public GpuDeviceTest {};

TEST_P(GpuUnary, F32) {
  check_unary_float(device(), DType::F32);
}
TEST_P(GpuUnary, F16) {
  check_unary_float(device(), DType::F16);
}
TEST_P(GpuUnary, BF16) {
  check_unary_float(device(), DType::BF16);
}
TEST_P(GpuUnary, F64) {
  check_unary_float(device(), DType::F64);
}

TEST_P(GpuUnary, Integers) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : kIntDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sqr, UnaryOp::Relu, UnaryOp::Sign,
                       UnaryOp::Affine, UnaryOp::Clamp}) {
      if (op == UnaryOp::Neg && dt != DType::I64) continue;  // the front end refuses it
      SCOPED_TRACE(backend::unary_op_name(op));
      const double p0 = op == UnaryOp::Clamp ? 3.5 : 2.5, p1 = op == UnaryOp::Clamp ? 200 : -7.25;
      const int64_t lo = dt == DType::I64 ? -300 : 0;
      const Ref in = random_int_ref(rng, random_shape(rng, 1, 3, 6), lo, 250);
      Ref want = in;
      for (double& x : want.v) x = ref_int_unary(op, dt, x, p0, p1);
      const Variant v = kAllVariants[rng.integer(0, 4)];
      WICK_EXPECT_CLOSE(apply_unary(make_tensor(in, dt, d, v), op, p0, p1), want, Tol{0, 0});
    }
  }
}

TEST_P(GpuUnary, TanhAndGeluStayFiniteForLargeInputs) {
  const Device d = device();
  const Tensor x = Tensor::from_vec(std::vector<float>{-200, -60, 60, 200}, Shape{4}, d);
  WICK_EXPECT_CLOSE(x.tanh(), (Ref{{4}, {-1, -1, 1, 1}}), Tol{0, 0});
  WICK_EXPECT_CLOSE(x.gelu(), (Ref{{4}, {0, 0, 60, 200}}), Tol{1e-6, 1e-6});
}

// GLSL has no double exp/log/sin/erf/pow (kernels/glsl/include/math64.glsl implements them), and
// every backend must match libm on them: wide ranges, at f64 tolerance.
TEST_P(GpuUnary, F64TranscendentalsOverWideRanges) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  const Tol tol{1e-13, 1e-13};
  auto check = [&](const char* name, double lo, double hi,
                   const std::function<Tensor(const Tensor&)>& op, double (*ref)(double)) {
    SCOPED_TRACE(name);
    Ref r = random_ref(rng, {257}, lo, hi);
    Ref want = r;
    for (double& x : want.v) x = ref(x);
    WICK_EXPECT_CLOSE(op(make_tensor(r, DType::F64, d)), want, tol);
  };
  check(
      "exp", -700, 700, [](const Tensor& t) { return t.exp(); },
      [](double x) { return std::exp(x); });
  check(
      "log", 1e-300, 1e300, [](const Tensor& t) { return t.log(); },
      [](double x) { return std::log(x); });
  check(
      "log near 1", 0.5, 2, [](const Tensor& t) { return t.log(); },
      [](double x) { return std::log(x); });
  check(
      "sin", -1000, 1000, [](const Tensor& t) { return t.sin(); },
      [](double x) { return std::sin(x); });
  check(
      "cos", -1000, 1000, [](const Tensor& t) { return t.cos(); },
      [](double x) { return std::cos(x); });
  check(
      "tanh", -30, 30, [](const Tensor& t) { return t.tanh(); },
      [](double x) { return std::tanh(x); });
  check(
      "tanh small", -1e-3, 1e-3, [](const Tensor& t) { return t.tanh(); },
      [](double x) { return std::tanh(x); });
  check(
      "erf", -7, 7, [](const Tensor& t) { return t.erf(); }, [](double x) { return std::erf(x); });
  check(
      "sigmoid", -40, 40, [](const Tensor& t) { return t.sigmoid(); },
      [](double x) { return 1 / (1 + std::exp(-x)); });
  const Ref a = random_ref(rng, {64}, 0.01, 50), b = random_ref(rng, {64}, -8, 8);
  Ref want = a;
  for (size_t i = 0; i < want.v.size(); i++) want.v[i] = std::pow(a.v[i], b.v[i]);
  WICK_EXPECT_CLOSE(make_tensor(a, DType::F64, d).pow(make_tensor(b, DType::F64, d)), want, tol);
  const Tensor special =
      Tensor::from_vec(std::vector<double>{0.0, -0.0, INFINITY, -INFINITY, NAN}, Shape{5}, d);
  WICK_EXPECT_CLOSE(special.exp(), (Ref{{5}, {1, 1, INFINITY, 0, NAN}}), Tol{0, 0});
  WICK_EXPECT_CLOSE(special.tanh(), (Ref{{5}, {0, 0, 1, -1, NAN}}), Tol{0, 0});
  WICK_EXPECT_CLOSE(special.erf(), (Ref{{5}, {0, 0, 1, -1, NAN}}), Tol{0, 0});
}

WICK_INSTANTIATE_GPU_DEVICES(GpuUnary);

// ---- binary, compare, where ---------------------------------------------------------------------

double ref_binary(BinaryOp op, DType dt, double a, double b) {
  const bool integer = !is_float(dt);
  const double mod = dt == DType::U8 ? 256.0 : 4294967296.0;
  auto wrap = [&](double v) {
    return !integer || dt == DType::I64 ? v : std::fmod(std::fmod(v, mod) + mod, mod);
  };
  switch (op) {
    case BinaryOp::Add:
      return wrap(a + b);
    case BinaryOp::Sub:
      return wrap(a - b);
    case BinaryOp::Mul:
      return wrap(a * b);
    case BinaryOp::Div:
      return integer ? std::trunc(a / b) : a / b;
    case BinaryOp::Maximum:
      return std::max(a, b);
    case BinaryOp::Minimum:
      return std::min(a, b);
    case BinaryOp::Pow:
      return std::pow(a, b);
  }
  return 0;
}

Tensor apply_binary(const Tensor& a, const Tensor& b, BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return a + b;
    case BinaryOp::Sub:
      return a - b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Div:
      return a / b;
    case BinaryOp::Maximum:
      return a.maximum(b);
    case BinaryOp::Minimum:
      return a.minimum(b);
    case BinaryOp::Pow:
      return a.pow(b);
  }
  return a;
}

// Two inputs of broadcast-compatible random shapes, and the reference of f on them.
struct Pair {
  Ref a, b;
  Shape out;
};
Pair broadcast_pair(Rng& rng, bool integers, DType dt) {
  const Shape full = random_shape(rng, 1, 4, 5);
  std::vector<int64_t> da = full.dims(), db = full.dims();
  for (size_t i = 0; i < full.rank(); i++) {
    if (rng.integer(0, 3) == 0)
      da[i] = 1;
    else if (rng.integer(0, 3) == 0)
      db[i] = 1;
  }
  if (rng.integer(0, 1) && db.size() > 1) db.erase(db.begin());  // fewer dims: broadcast left
  auto make = [&](const std::vector<int64_t>& dims) {
    const Shape s(dims);
    return integers ? random_int_ref(rng, s, dt == DType::I64 ? -50 : 0, 60)
                    : round_ref(random_ref(rng, s), dt);
  };
  Pair p{make(da), make(db), broadcast_shapes(Shape(da), Shape(db), "test")};
  return p;
}

// want[i] = f(a[broadcast i], b[broadcast i]).
template <typename F>
Ref broadcast_ref(const Pair& p, F f) {
  Ref out{p.out, {}};
  const size_t r = p.out.rank();
  for_each_index(p.out, [&](const std::vector<int64_t>& i) {
    auto pick = [&](const Ref& x) {
      std::vector<int64_t> j(x.shape.rank());
      for (size_t k = 0; k < j.size(); k++) {
        const int64_t v = i[r - j.size() + k];
        j[k] = x.shape[k] == 1 ? 0 : v;
      }
      return x.at(j);
    };
    out.v.push_back(f(pick(p.a), pick(p.b)));
  });
  return out;
}

class GpuBinary : public GpuDeviceTest {};

TEST_P(GpuBinary, AllOpsAllDTypesWithBroadcasting) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : compute_dtypes(d)) {
    SCOPED_TRACE(dtype_name(dt));
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
                        BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Pow}) {
      if (op == BinaryOp::Pow && (!is_float(dt) || dt == DType::F64)) continue;
      SCOPED_TRACE(backend::binary_op_name(op));
      Pair p = broadcast_pair(rng, !is_float(dt), dt);
      if (op == BinaryOp::Div && !is_float(dt))
        for (double& x : p.b.v) x = x == 0 ? 7 : x;  // x / 0 is an error (tested below)
      if (op == BinaryOp::Pow) {
        for (double& x : p.a.v) x = std::abs(x) + 0.25;
        p.a = round_ref(p.a, dt);
      }
      const Variant va = kAllVariants[rng.integer(0, 4)], vb = kAllVariants[rng.integer(0, 4)];
      const Ref want =
          broadcast_ref(p, [&](double a, double b) { return ref_binary(op, dt, a, b); });
      const Tensor got = apply_binary(make_tensor(p.a, dt, d, va), make_tensor(p.b, dt, d, vb), op);
      WICK_EXPECT_CLOSE(got, round_ref(want, dt), is_float(dt) ? tol_for(dt) : Tol{0, 0});
    }
  }
}

TEST_P(GpuBinary, IntegerDivisionByZeroIsRefusedByTheOp) {
  const Device d = private_device();
  for (DType dt : kIntDTypes) {
    const Tensor num = Tensor::full(6, {4}, dt, d);
    const Tensor den = Tensor::from_vec(std::vector<double>{1, 2, 0, 3}, Shape{4}, d).to_dtype(dt);
    // The device finds the zero; the op waits for itself and refuses, as the CPU does.
    expect_error([&] { num.div(den); }, ErrorKind::OutOfRange, {"div", "zero", dtype_name(dt)});
    EXPECT_EQ((num / num).to_vec<double>(), std::vector<double>(4, 1.0)) << "reported once";
  }
  // NaN propagates through maximum / minimum, as on the CPU.
  const Tensor a = Tensor::from_vec(std::vector<float>{NAN, 1, 2}, Shape{3}, d);
  const Tensor b = Tensor::from_vec(std::vector<float>{0, NAN, 1}, Shape{3}, d);
  WICK_EXPECT_CLOSE(a.maximum(b), (Ref{{3}, {NAN, NAN, 2}}), Tol{0, 0});
  WICK_EXPECT_CLOSE(a.minimum(b), (Ref{{3}, {NAN, NAN, 1}}), Tol{0, 0});
}

WICK_INSTANTIATE_GPU_DEVICES(GpuBinary);

class GpuCompare : public GpuDeviceTest {};

TEST_P(GpuCompare, AllOpsAllDTypes) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : compute_dtypes(d)) {
    SCOPED_TRACE(dtype_name(dt));
    for (CmpOp op : {CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge}) {
      SCOPED_TRACE(backend::cmp_op_name(op));
      Pair p = broadcast_pair(rng, true, dt);  // small integers: equal values are common
      const Ref want = broadcast_ref(p, [&](double a, double b) {
        switch (op) {
          case CmpOp::Eq:
            return a == b ? 1.0 : 0.0;
          case CmpOp::Ne:
            return a != b ? 1.0 : 0.0;
          case CmpOp::Lt:
            return a < b ? 1.0 : 0.0;
          case CmpOp::Le:
            return a <= b ? 1.0 : 0.0;
          case CmpOp::Gt:
            return a > b ? 1.0 : 0.0;
          case CmpOp::Ge:
            return a >= b ? 1.0 : 0.0;
        }
        return 0.0;
      });
      const Tensor a = make_tensor(p.a, dt, d, kAllVariants[rng.integer(0, 4)]);
      const Tensor b = make_tensor(p.b, dt, d, kAllVariants[rng.integer(0, 4)]);
      Tensor got;
      switch (op) {
        case CmpOp::Eq:
          got = a.eq(b);
          break;
        case CmpOp::Ne:
          got = a.ne(b);
          break;
        case CmpOp::Lt:
          got = a.lt(b);
          break;
        case CmpOp::Le:
          got = a.le(b);
          break;
        case CmpOp::Gt:
          got = a.gt(b);
          break;
        case CmpOp::Ge:
          got = a.ge(b);
          break;
      }
      EXPECT_EQ(got.dtype(), DType::U8);
      WICK_EXPECT_CLOSE(got, want, Tol{0, 0});
    }
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuCompare);

class GpuWhere : public GpuDeviceTest {};

TEST_P(GpuWhere, EveryConditionDTypeBroadcast) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType cond_dt : kIntDTypes) {
    for (DType dt : compute_dtypes(d)) {
      SCOPED_TRACE(std::string(dtype_name(cond_dt)) + " ? " + dtype_name(dt));
      const Shape s = random_shape(rng, 2, 3, 5);
      Ref cond = random_int_ref(rng, s, 0, 2);
      std::vector<int64_t> row(s.rank(), 1);
      row.back() = s[s.rank() - 1];
      const Ref t =
          is_float(dt) ? round_ref(random_ref(rng, s), dt) : random_int_ref(rng, s, 0, 90);
      const Ref f = is_float(dt) ? round_ref(random_ref(rng, Shape(row)), dt)
                                 : random_int_ref(rng, Shape(row), 0, 90);
      Ref want{s, {}};
      for_each_index(s, [&](const std::vector<int64_t>& i) {
        want.v.push_back(cond.at(i) != 0 ? t.at(i) : f.at({0, i.back()}));
      });
      const Tensor ct = make_tensor(cond, cond_dt, d, Variant::Transposed);
      const Tensor got =
          ct.where_cond(make_tensor(t, dt, d, Variant::Narrowed), make_broadcast(f, s, dt, d));
      WICK_EXPECT_CLOSE(got, want, Tol{0, 0});
    }
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuWhere);

// ---- casts, copies, fill ------------------------------------------------------------------------

class GpuCast : public GpuDeviceTest {};

TEST_P(GpuCast, AllPairsMatchTheCpuConversions) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType from : kAllDTypes) {
    // Values that exercise rounding, truncation toward zero, saturation and ties.
    Ref in = random_ref(rng, {4, 9}, -400, 70000);
    in.v[0] = 0.5;
    in.v[1] = -2.5;
    in.v[2] = 65519.0;
    in.v[3] = 1.0 + std::ldexp(1.0, -11);
    in = round_ref(in, from);
    for (DType to : kAllDTypes) {
      if (to == from) continue;
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      const Ref want = round_ref(in, to);
      for (Variant v : {Variant::Contiguous, Variant::Transposed}) {
        WICK_EXPECT_CLOSE(make_tensor(in, from, d, v).to_dtype(to), want, Tol{0, 0});
      }
    }
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuCast);

class GpuCopy : public GpuDeviceTest {};

TEST_P(GpuCopy, StridedCopiesAndSliceSet) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Ref r = is_float(dt) ? round_ref(random_ref(rng, {3, 4, 5}), dt)
                               : random_int_ref(rng, {3, 4, 5}, 0, 200);
    for (Variant v : kAllVariants) {
      const Tensor t = make_tensor(r, dt, d, v);
      const Tensor c = t.contiguous();
      EXPECT_TRUE(c.is_contiguous());
      WICK_EXPECT_CLOSE(c, r, Tol{0, 0});
      WICK_EXPECT_CLOSE(t.copy(), r, Tol{0, 0});
    }
    // slice_set into a transposed destination view.
    Tensor dst = Tensor::zeros({5, 4, 3}, dt, d);
    const Tensor src = make_tensor(r, dt, d, Variant::Permuted);  // shape [3,4,5]
    dst.permute({2, 1, 0}).slice_set(src.narrow(2, 1, 3), 2, 2);
    // dst[k][j][i] = r[i][j][k] for k in [2, 5): the slice [1, 4) of r's last dim lands at 2..4.
    Ref want2{{5, 4, 3}, std::vector<double>(60, 0.0)};
    for_each_index({3, 4, 3}, [&](const std::vector<int64_t>& i) {
      want2.v[static_cast<size_t>(want2.index({i[2] + 2, i[1], i[0]}))] =
          r.at({i[0], i[1], i[2] + 1});
    });
    WICK_EXPECT_CLOSE(dst, want2, Tol{0, 0});
  }
}

TEST_P(GpuCopy, RanksBeyondTheKernelLimitAreWalkedOnTheHost) {
  // Eight dims of 2 reversed: nothing collapses, so the launch peels the outer dims.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  const Ref r = round_ref(random_ref(rng, {2, 2, 2, 2, 2, 2, 2, 3}), DType::F32);
  const Tensor t = make_tensor(r, DType::F32, d, Variant::Permuted);
  WICK_EXPECT_CLOSE(t.contiguous(), r, Tol{0, 0});
  Ref twice = r;
  for (double& x : twice.v) x *= 2;
  WICK_EXPECT_CLOSE(t + t, twice, Tol{0, 0});
}

// The seed's copy defect.
TEST_P(GpuCopy, CopyNeverSharesMemory) {
  const Device d = device();
  Tensor orig = Tensor::zeros(Shape{4}, DType::F32, d);
  Tensor copied = orig.copy();
  EXPECT_FALSE(copied.shares_storage_with(orig));
  orig.slice_set(Tensor::ones(Shape{2}, DType::F32, d), 0, 0);
  EXPECT_EQ(copied.to_vec<float>(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(orig.to_vec<float>(), (std::vector<float>{1, 1, 0, 0}));
}

WICK_INSTANTIATE_GPU_DEVICES(GpuCopy);

class GpuFill : public GpuDeviceTest {};

TEST_P(GpuFill, FullEyeAndConstSetOnViews) {
  const Device d = device();
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (double value : {0.0, 1.0, -3.75, 300.5, 70000.0}) {
      const Tensor t = Tensor::full(value, {3, 5}, dt, d);
      Ref want{{3, 5}, std::vector<double>(15, value)};
      WICK_EXPECT_CLOSE(t, round_ref(want, dt), Tol{0, 0});
    }
    Ref eye{{4, 4}, std::vector<double>(16, 0.0)};
    for (int i = 0; i < 4; i++) eye.v[static_cast<size_t>(i * 5)] = 1;
    WICK_EXPECT_CLOSE(Tensor::eye(4, dt, d), eye, Tol{0, 0});
    const Tensor z = Tensor::zeros({4, 6}, dt, d);
    z.narrow(1, 1, 2).t().const_set(7);  // a strided, odd-offset region
    Ref want{{4, 6}, std::vector<double>(24, 0.0)};
    for (int i = 0; i < 4; i++)
      want.v[static_cast<size_t>(i * 6 + 1)] = want.v[static_cast<size_t>(i * 6 + 2)] = 7;
    WICK_EXPECT_CLOSE(z, want, Tol{0, 0});
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuFill);

// ---- random -------------------------------------------------------------------------------------

class GpuRandom : public GpuDeviceTest {};

TEST_P(GpuRandom, UniformAndNormalMomentsAndSeeding) {
  const Device d = private_device();
  const int64_t n = 20000;
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    d.set_seed(42);
    const std::vector<double> u = Tensor::rand(-1, 3, {n}, dt, d).to_vec_f64();
    double mean = 0, var = 0;
    for (double x : u) {
      EXPECT_GE(x, -1);
      EXPECT_LT(x, 3);
      mean += x / n;
    }
    for (double x : u) var += (x - mean) * (x - mean) / n;
    EXPECT_NEAR(mean, 1.0, 0.05);
    EXPECT_NEAR(var, 16.0 / 12, 0.05);
    const std::vector<double> g = Tensor::randn(2, 0.5, {n}, dt, d).to_vec_f64();
    mean = var = 0;
    for (double x : g) mean += x / n;
    for (double x : g) var += (x - mean) * (x - mean) / n;
    EXPECT_NEAR(mean, 2.0, 0.02);
    EXPECT_NEAR(std::sqrt(var), 0.5, 0.02);
    // Reseeding replays the sequence; the next draw differs from the first.
    d.set_seed(42);
    EXPECT_EQ(Tensor::rand(-1, 3, {n}, dt, d).to_vec_f64(), u);
    EXPECT_NE(Tensor::rand(-1, 3, {n}, dt, d).to_vec_f64(), u);
  }
  const std::vector<double> fixed = Tensor::randn(1.5, 0, {8}, DType::F32, d).to_vec_f64();
  EXPECT_EQ(fixed, std::vector<double>(8, 1.5));
}

WICK_INSTANTIATE_GPU_DEVICES(GpuRandom);

}  // namespace
}  // namespace wick::testing
