// matmul_coop.comp, the f16 GEMM on cooperative matrices: every way an operand is staged (16-byte
// vectors along either dim, or element by element), both tile sizes, edge tiles, k not a
// multiple of the kernel's step, batches with a broadcast operand; against a float64 reference.
// Runs where the device has the kernel's cooperative-matrix shape (an NVIDIA GPU); lavapipe has
// none, and the test says so.
#ifdef WICK_WITH_VULKAN

#include <cmath>

#include "gpu_vulkan_util.h"

namespace wick::testing {
namespace {

// How the operand tensor is laid out; the host picks the kernel's staging mode from it.
enum class Layout3 { RowMajor, Transposed, OddStrides };

// A tensor holding r (shape (batch, rows, cols), already f16-exact) laid out as `how`.
Tensor laid_out(const Ref& r, Layout3 how, const Device& dev) {
  const int64_t batch = r.shape[0], rows = r.shape[1], cols = r.shape[2];
  const Tensor t = make_tensor(r, DType::F16, dev);
  switch (how) {
    case Layout3::RowMajor:
      return t;
    case Layout3::Transposed:  // stored (batch, cols, rows), viewed back: stride 1 along rows
      return t.t().contiguous().t();
    case Layout3::OddStrides: {  // rows cols + 4 halves apart, starting 1 half in
      Ref wide{Shape{batch, rows, cols + 4}, {}};
      for (int64_t i = 0; i < batch * rows; i++)
        for (int64_t j = 0; j < cols + 4; j++)
          wide.v.push_back(j >= 1 && j <= cols ? r.v[static_cast<size_t>(i * cols + j - 1)]
                                               : std::nan(""));
      return make_tensor(wide, DType::F16, dev).narrow(2, 1, cols);
    }
  }
  return t;
}

TEST(VulkanCoopMatmul, EveryStagingModeAndEdgeAgainstFloat64) {
  if (!vk(vk0()).caps().coopmat_f16)
    GTEST_SKIP() << vk(vk0()).caps().name << " has no 16x16x16 f16 cooperative matrix "
                 << "(extensions: " << vk(vk0()).caps().cooperative_matrix << ")";
  Rng rng;
  SCOPED_TRACE(rng.seed());
  struct Case {
    int64_t batch, m, k, n;
    bool broadcast_b;
  };
  const Case cases[] = {
      {1, 64, 32, 64, false},    // one 64 x 64 tile, k one step
      {1, 512, 96, 512, false},  // 128 x 128 tiles, all aligned
      {1, 520, 72, 600, false},  // 128 tiles with edges; k not a multiple of 32
      {1, 96, 200, 136, false},  // 64 tiles with edges
      {1, 100, 40, 70, false},   // m, n not multiples of 8: no vectors along them
      {3, 64, 48, 80, true},     // batch, b broadcast (batch stride 0)
      {2, 16, 24, 24, false},    // smaller than a tile
  };
  const Layout3 layouts[] = {Layout3::RowMajor, Layout3::Transposed, Layout3::OddStrides};
  for (uint32_t threads : {128u, 256u}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    const Device dev = private_device([&](vulkan::VulkanOptions& o) { o.coop_threads = threads; });
    for (const Case& c : cases)
      for (Layout3 la : layouts)
        for (Layout3 lb : layouts) {
          SCOPED_TRACE(::testing::Message()
                       << "batch " << c.batch << " m " << c.m << " k " << c.k << " n " << c.n
                       << " layouts " << static_cast<int>(la) << "/" << static_cast<int>(lb));
          const Ref a = round_ref(random_ref(rng, {c.batch, c.m, c.k}), DType::F16);
          const Ref b =
              round_ref(random_ref(rng, {c.broadcast_b ? 1 : c.batch, c.k, c.n}), DType::F16);
          Tensor tb = laid_out(b, lb, dev);
          if (c.broadcast_b) tb = tb.broadcast_as(Shape{c.batch, c.k, c.n});
          const uint64_t before = vk(dev).stats().coop_matmuls;
          const Tensor got = laid_out(a, la, dev).matmul(tb);
          EXPECT_EQ(vk(dev).stats().coop_matmuls, before + 1) << "not the cooperative kernel";
          // f32 sums of k products in [-4, 4] (a few ulps of sqrt(k) * 4 each), then f16 rounding.
          const double u = std::ldexp(1.0, -24);
          const Tol tol{static_cast<double>(c.k) * u * 8 + 4 * u, 2 * std::ldexp(1.0, -11)};
          WICK_EXPECT_CLOSE(got, round_ref(ref_matmul(a, b), DType::F16), tol);
        }
  }
}

TEST(VulkanCoopMatmul, OffGivesTheSimtKernel) {
  const Device dev = private_device([](vulkan::VulkanOptions& o) { o.cooperative_matrix = false; });
  Rng rng;
  const Ref a = round_ref(random_ref(rng, {1, 64, 32}), DType::F16);
  const Ref b = round_ref(random_ref(rng, {1, 32, 64}), DType::F16);
  const Tensor got = make_tensor(a, DType::F16, dev).matmul(make_tensor(b, DType::F16, dev));
  EXPECT_EQ(vk(dev).stats().coop_matmuls, 0u);
  const double u = std::ldexp(1.0, -24);
  WICK_EXPECT_CLOSE(got, round_ref(ref_matmul(a, b), DType::F16),
                    Tol{32 * u * 8 + 4 * u, 2 * std::ldexp(1.0, -11)});
}

}  // namespace
}  // namespace wick::testing

#endif  // WICK_WITH_VULKAN
