// The Vulkan quantized matmul's mechanisms (its numbers are checked on every device by the
// QMatMulOnDevices suite in test_quantized.cpp): one dispatch per forward with no host round
// trip, inputs and outputs declared to the hazard tracker, one module per format with the row
// count as a specialization constant, and the GPUs' kernel choices (tiled kernel, reduction
// across subgroups or without them), which lavapipe's own defaults do not take.
#include <cmath>

#include "gpu_vulkan_util.h"
#include "quantized_ref.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

using vulkan::VulkanOptions;

QTensor random_weight(Rng& rng, int64_t n, int64_t k, QuantType t) {
  return quantize(make_tensor(random_ref(rng, {n, k}), DType::F32, Device::cpu()), t);
}

// max |got - want| / max |want| against the CPU's dequantized weight in f64.
double rel_error(const Tensor& y, const QTensor& w, const Tensor& x) {
  const std::vector<float> wf = dequantize(w).to_vec<float>();
  const std::vector<float> xf = x.to_vec<float>(), got = y.to_vec<float>();
  const int64_t n = w.shape()[0], k = w.shape()[1], m = x.numel() / k;
  double diff = 0, scale = 0;
  for (int64_t r = 0; r < m; r++)
    for (int64_t o = 0; o < n; o++) {
      double want = 0;
      for (int64_t i = 0; i < k; i++)
        want += static_cast<double>(wf[static_cast<size_t>(o * k + i)]) *
                xf[static_cast<size_t>(r * k + i)];
      diff = std::max(diff, std::fabs(got[static_cast<size_t>(r * n + o)] - want));
      scale = std::max(scale, std::fabs(want));
    }
  return diff / scale;
}

struct VulkanQMatMul : ::testing::Test {
  PoisonOff quiet;  // exact dispatch and barrier counts
  Device d = private_device([](VulkanOptions& o) { o.queue.ops_per_buffer = 1000; });
  Rng rng;
  vulkan::VulkanDevice::Stats stats() const { return vk(d).stats(); }
};

TEST_F(VulkanQMatMul, ForwardIsOneDispatchWithNoHostRoundTrip) {
  SCOPED_TRACE(rng.seed());
  const QTensor w = random_weight(rng, 96, 256, QuantType::Q4_K);
  const QMatMul mm(w, d);
  const Tensor x = make_tensor(random_ref(rng, {3, 256}), DType::F32, d);
  d.synchronize();
  const auto before = stats().queue;
  const Tensor y = mm.forward(x);
  const auto after = stats().queue;
  EXPECT_EQ(after.dispatches - before.dispatches, 1u);
  EXPECT_EQ(after.commits - before.commits, 0u) << "nothing was read back or waited for";
  EXPECT_EQ(y.device(), d);
  EXPECT_LT(rel_error(y, w, x), 1e-5);
}

TEST_F(VulkanQMatMul, DeclaresItsInputsAndOutputToTheHazardTracker) {
  SCOPED_TRACE(rng.seed());
  const QTensor w = random_weight(rng, 40, 64, QuantType::Q8_0);
  const QMatMul mm(w, d);
  const Tensor a = make_tensor(random_ref(rng, {2, 64}), DType::F32, d);
  const Tensor b = make_tensor(random_ref(rng, {2, 64}), DType::F32, d);
  const Tensor c = Tensor::ones({2, 40}, DType::F32, d);
  d.synchronize();  // the uploads are done; the next list starts clean
  const uint64_t before = stats().queue.barriers;
  const Tensor x = a + b;
  const Tensor y = mm.forward(x);  // reads x: one barrier
  EXPECT_EQ(stats().queue.barriers - before, 1u);
  const Tensor z = y + c;  // reads y: another
  EXPECT_EQ(stats().queue.barriers - before, 2u);
  const Tensor unrelated = mm.forward(a);  // reads only what no queued op writes: none
  EXPECT_EQ(stats().queue.barriers - before, 2u);
  EXPECT_LT(rel_error(z - c, w, x), 1e-5);
  EXPECT_LT(rel_error(unrelated, w, a), 1e-5);
}

