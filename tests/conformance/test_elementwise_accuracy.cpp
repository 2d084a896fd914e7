// Relative accuracy of the float functions where a formula can cancel, overflow or lose a small
// argument: near 0, in the tails, near the overflow and underflow limits, near 1 for log and pow,
// at the zeros of sin and cos, for huge arguments of sin and cos. Errors are measured in ulps of
// the dtype at the exact value (a long double reference on the rounded input); results below
// the dtype's normal range get an absolute floor of its smallest normal where its subnormals are
// f32's or f64's (a device may flush those). f16/bf16 compute in f32 and round once, so they
// must land on one of the two dtype values around the exact result.
#include <cmath>
#include <iomanip>
#include <limits>

#include "conformance/elementwise_ref.h"

namespace wick::testing {
namespace {

using namespace elementwise;

// Significand bits, exponent of the smallest normal, largest finite value.
struct Limits {
  int digits, min_exp;
  double max;
};
Limits limits_of(DType dt) {
  switch (dt) {
    case DType::F16:
      return {11, -14, 65504.0};
    case DType::BF16:
      return {8, -126, 3.3895313892515355e38};
    case DType::F64:
      return {53, -1022, std::numeric_limits<double>::max()};
    default:
      return {24, -126, std::numeric_limits<float>::max()};
  }
}

// Error of `got` in ulps of dt at the exact value `want` (see the file comment); 0 when both are
// NaN or the same infinity, infinite when only one is.
double ulp_error(double got, long double want, DType dt) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
  const double rounded = round_ref(Ref{Shape{1}, {static_cast<double>(want)}}, dt).v[0];
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : INFINITY;
  const Limits l = limits_of(dt);
  const long double diff = std::abs(static_cast<long double>(got) - want);
  const long double min_normal = std::ldexp(1.0L, l.min_exp);
  if (dt != DType::F16 && std::abs(want) < min_normal && diff <= min_normal) return 0;
  const int e = want == 0 ? l.min_exp : std::max(std::ilogb(want), l.min_exp);
  return static_cast<double>(diff / std::ldexp(1.0L, e - (l.digits - 1)));
}

// How the inputs of a sweep are drawn from [lo, hi].
enum class Spread {
  Uniform,
  Log,              // magnitudes log-uniform in [lo, hi], both signs
  LogPositive,      // log-uniform in [lo, hi]
  LogNegative,      // minus log-uniform in [lo, hi]
  NearOne,          // 1 + s m, s = +-1, m log-uniform in [lo, hi]
  HalfPiMultiples,  // k pi / 2, k an integer uniform in [lo, hi] (zeros of sin and cos)
};
struct Sweep {
  Spread spread;
  double lo, hi;
};

std::vector<double> draw(Rng& rng, const Sweep& s, int n) {
  std::vector<double> xs;
  for (int i = 0; i < n; i++) {
    const double m = std::exp(rng.uniform(std::log(s.lo), std::log(s.hi)));
    const double sign = rng.integer(0, 1) ? 1.0 : -1.0;
    switch (s.spread) {
      case Spread::Uniform:
        xs.push_back(rng.uniform(s.lo, s.hi));
        break;
      case Spread::Log:
        xs.push_back(sign * m);
        break;
      case Spread::LogPositive:
        xs.push_back(m);
        break;
      case Spread::LogNegative:
        xs.push_back(-m);
        break;
      case Spread::NearOne:
        xs.push_back(1 + sign * m);
        break;
      case Spread::HalfPiMultiples:
        xs.push_back(static_cast<double>(
                         rng.integer(static_cast<int64_t>(s.lo), static_cast<int64_t>(s.hi))) *
                     (M_PI / 2));
        break;
    }
  }
  return xs;
}

const char* spread_name(Spread s) {
  static const char* names[] = {"uniform", "log", "log+", "log-", "near 1", "k pi/2"};
  return names[static_cast<int>(s)];
}

struct AccuracyCase {
  std::string op;
  std::vector<Sweep> (*sweeps)(DType dt);
  double max_ulp;  // f32 and f64; f16/bf16 are held to 1 (see the file comment)
};

// ln of the largest finite value and of the smallest normal of dt.
double log_max(DType dt) {
  return std::log(limits_of(dt).max);
}
double log_min(DType dt) {
  return limits_of(dt).min_exp * M_LN2;
}
bool wide(DType dt) {  // f64's exponent range
  return dt == DType::F64;
}

const Sweep kNearZero{Spread::Log, 1e-8, 1e-2};

const std::vector<AccuracyCase>& accuracy_cases() {
  static const std::vector<AccuracyCase> cases = {
      {"exp",
       [](DType dt) {
         return std::vector<Sweep>{kNearZero,
                                   {Spread::Uniform, -log_max(dt), log_max(dt)},
                                   {Spread::Uniform, log_max(dt) - 3, log_max(dt) + 0.5},
                                   {Spread::Uniform, log_min(dt) - 6, log_min(dt) + 3}};
       },
       2},
      {"log",
       [](DType dt) {
         const double tiny = std::ldexp(1.0, limits_of(dt).min_exp);
         return std::vector<Sweep>{{Spread::NearOne, 1e-7, 1e-2},
                                   {Spread::LogPositive, tiny, limits_of(dt).max},
                                   {Spread::LogPositive, tiny / 1000, tiny}};  // subnormal x
       },
       2},
      {"sin",
       [](DType dt) {
         return std::vector<Sweep>{kNearZero,
                                   {Spread::Uniform, -10, 10},
                                   {Spread::Log, 10, limits_of(dt).max / 2},
                                   {Spread::HalfPiMultiples, 1, 100000}};
       },
       2},
      {"cos",
       [](DType dt) {
         return std::vector<Sweep>{kNearZero,
                                   {Spread::Uniform, -10, 10},
                                   {Spread::Log, 10, limits_of(dt).max / 2},
                                   {Spread::HalfPiMultiples, 1, 100000}};
       },
       2},
      {"tanh",
       [](DType) {
         return std::vector<Sweep>{kNearZero, {Spread::Uniform, -5, 5}, {Spread::Log, 5, 30}};
       },
       3},
      {"erf",
       [](DType) {
         return std::vector<Sweep>{kNearZero, {Spread::Uniform, -3, 3}, {Spread::Log, 3, 6}};
       },
       3},
      {"gelu",
       [](DType dt) {
         return std::vector<Sweep>{kNearZero,
                                   {Spread::Uniform, -5, 5},
                                   {Spread::Uniform, wide(dt) ? -20.0 : -10.0, -5},
                                   {Spread::Uniform, 5, 10}};
       },
       4},
      {"gelu_erf",
       [](DType dt) {
         return std::vector<Sweep>{kNearZero,
                                   {Spread::Uniform, -5, 5},
                                   {Spread::Uniform, wide(dt) ? -35.0 : -12.0, -5},
                                   {Spread::Uniform, 5, 10}};
       },
       6},  // erfc's fit: 5 ulp (scripts/fit_erf.py), then the product
      {"silu",
       [](DType dt) {
         return std::vector<Sweep>{kNearZero,
                                   {Spread::Uniform, -10, 10},
                                   {Spread::Uniform, std::min(0.95 * log_min(dt), -20.0), -10}};
       },
       4},
      {"sigmoid",
       [](DType dt) {
         return std::vector<Sweep>{kNearZero,
                                   {Spread::Uniform, -10, 10},
                                   {Spread::Uniform, std::min(0.95 * log_min(dt), -20.0), -10}};
       },
       3},
      {"elu",
       [](DType) {
         return std::vector<Sweep>{{Spread::LogNegative, 1e-8, 1e-2},
                                   {Spread::Uniform, -20, 1},
                                   {Spread::LogPositive, 1e-8, 1e3}};
       },
       3},
      {"powf",  // x^1.7
       [](DType dt) {
         return std::vector<Sweep>{
             {Spread::NearOne, 1e-7, 1e-2},
             {Spread::LogPositive, std::exp(0.55 * log_min(dt)), std::exp(0.55 * log_max(dt))}};
       },
       3},
  };
  return cases;
}

class UnaryAccuracy : public DeviceTest {};

TEST_P(UnaryAccuracy, RelativeErrorNearZeroInTheTailsAndAtTheLimits) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (const AccuracyCase& a : accuracy_cases()) {
    const UnaryCase& c = unary_case(a.op);
    for (DType dt : kFloatDTypes) {
      const bool half = dt == DType::F16 || dt == DType::BF16;
      const double bound = half ? 1 : a.max_ulp;
      for (const Sweep& s : a.sweeps(dt)) {
        const Ref x = round_ref(Ref{Shape{512}, draw(rng, s, 512)}, dt);
        const std::vector<double> got = c.run(make_tensor(x, dt, dev)).to_vec_f64();
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < got.size(); i++) {
          const double e = ulp_error(got[i], c.ref(x.v[i]), dt);
          if (!(e <= worst)) {
            worst = e;
            at = i;
          }
        }
        EXPECT_LE(worst, bound) << a.op << " " << dt << " " << spread_name(s.spread) << " [" << s.lo
                                << ", " << s.hi << "]: at x = " << std::setprecision(17) << x.v[at]
                                << " got " << got[at] << ", want "
                                << static_cast<double>(c.ref(x.v[at])) << " (" << worst << " ulp)";
      }
    }
  }
}

