// Float64 references and op tables shared by the element-wise conformance tests.
//
// A float op's reference is computed in double on the dtype-rounded inputs and then rounded to
// the dtype, as the op's result is. Integer ops are checked exactly against 64-bit integer
// arithmetic (see int_unary_ref / int_binary_ref for the semantics they define).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"

namespace wick::testing::elementwise {

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> run;
  // In long double, written without cancellation: a reference for relative errors of f64 too.
  std::function<long double(long double)> ref;
  double lo, hi;   // random inputs are drawn from [lo, hi]
  bool exact;      // the result equals the rounded reference bit for bit
  bool takes_int;  // the op also takes u8/u32/i64 (int_unary_ref)
};

// 0.5 x (1 + tanh u) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
inline long double gelu_tanh_ref(long double x) {
  const long double u = std::sqrt(2.0L / std::acos(-1.0L)) * (x + 0.044715L * x * x * x);
  return x / (1 + std::exp(-2 * u));
}
// 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2).
inline long double gelu_erf_ref(long double x) {
  return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
}
inline long double sign_ref(long double x) {
  return x > 0 ? 1.0L : x < 0 ? -1.0L : x;
}  // NaN stays NaN

// Parameters of the parameterised ops, shared with the integer references.
// Op parameters are taken in the compute type (f32 for f32/f16/bf16): kPowfExp is 1.7 rounded to
// f32, so that the f64 reference raises to the same power (x^1.7 and x^float(1.7) differ by
// 2e-6 relative at x = 1e-20).
inline constexpr double kAffineMul = -1.75, kAffineAdd = 0.3, kEluAlpha = 0.8;
inline constexpr double kPowfExp = static_cast<float>(1.7);
inline constexpr double kClampLo = -0.75, kClampHi = 1.25;

inline const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& t) { return t.neg(); }, [](long double x) { return -x; }, -3, 3,
       true, true},
      {"abs", [](const Tensor& t) { return t.abs(); }, [](long double x) { return std::abs(x); },
       -3, 3, true, true},
      {"exp", [](const Tensor& t) { return t.exp(); }, [](long double x) { return std::exp(x); },
       -10, 10, false, false},
      {"log", [](const Tensor& t) { return t.log(); }, [](long double x) { return std::log(x); },
       0.01, 50, false, false},
      {"sin", [](const Tensor& t) { return t.sin(); }, [](long double x) { return std::sin(x); },
       -6, 6, false, false},
      {"cos", [](const Tensor& t) { return t.cos(); }, [](long double x) { return std::cos(x); },
       -6, 6, false, false},
      {"tanh", [](const Tensor& t) { return t.tanh(); }, [](long double x) { return std::tanh(x); },
       -6, 6, false, false},
      {"sqrt", [](const Tensor& t) { return t.sqrt(); }, [](long double x) { return std::sqrt(x); },
       0, 20, false, false},
      // In double: a long double square (64 bits) rounded again to f64 can miss by an ulp.
      {"sqr", [](const Tensor& t) { return t.sqr(); },
       [](long double x) -> long double {
         const auto d = static_cast<double>(x);
         return d * d;
       },
       -4, 4, true, true},
      {"recip", [](const Tensor& t) { return t.recip(); }, [](long double x) { return 1.0 / x; },
       -5, 5, false, false},
      {"relu", [](const Tensor& t) { return t.relu(); },
       [](long double x) { return x < 0 ? 0.0L : x; }, -3, 3, true, true},
      {"gelu", [](const Tensor& t) { return t.gelu(); }, gelu_tanh_ref, -5, 5, false, false},
      {"gelu_erf", [](const Tensor& t) { return t.gelu_erf(); }, gelu_erf_ref, -5, 5, false, false},
      {"erf", [](const Tensor& t) { return t.erf(); }, [](long double x) { return std::erf(x); },
       -4, 4, false, false},
      {"silu", [](const Tensor& t) { return t.silu(); },
       [](long double x) { return x / (1.0 + std::exp(-x)); }, -8, 8, false, false},
      {"sigmoid", [](const Tensor& t) { return t.sigmoid(); },
       [](long double x) { return 1.0 / (1.0 + std::exp(-x)); }, -10, 10, false, false},
      {"floor", [](const Tensor& t) { return t.floor(); },
       [](long double x) { return std::floor(x); }, -10, 10, true, false},
      {"ceil", [](const Tensor& t) { return t.ceil(); }, [](long double x) { return std::ceil(x); },
       -10, 10, true, false},
      {"round", [](const Tensor& t) { return t.round(); },
       [](long double x) { return std::round(x); }, -10, 10, true, false},
      {"sign", [](const Tensor& t) { return t.sign(); }, sign_ref, -3, 3, true, true},
      {"affine", [](const Tensor& t) { return t.affine(kAffineMul, kAffineAdd); },
       [](long double x) { return x * kAffineMul + kAffineAdd; }, -3, 3, false, true},
      {"powf", [](const Tensor& t) { return t.powf(kPowfExp); },
       [](long double x) { return std::pow(x, kPowfExp); }, 0, 4, false, false},
      {"elu", [](const Tensor& t) { return t.elu(kEluAlpha); },
       [](long double x) { return x > 0 ? x : kEluAlpha * std::expm1(x); }, -5, 5, false, false},
      {"clamp", [](const Tensor& t) { return t.clamp(kClampLo, kClampHi); },
       [](long double x) {
         const long double lo = kClampLo, hi = kClampHi;
         return std::isnan(x) ? x : std::min(std::max(x, lo), hi);
       },
       -3, 3, true, true},
  };
  return cases;
}

