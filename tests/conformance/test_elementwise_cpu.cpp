// CPU element-wise internals: the vectorisable f16/bf16 conversions (against wick's own, bit for
// bit), the float functions of float_math.h (error in ulp over dense sweeps and special values),
// and the AVX2 / AVX-512 builds of the kernels (same results as the baseline build).
#include <bit>
#include <cmath>
#include <limits>

#include "conformance/elementwise_ref.h"
#include "cpu/float_math.h"
#include "cpu/half_convert.h"
#include "cpu/isa.h"
#include "isa_cap.h"

namespace wick::testing {
namespace {

using namespace elementwise;

uint32_t bits(float v) {
  return std::bit_cast<uint32_t>(v);
}

// Floats that exercise a 16-bit format's rounding: every value of the format, the midpoints
// between neighbours and the floats just either side of them, both signs, plus random patterns.
template <typename H>
std::vector<float> rounding_probes(Rng& rng) {
  std::vector<float> out;
  for (uint32_t b = 0; b < 0x7fff; b++) {
    const float v = static_cast<float>(H::from_bits(static_cast<uint16_t>(b)));
    const float next = static_cast<float>(H::from_bits(static_cast<uint16_t>(b + 1)));
    if (!std::isfinite(v)) continue;
    const float mid = std::isfinite(next) ? v + (next - v) / 2 : v * 1.001f;
    for (float x : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      out.push_back(x);
      out.push_back(-x);
    }
  }
  for (int i = 0; i < 1 << 18; i++)
    out.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng.gen()())));
  for (float x : {INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f, 65520.0f, 3.4e38f})
    out.push_back(x);
  return out;
}

TEST(CpuHalfConvert, WidenMatchesDTypeForEveryValue) {
  for (uint32_t b = 0; b < 65536; b++) {
    const auto h = static_cast<uint16_t>(b);
    ASSERT_EQ(bits(cpu::f16_bits_to_float(h)), bits(f16::to_float(h))) << "f16 bits " << b;
    ASSERT_EQ(bits(cpu::bf16_bits_to_float(h)), bits(bf16::to_float(h))) << "bf16 bits " << b;
  }
  // The strided row form.
  std::vector<f16> src;
  for (int i = 0; i < 64; i++) src.push_back(f16(static_cast<float>(i) - 20.5f));
  std::vector<float> dst(16);
  cpu::widen_row(src.data() + 3, 4, dst.data(), 16);
  for (int j = 0; j < 16; j++) EXPECT_EQ(dst[j], static_cast<float>(src[3 + 4 * j]));
}

TEST(CpuHalfConvert, NarrowMatchesDTypeBitForBit) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (float x : rounding_probes<f16>(rng))
    ASSERT_EQ(cpu::float_to_f16_bits(x), f16(x).bits) << x << " " << bits(x);
  for (float x : rounding_probes<bf16>(rng))
    ASSERT_EQ(cpu::float_to_bf16_bits(x), bf16(x).bits) << x << " " << bits(x);
}

// Error of a float result in units of the float spacing at the exact value (subnormal spacing
// below the normal range); 0 when both are NaN or the same infinity, infinite on a mismatch.
double ulp_error(float got, double want) {
  const auto rounded = static_cast<float>(want);  // inf where want overflows float
  if (std::isnan(want) || std::isinf(rounded) || std::isinf(got))
    return (std::isnan(want) && std::isnan(got)) || got == rounded ? 0 : INFINITY;
  const float w = std::abs(static_cast<float>(want));
  const double spacing =
      std::max<double>(std::nextafter(w, INFINITY) - w, std::numeric_limits<float>::denorm_min());
  return std::abs(static_cast<double>(got) - want) / spacing;
}

struct MathCase {
  const char* name;
  float (*fn)(float);
  double (*ref)(double);
  double lo, hi;   // sweep range
  double max_ulp;  // bound on the error
};

double sigmoid_ref(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

TEST(CpuFloatMath, ErrorInUlpOverSweepsAndSpecials) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const MathCase cases[] = {
      {"exp", [](float x) { return cpu::vmath::exp(x); }, [](double x) { return std::exp(x); },
       -110, 90, 2},
      {"expm1_nonpositive", [](float x) { return cpu::vmath::expm1_nonpositive(x); },
       [](double x) { return std::expm1(x); }, -95, 0, 2},
      {"tanh", [](float x) { return cpu::vmath::tanh(x); }, [](double x) { return std::tanh(x); },
       -12, 12, 3},
      {"sigmoid", [](float x) { return cpu::vmath::sigmoid(x); }, sigmoid_ref, -110, 110, 3},
      {"log", [](float x) { return cpu::vmath::log(x); }, [](double x) { return std::log(x); }, 0,
       4, 2},
      {"erf", [](float x) { return cpu::vmath::erf(x); }, [](double x) { return std::erf(x); }, -7,
       7, 3},
      {"erfc", [](float x) { return cpu::vmath::erfc(x); }, [](double x) { return std::erfc(x); },
       -7, 12, 6},
  };
  const float specials[] = {0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            1e-40f,
                            -1e-40f,
                            1e-30f,
                            -1e-30f,
                            std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            1.0f,
                            -1.0f,
                            88.72f,
                            -87.33f,
                            -103.9f};
  for (const MathCase& c : cases) {
    std::vector<float> xs(std::begin(specials), std::end(specials));
    for (int i = 0; i <= 50000; i++)
      xs.push_back(static_cast<float>(c.lo + (c.hi - c.lo) * i / 50000));
    // Random finite floats, every exponent equally likely, both signs.
    for (int i = 0; i < 50000; i++) {
      const auto u = static_cast<uint32_t>(rng.gen()());
      xs.push_back(std::bit_cast<float>((u & 0x807fffffu) |
                                        static_cast<uint32_t>(rng.integer(0, 254) << 23)));
    }
    double worst = 0;
    float worst_x = 0;
    for (float x : xs) {
      if (std::string(c.name) == "expm1_nonpositive" && !(x <= 0)) continue;  // its domain
      const double e = ulp_error(c.fn(x), c.ref(static_cast<double>(x)));
      if (!(e <= worst)) {
        worst = e;
        worst_x = x;
      }
    }
    EXPECT_LE(worst, c.max_ulp) << c.name << " at x = " << worst_x << " (" << bits(worst_x)
                                << "): got " << c.fn(worst_x) << ", want " << c.ref(worst_x);
  }
}