// a^b with b of either sign: the binary pow's error grows with |b log a| unless log a is carried
// beyond the dtype's precision.
TEST_P(UnaryAccuracy, BinaryPowRelativeError) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : kFloatDTypes) {
    const bool half = dt == DType::F16 || dt == DType::BF16;
    const int n = 1024;
    const Ref a = round_ref(Ref{Shape{n}, draw(rng, {Spread::LogPositive, 1e-3, 1e3}, n)}, dt);
    const Ref b = round_ref(Ref{Shape{n}, draw(rng, {Spread::Uniform, -12, 12}, n)}, dt);
    const std::vector<double> got =
        make_tensor(a, dt, dev).pow(make_tensor(b, dt, dev)).to_vec_f64();
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < got.size(); i++) {
      const long double want =
          std::pow(static_cast<long double>(a.v[i]), static_cast<long double>(b.v[i]));
      const double e = ulp_error(got[i], want, dt);
      if (!(e <= worst)) {
        worst = e;
        at = i;
      }
    }
    EXPECT_LE(worst, half ? 1 : 3)
        << "pow " << dt << ": at " << std::setprecision(17) << a.v[at] << " ^ " << b.v[at]
        << " got " << got[at] << " (" << worst << " ulp)";
  }
}

WICK_INSTANTIATE_DEVICES(UnaryAccuracy);

}  // namespace
}  // namespace wick::testing