TEST_F(VulkanQMatMul, OneModulePerFormatAndDtypeOnePipelinePerRowCount) {
  const QTensor w4 = random_weight(rng, 16, 64, QuantType::Q4_0);
  const QTensor w8 = random_weight(rng, 16, 64, QuantType::Q8_0);
  const QMatMul m4(w4, d), m8(w8, d);
  auto x = [&](int64_t m) { return Tensor::ones({m, 64}, DType::F32, d); };
  const auto k0 = stats().kernels;
  m4.forward(x(1));
  const auto k1 = stats().kernels;
  m4.forward(x(2));  // same module (qmatvec, q4_0, f32), another specialization
  const auto k2 = stats().kernels;
  m4.forward(x(1));  // cached
  m8.forward(x(1));  // another format: another module
  const auto k3 = stats().kernels;
  EXPECT_EQ(k1.compiles + k1.disk_hits - k0.compiles - k0.disk_hits, 1u);
  EXPECT_EQ(k2.compiles + k2.disk_hits, k1.compiles + k1.disk_hits);
  EXPECT_EQ(k2.pipelines - k1.pipelines, 1u);
  EXPECT_EQ(k3.compiles + k3.disk_hits - k2.compiles - k2.disk_hits, 1u);
  EXPECT_EQ(k3.pipelines - k2.pipelines, 1u);
}

TEST(VulkanQMatMulShapes, TheGpuChoicesRunHereToo) {
  // lavapipe's defaults (8 threads = one of its subgroups, 8 rows, qmatvec for every m) are not a
  // GPU's: run every format with the GPU's (32 threads = 4 lavapipe subgroups, 2 rows, the tiled
  // kernel beyond 8 x rows), with subgroup arithmetic and with the shared-memory reduction of
  // devices that lack it.
  for (bool subgroups : {true, false}) {
    SCOPED_TRACE(subgroups ? "subgroups" : "shared memory");
    const Device gpu_like = private_device([&](VulkanOptions& o) {
      o.qmatvec = {32, 2, 8};
      o.subgroups = subgroups;
    });
    check_every_format(gpu_like, {{1, 67}, {5, 67}, {9, 67}, {33, 131}, {128, 131}});
    if (::testing::Test::HasFatalFailure()) return;
    check_layouts_and_dtypes(gpu_like);  // 40 rows: the tiled kernel's strided and f16 x
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(VulkanQMatMulShapes, QMatVecRowsKnobIsParsed) {
  const std::string exe = self_exe();
  const auto rows = [&](const std::string& env) {
    return run_child(exe, env, "VulkanChild.DISABLED_ReportOptions")["qmatvec_rows"];
  };
  const std::string def = rows("-u WICK_QMATVEC_ROWS");
  EXPECT_EQ(def, std::to_string(vulkan::default_qmatvec_shape(vk(vk0()).caps()).max_rows));
  EXPECT_EQ(rows("WICK_QMATVEC_ROWS=3"), "3");
  EXPECT_EQ(rows("WICK_QMATVEC_ROWS=0"), "0");
  EXPECT_EQ(rows("WICK_QMATVEC_ROWS=-2"), def) << "negative falls back to the default";
  EXPECT_EQ(rows("WICK_QMATVEC_ROWS=abc"), def);
}

TEST(VulkanQMatMulShapes, OneRowOnTheTiledKernel) {
  // max_rows = 0 sends every x to the tiled kernel: one row of a 32-row tile.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device tiled = private_device([](VulkanOptions& o) { o.qmatvec.max_rows = 0; });
  const QTensor w = random_weight(rng, 50, 256, QuantType::Q5_K);
  const Tensor x = make_tensor(random_ref(rng, {1, 256}), DType::F32, tiled);
  EXPECT_LT(rel_error(QMatMul(w, tiled).forward(x), w, x), 1e-5);
}

}  // namespace
}  // namespace wick::testing
