// The CPU kernels' vectorisable building blocks (src/cpu/row_math.h): 16-bit float conversions
// must agree bit for bit with wick's own f16/bf16 conversions, and exp_f32 must stay within a
// few ulps of exp.
#include <bit>
#include <cmath>
#include <limits>

#include "cpu/row_math.h"
#include "harness.h"

namespace wick::testing {
namespace {

TEST(RowMath, HalfToFloatMatchesF16OnEveryValue) {
  for (uint32_t b = 0; b < 65536; b++) {
    const float want = f16::to_float(static_cast<uint16_t>(b)),
                got = cpu::half_to_float(static_cast<uint16_t>(b));
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << b;
    else
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << b;
  }
}

TEST(RowMath, FloatToHalfMatchesF16) {
  const auto check = [](float f) {
    const uint16_t want = f16::from_float(f), got = cpu::float_to_half(f);
    if (std::isnan(f))
      EXPECT_EQ(got & 0x7e00u, 0x7e00u) << f;  // a quiet NaN
    else
      EXPECT_EQ(got, want) << f << " bits " << std::bit_cast<uint32_t>(f);
  };
  // Every f16 value, the midpoints between neighbours (ties) and one f32 ulp either side.
  for (uint32_t b = 0; b < 0x7c00; b++) {
    const float lo = f16::to_float(static_cast<uint16_t>(b)),
                hi = f16::to_float(static_cast<uint16_t>(b + 1));
    const float mid = lo + (hi - lo) / 2;
    for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      check(f);
      check(-f);
    }
  }
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (int i = 0; i < 200000; i++) check(std::bit_cast<float>(static_cast<uint32_t>(rng.gen()())));
  for (float f :
       {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f, std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::denorm_min(), 1e-8f, 2.98e-8f, 5.96e-8f})
    check(f);
}

TEST(RowMath, Bf16ComputeConversionsMatch) {
  for (uint32_t b = 0; b < 65536; b++) {
    const float want = bf16::to_float(static_cast<uint16_t>(b));
    const float got = cpu::to_compute(bf16::from_bits(static_cast<uint16_t>(b)));
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want));
  }
}

TEST(RowMath, ExpWithinTwoUlps) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  double worst = 0;
  for (int i = 0; i < 200000; i++) {
    const auto x = static_cast<float>(rng.uniform(-87.3, 88.7));
    const double want = std::exp(static_cast<double>(x));
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    worst = std::max(worst, std::abs(cpu::exp_f32(x) - want) / ulp);
  }
  EXPECT_LT(worst, 2.0);
  EXPECT_EQ(cpu::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(cpu::exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(cpu::exp_f32(-100.0f), 0.0f);
  EXPECT_EQ(cpu::exp_f32(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(cpu::exp_f32(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(cpu::exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_NEAR(cpu::exp_f32(88.5f), std::exp(88.5),
              2 * std::ldexp(1.0, std::ilogb(std::exp(88.5)) - 23));
}

}  // namespace
}  // namespace wick::testing