inline const UnaryCase& unary_case(const std::string& name) {
  for (const UnaryCase& c : unary_cases())
    if (c.name == name) return c;
  throw std::runtime_error("no unary case " + name);
}

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> run;
  std::function<Tensor(const Tensor&, double)> run_scalar;
  std::function<double(double, double)> ref;
  double lo, hi, b_lo, b_hi;  // ranges of the random a and b (b away from 0 for div)
  bool float_only;
};

// NaN-propagating maximum / minimum (PyTorch's).
inline double max_ref(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}
inline double min_ref(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
}

inline const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return a.add(b); },
       [](const Tensor& a, double s) { return a.add(s); }, [](double a, double b) { return a + b; },
       -3, 3, -3, 3, false},
      {"sub", [](const Tensor& a, const Tensor& b) { return a.sub(b); },
       [](const Tensor& a, double s) { return a.sub(s); }, [](double a, double b) { return a - b; },
       -3, 3, -3, 3, false},
      {"mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); },
       [](const Tensor& a, double s) { return a.mul(s); }, [](double a, double b) { return a * b; },
       -3, 3, -3, 3, false},
      {"div", [](const Tensor& a, const Tensor& b) { return a.div(b); },
       [](const Tensor& a, double s) { return a.div(s); }, [](double a, double b) { return a / b; },
       -3, 3, 0.25, 3, false},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); },
       [](const Tensor& a, double s) { return a.maximum(s); }, max_ref, -3, 3, -3, 3, false},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); },
       [](const Tensor& a, double s) { return a.minimum(s); }, min_ref, -3, 3, -3, 3, false},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); },
       [](const Tensor& a, double s) { return a.pow(s); },
       [](double a, double b) { return std::pow(a, b); }, 0.1, 3, -2, 2, true},
  };
  return cases;
}

struct CmpCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> run;
  std::function<Tensor(const Tensor&, double)> run_scalar;
  std::function<bool(double, double)> ref;
};

inline const std::vector<CmpCase>& cmp_cases() {
  static const std::vector<CmpCase> cases = {
      {"eq", [](const Tensor& a, const Tensor& b) { return a.eq(b); },
       [](const Tensor& a, double s) { return a.eq(s); },
       [](double a, double b) { return a == b; }},
      {"ne", [](const Tensor& a, const Tensor& b) { return a.ne(b); },
       [](const Tensor& a, double s) { return a.ne(s); },
       [](double a, double b) { return a != b; }},
      {"lt", [](const Tensor& a, const Tensor& b) { return a.lt(b); },
       [](const Tensor& a, double s) { return a.lt(s); }, [](double a, double b) { return a < b; }},
      {"le", [](const Tensor& a, const Tensor& b) { return a.le(b); },
       [](const Tensor& a, double s) { return a.le(s); },
       [](double a, double b) { return a <= b; }},
      {"gt", [](const Tensor& a, const Tensor& b) { return a.gt(b); },
       [](const Tensor& a, double s) { return a.gt(s); }, [](double a, double b) { return a > b; }},
      {"ge", [](const Tensor& a, const Tensor& b) { return a.ge(b); },
       [](const Tensor& a, double s) { return a.ge(s); },
       [](double a, double b) { return a >= b; }},
  };
  return cases;
}

inline Ref map_ref(const Ref& x, const std::function<double(double)>& f) {
  Ref out{x.shape, x.v};
  for (double& v : out.v) v = f(v);
  return out;
}