std::vector<cpu::Isa> available_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa isa : {cpu::Isa::Baseline, cpu::Isa::Avx2, cpu::Isa::Avx512})
    if (static_cast<int>(isa) <= static_cast<int>(cpu::detected_isa())) out.push_back(isa);
  return out;
}

// Every float unary and binary op, in every build this CPU runs, on lengths that leave vector
// remainders, strided and broadcast inputs: results equal the baseline build's exactly.
TEST(CpuIsa, EveryBuildMatchesTheBaseline) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = Device::cpu();
  const Shape shape{37, 29};
  for (DType dt : kFloatDTypes) {
    std::vector<std::function<Tensor()>> runs;
    std::vector<std::string> names;
    for (const UnaryCase& c : unary_cases()) {
      const Ref r = random_ref(rng, shape, c.lo, c.hi);
      for (Variant v : {Variant::Contiguous, Variant::Transposed}) {
        const Tensor x = make_tensor(r, dt, dev, v);
        runs.push_back([&c, x] { return c.run(x); });
        names.push_back(c.name + " " + variant_name(v));
      }
    }
    for (const BinaryCase& c : binary_cases()) {
      const Tensor a = make_tensor(random_ref(rng, shape, c.lo, c.hi), dt, dev);
      const Tensor b =
          make_tensor(random_ref(rng, shape, c.b_lo, c.b_hi), dt, dev, Variant::Permuted);
      const Tensor row = make_tensor(random_ref(rng, {29}, c.b_lo, c.b_hi), dt, dev);
      runs.push_back([&c, a, b] { return c.run(a, b); });
      runs.push_back([&c, a, row] { return c.run(a, row); });
      runs.push_back([&c, a] { return c.run_scalar(a, 1.25); });
      for (const char* form : {" both", " row", " scalar"}) names.push_back(c.name + form);
    }
    std::vector<Ref> baseline;
    {
      IsaCap cap(cpu::Isa::Baseline);
      for (auto& run : runs) baseline.push_back(to_ref(run()));
    }
    for (cpu::Isa isa : available_isas()) {
      IsaCap cap(isa);
      for (size_t i = 0; i < runs.size(); i++)
        EXPECT_TRUE(close(runs[i](), baseline[i], Tol{0, 0}))
            << names[i] << " " << dtype_name(dt) << " " << cpu::isa_name(isa);
    }
  }
}

// f16/bf16 results are rounded by the vectorised conversion of each build: affine over every
// 16-bit value, scaled into the subnormal and overflow ranges, matches the scalar conversion.
template <typename H>
void check_affine_every_value() {
  std::vector<H> all(65536);
  for (uint32_t b = 0; b < 65536; b++) all[b] = H::from_bits(static_cast<uint16_t>(b));
  const Tensor x = Tensor::from_vec(all, {65536}, Device::cpu());
  for (auto [mul, add] :
       {std::pair{1.0, 0.0}, std::pair{3.7, -0.1}, std::pair{1e-3, 0.0}, std::pair{300.0, 0.0}}) {
    std::vector<uint16_t> want;
    for (H h : all)
      want.push_back(
          H(static_cast<float>(h) * static_cast<float>(mul) + static_cast<float>(add)).bits);
    for (cpu::Isa isa : available_isas()) {
      IsaCap cap(isa);
      const std::vector<H> got = x.affine(mul, add).template to_vec<H>();
      int bad = 0;
      for (size_t b = 0; b < got.size(); b++)
        if (got[b].bits != want[b] && bad++ < 4)
          ADD_FAILURE() << dtype_name(dtype_of<H>::value) << " bits " << b << " * " << mul << " + "
                        << add << " under " << cpu::isa_name(isa) << ": got bits " << got[b].bits
                        << ", want " << want[b];
      EXPECT_EQ(bad, 0);
    }
  }
}

TEST(CpuIsa, HalfRoundingInEveryBuild) {
  check_affine_every_value<f16>();
  check_affine_every_value<bf16>();
}

}  // namespace
}  // namespace wick::testing
