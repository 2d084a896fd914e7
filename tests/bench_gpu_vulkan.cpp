// Measurements behind the Vulkan defaults (not run by ctest: the tests are disabled). Run with
//   ./build/tests/wick_tests --gtest_also_run_disabled_tests --gtest_filter='VulkanBench.*'
// Each prints a small table; times are medians of several runs on a fresh private device.
#ifdef WICK_WITH_VULKAN

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
  struct Case {
    int64_t n;
    int steps;
  };
  // lavapipe runs kernels on the host's cores: fewer, shorter runs there.
  const bool cpu = vk(vk0()).caps().is_cpu;
  const int reps = cpu ? 3 : 7;
  const std::vector<Case> cases = cpu ? std::vector<Case>{{1 << 20, 50}, {1024, 2000}}
                                      : std::vector<Case>{{1 << 20, 500}, {1024, 5000}};
  struct Policy {
    int64_t ops;
    uint64_t bytes;
  };
  const Policy policies[] = {{1, 0},           {10, 0},         {25, 0},   {50, 0},
                             {100, 0},         {200, 0},        {1000, 0}, {50, 16 << 20},
                             {1000, 16 << 20}, {1000, 64 << 20}};
  std::printf("%-8s %-9s %-22s %12s %12s %14s %14s\n", "ops", "bytes", "work", "record ms",
              "total ms", "record us/op", "total us/op");
  for (const Policy& p : policies) {
    Device d = private_device([&](vulkan::VulkanOptions& o) {
      o.queue.ops_per_buffer = p.ops;
      o.queue.bytes_per_buffer = p.bytes;
    });
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
      std::printf("%-8lld %-9llu %-22s %12.2f %12.2f %14.2f %14.2f\n",
                  static_cast<long long>(p.ops), static_cast<unsigned long long>(p.bytes >> 20),
                  work, median(rec), median(tot), 1000 * median(rec) / c.steps,
                  1000 * median(tot) / c.steps);
    }
  }
}

// The device, what it offers, and what creating one costs (the first includes the instance).
TEST(VulkanBench, DISABLED_DeviceInfo) {
  const double t0 = now_ms();
  Device first = Device::vulkan(0);
  const double first_ms = now_ms() - t0;
  std::vector<double> later;
  for (int i = 0; i < 5; i++) later.push_back(vk(Device::vulkan(0)).creation_ms());
  const vulkan::DeviceCaps& c = vk(first).caps();
  std::printf(
      "device: %s | driver %s %s | api %u.%u | subgroup %u (arithmetic %d) | shared %u KiB | f64 "
      "%d "
      "i64 %d "
      "16-bit %d 8-bit %d "
      "push-descriptor %d | coop matrix: %s (f16 GEMM kernel: %s) | storage range %llu MiB | "
      "device-local %llu MiB\n",
      c.name.c_str(), c.driver_name.c_str(), c.driver_info.c_str(),
      VK_API_VERSION_MAJOR(c.api_version), VK_API_VERSION_MINOR(c.api_version), c.subgroup_size,
      c.subgroup_arithmetic, c.max_shared_memory >> 10, c.float64, c.int64, c.storage16, c.storage8,
      c.push_descriptor, c.cooperative_matrix.empty() ? "none" : c.cooperative_matrix.c_str(),
      c.coopmat_f16 ? "on" : "off",
      static_cast<unsigned long long>(c.max_storage_buffer_range >> 20),
      static_cast<unsigned long long>(c.device_local_bytes >> 20));
  std::printf("float controls: preserve NaN f32 %d f64 %d, preserve subnormals f32 %d f64 %d\n",
              c.preserve_nan32, c.preserve_nan64, c.preserve_denorm32, c.preserve_denorm64);
  std::printf("device creation: first %.2f ms (with the instance), later median %.2f ms\n",
              first_ms, median(later));
}

// What recording one op costs the host: x = x + y on tiny tensors, nothing committed meanwhile.
TEST(VulkanBench, DISABLED_RecordCost) {
  PoisonOff quiet;
  Device d = private_device([](vulkan::VulkanOptions& o) { o.queue.ops_per_buffer = 1 << 30; });
  Tensor x = Tensor::zeros(Shape{16}, DType::F32, d), y = Tensor::ones(Shape{16}, DType::F32, d);
  x = x + y;  // compile
  d.synchronize();
  std::vector<double> per_op;
  for (int r = 0; r < 5; r++) {
    const int n = 4000;
    const double t0 = now_ms();
    for (int i = 0; i < n; i++) x = x + y;
    per_op.push_back(1000 * (now_ms() - t0) / n);
    d.synchronize();
  }
  std::printf("record cost: %.2f us/op (median of 5 x 4000 adds; first %.2f)\n", median(per_op),
              per_op[0]);
}

}  // namespace
}  // namespace wick::testing

#endif  // WICK_WITH_VULKAN