// r broadcast to shape `to` (numpy rules).
inline Ref broadcast_ref(const Ref& r, const Shape& to) {
  if (r.shape == to) return r;
  const size_t rank = to.rank(), pad = rank - r.shape.rank();
  std::vector<int64_t> stride(rank, 0);  // r's row-major strides, 0 on broadcast dims
  int64_t s = 1;
  for (size_t k = r.shape.rank(); k-- > 0;) {
    stride[pad + k] = r.shape[k] == 1 ? 0 : s;
    s *= r.shape[k];
  }
  Ref out{to, std::vector<double>(static_cast<size_t>(to.numel()))};
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (double& v : out.v) {
    v = r.v[static_cast<size_t>(off)];
    for (size_t k = rank; k-- > 0;) {  // odometer step
      off += stride[k];
      if (++idx[k] < to[k]) break;
      off -= stride[k] * to[k];
      idx[k] = 0;
    }
  }
  return out;
}

// a and b broadcast to their common shape, then combined element by element.
inline Ref zip_ref(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  const Shape shape = broadcast_shapes(a.shape, b.shape, "zip_ref");
  Ref x = broadcast_ref(a, shape), y = broadcast_ref(b, shape);
  for (size_t i = 0; i < x.v.size(); i++) x.v[i] = f(x.v[i], y.v[i]);
  return x;
}

// The value range random integer inputs of `dt` are drawn from.
inline std::pair<int64_t, int64_t> int_range(DType dt) {
  switch (dt) {
    case DType::U8:
      return {0, 255};
    case DType::U32:
      return {0, 4294967295};
    case DType::I32:
      return {INT32_MIN, INT32_MAX};
    default:
      return {-(int64_t{1} << 40), int64_t{1} << 40};  // squares and products wrap
  }
}

// Wraps an exact 64-bit result to `dt` (two's complement / modulo 2^bits).
inline int64_t wrap_to(DType dt, uint64_t v) {
  switch (dt) {
    case DType::U8:
      return static_cast<uint8_t>(v);
    case DType::U32:
      return static_cast<uint32_t>(v);
    case DType::I32:
      return static_cast<int32_t>(static_cast<uint32_t>(v));
    default:
      return static_cast<int64_t>(v);
  }
}

inline int64_t saturate_to(DType dt, double v) {
  return dispatch_dtype(dt, [&](auto z) -> int64_t {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>)
      return static_cast<int64_t>(from_f64<T>(v));
    else
      return 0;
  });
}

// Integer semantics of the unary ops that take integers (documented in src/cpu/unary.cpp).
inline int64_t int_unary_ref(const std::string& op, DType dt, int64_t x) {
  const auto u = static_cast<uint64_t>(x);
  if (op == "neg") return wrap_to(dt, 0 - u);
  if (op == "abs") return x < 0 ? wrap_to(dt, 0 - u) : x;
  if (op == "sqr") return wrap_to(dt, u * u);
  if (op == "relu") return x < 0 ? 0 : x;
  if (op == "sign") return x > 0 ? 1 : x < 0 ? -1 : 0;
  if (op == "affine") return saturate_to(dt, static_cast<double>(x) * kAffineMul + kAffineAdd);
  if (op == "clamp") {
    const auto d = static_cast<double>(x);
    return d < kClampLo ? saturate_to(dt, kClampLo) : d > kClampHi ? saturate_to(dt, kClampHi) : x;
  }
  ADD_FAILURE() << "no integer reference for " << op;
  return 0;
}

// Integer semantics of the binary ops (src/cpu/binary.cpp): wrapping add/sub/mul, division
// truncating toward zero (b != 0 here; division by zero is an error).
inline int64_t int_binary_ref(const std::string& op, DType dt, int64_t a, int64_t b) {
  const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  if (op == "add") return wrap_to(dt, ua + ub);
  if (op == "sub") return wrap_to(dt, ua - ub);
  if (op == "mul") return wrap_to(dt, ua * ub);
  if (op == "div") return dt == DType::I32 ? wrap_to(dt, static_cast<uint64_t>(a / b)) : a / b;
  if (op == "maximum") return std::max(a, b);
  if (op == "minimum") return std::min(a, b);
  ADD_FAILURE() << "no integer reference for " << op;
  return 0;
}

inline std::vector<int64_t> to_ints(const Ref& r) {
  return std::vector<int64_t>(r.v.begin(), r.v.end());
}

// Expects t (an integer tensor) to hold exactly `want`, read back as int64.
inline ::testing::AssertionResult ints_equal(const Tensor& t, const Shape& shape,
                                             const std::vector<int64_t>& want) {
  if (t.shape() != shape)
    return ::testing::AssertionFailure() << "shape " << t.shape() << " != " << shape;
  const std::vector<int64_t> got = t.to_vec<int64_t>();
  int bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < got.size(); i++)
    if (got[i] != want[i] && bad++ < 6)
      os << "\n  [" << i << "] got " << got[i] << " want " << want[i];
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " differ for " << t.str() << os.str();
}

}  // namespace wick::testing::elementwise
