// Measurements behind the Vulkan defaults (not run by ctest: the tests are disabled). Run with
//   ./build/tests/wick_tests --gtest_also_run_disabled_tests --gtest_filter='VulkanBench.*'
// Each prints a small table; times are medians of several runs on a fresh private device.
#include <algorithm>
#include <chrono>

#include "gpu_vulkan_util.h"

namespace wick::testing {
namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The seed's metal_queue: x = x + y, `steps` times, then synchronize, then read back.
struct QueueRun {
  double record_ms, total_ms;
};
QueueRun queue_run(const Device& d, int64_t n, int steps) {
  Tensor x = Tensor::zeros(Shape{n}, DType::F32, d), y = Tensor::ones(Shape{n}, DType::F32, d);
  d.synchronize();
  const double t0 = now_ms();
  for (int i = 0; i < steps; i++) x = x + y;
  const double t1 = now_ms();
  d.synchronize();
  const float last = x.narrow(0, n - 1, 1).to_scalar<float>();
  const double t2 = now_ms();
  EXPECT_EQ(last, static_cast<float>(steps));
  return {t1 - t0, t2 - t0};
}

TEST(VulkanBench, DISABLED_CommitPolicy) {
  PoisonOff quiet;
  const int reps = 3;
  struct Case {
    int64_t n;
    int steps;
  };
  const Case cases[] = {{1 << 20, 100}, {1024, 5000}};
  std::printf("%-10s %-22s %12s %12s %14s\n", "per_buffer", "work", "record ms", "total ms",
              "record us/op");
  for (int64_t k : {0ll, 1ll, 10ll, 50ll, 200ll, 1000ll, 100000ll}) {
    Device d = private_device([&](vulkan::VulkanOptions& o) { o.queue.ops_per_buffer = k; });
    for (const Case& c : cases) {
      queue_run(d, c.n, std::min(c.steps, 20));  // warm up: kernels, pool
      std::vector<double> rec, tot;
      for (int r = 0; r < reps; r++) {
        const QueueRun q = queue_run(d, c.n, c.steps);
        rec.push_back(q.record_ms);
        tot.push_back(q.total_ms);
      }
      char work[64];
      std::snprintf(work, sizeof work, "%d x add %lld f32", c.steps, static_cast<long long>(c.n));
      std::printf("%-10lld %-22s %12.2f %12.2f %14.2f\n", static_cast<long long>(k), work,
                  median(rec), median(tot), 1000 * median(rec) / c.steps);
    }
  }
}

}  // namespace
}  // namespace wick::testing
