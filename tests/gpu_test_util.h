// Helpers for the tests of the GPU runtime on every GPU backend: a suite parameterised over the
// GPU devices under test, private devices with their own options and counters, and child
// processes of this test binary (for knobs and the disk cache).
//
//   class MySuite : public wick::testing::GpuDeviceTest {};
//   TEST_P(MySuite, Case) { Device d = private_device([](gpu::GpuOptions& o) { ... }); }
//   WICK_INSTANTIATE_GPU_DEVICES(MySuite);
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/gpu_device.h"
#include "harness.h"
#ifdef WICK_WITH_VULKAN
#include "vulkan/vk_device.h"
#endif
#ifdef WICK_WITH_CUDA
#include "cuda/cu_device.h"
#endif

namespace wick::testing {

// The GPU devices among test_device_names() (WICK_TEST_DEVICES): every spec but the CPU's.
inline std::vector<std::string> gpu_test_device_names() {
  std::vector<std::string> out;
  for (const std::string& spec : test_device_names())
    if (spec.rfind("cpu", 0) != 0) out.push_back(spec);
  return out;
}

// The GPU device behind `d`.
inline gpu::GpuDevice& gpu(const Device& d) {
  return dynamic_cast<gpu::GpuDevice&>(d.backend());
}

// A new device (its own id, queue, pools and counters) of `kind` on device `ordinal`, through the
// public API (Device::vulkan, Device::cuda).
inline Device open_new_device(DeviceKind kind, int ordinal) {
  switch (kind) {
    case DeviceKind::Vulkan:
      return Device::vulkan(ordinal);
    case DeviceKind::Cuda:
      return Device::cuda(ordinal);
    case DeviceKind::Cpu:
      break;
  }
  fail(ErrorKind::Internal, "open_new_device", device_kind_name(kind), " is no GPU");
}

// A new device of the kind and ordinal of `spec` with its own queue, pools and counters, its
// options derived from the knobs as the shared device's are, then edited by `tweak`.
inline Device private_device(const std::string& spec,
                             const std::function<void(gpu::GpuOptions&)>& tweak = {}) {
  const Device shared = Device::parse(spec);
  switch (shared.kind()) {
#ifdef WICK_WITH_VULKAN
    case DeviceKind::Vulkan: {
      const auto& dev = dynamic_cast<const vulkan::VulkanDevice&>(shared.backend());
      vulkan::VulkanOptions opts = vulkan::VulkanOptions::from_knobs(dev.caps());
      if (tweak) tweak(opts);
      return Device(std::make_shared<vulkan::VulkanDevice>(shared.ordinal(), &opts));
    }
#endif
#ifdef WICK_WITH_CUDA
    case DeviceKind::Cuda: {
      const auto& dev = dynamic_cast<const cuda::CudaDevice&>(shared.backend());
      cuda::CudaOptions opts = cuda::CudaOptions::from_knobs(dev.caps());
      if (tweak) tweak(opts);
      return Device(std::make_shared<cuda::CudaDevice>(shared.ordinal(), &opts));
    }
#endif
    default:
      break;
  }
  fail(ErrorKind::Internal, "private_device", "no private device for ", spec);
}

// Whether the device's driver compiles specialization constants into the module
// (gpu::KernelLanguage::constants_at_compile): CUDA does, as defines, so a new constant is a new
// module there; Vulkan applies them when it creates the pipeline.
inline bool constants_in_module(const Device& d) {
  return d.kind() == DeviceKind::Cuda;
}

// Modules a kernel cache compiled or loaded from disk.
inline uint64_t modules(const gpu::KernelCache::Stats& s) {
  return s.compiles + s.disk_hits;
}

// A suite over the GPU devices under test: device() is the process's shared device of the spec,
// private_device() a new one of its kind.
// A way qmatvec can run that the quantized tests sweep: its workgroup shape, subgroup sums or
// shared memory, the x rows from which it quantizes x itself (ACT_INLINE) or stages qact's rows
// (ACT_STAGE), and its tensor-core variant (MMA).
struct QMatVecPath {
  gpu::QMatVecShape shape;
  bool subgroups;
  int64_t fuse_rows, stage_rows;
  const char* name;
  int64_t mma_rows = 0;
  uint32_t mma_threads = 128;
  void apply(gpu::GpuOptions& o) const {
    o.qmatvec = shape;
    o.subgroups = subgroups;
    o.qmatvec_fuse_rows = fuse_rows;
    o.qmatvec_stage_rows = stage_rows;
    o.qmatvec_mma_rows = mma_rows;
    o.qmatvec_mma_threads = mma_threads;
  }
};

class GpuDeviceTest : public DeviceTest {
 protected:
  const std::string& spec() const { return GetParam(); }
  Device private_device(const std::function<void(gpu::GpuOptions&)>& tweak = {}) const {
    return testing::private_device(GetParam(), tweak);
  }
  Device private_device(const QMatVecPath& path) const {
    return testing::private_device(GetParam(), [&](gpu::GpuOptions& o) { path.apply(o); });
  }
};

// Instances are named "Gpu/Suite.Case/vulkan_0"; no failure is registered when no GPU is under
// test (WICK_TEST_DEVICES=cpu). scripts/test.sh runs them in its release and ASan passes alike.
#define WICK_INSTANTIATE_GPU_DEVICES(Suite) WICK_INSTANTIATE_GPU_DEVICES_AS(Gpu, Suite)
// For long sweeps of the kernels' numbers (every format, many shapes): named like the conformance
// suites ("Devices/Suite.Case/vulkan_0"), whose GPU instances the ASan pass leaves out.
#define WICK_INSTANTIATE_GPU_SWEEPS(Suite) WICK_INSTANTIATE_GPU_DEVICES_AS(Devices, Suite)
#define WICK_INSTANTIATE_GPU_DEVICES_AS(Prefix, Suite)                                    \
  INSTANTIATE_TEST_SUITE_P(Prefix, Suite,                                                 \
                           ::testing::ValuesIn(::wick::testing::gpu_test_device_names()), \
                           ::wick::testing::device_test_name);                            \
  GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Suite)

// Turns allocation poisoning off for a scope: poisoning records a fill per allocation, which
// would show up in exact barrier and commit counts.
class PoisonOff {
 public:
  PoisonOff() : prev_(backend::poison_allocations()) { backend::set_poison_allocations(false); }
  ~PoisonOff() { backend::set_poison_allocations(prev_); }

 private:
  bool prev_;
};

inline std::string self_exe() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

// Runs one (disabled) test of the binary `exe` in a child process with `env` ("A=1 B=2", or
// env's options such as "-u A") prepended, from folder `cwd`. Returns the "key=value" pairs the
// child printed on lines starting with "CHILD "; fails the calling test when the child fails.
inline std::map<std::string, std::string> run_child(const std::string& exe, const std::string& env,
                                                    const std::string& test,
                                                    const std::string& cwd = ".") {
  const std::string cmd = "cd '" + cwd + "' && env " + env + " '" + exe +
                          "' --gtest_also_run_disabled_tests --gtest_filter=" + test + " 2>&1";
  std::map<std::string, std::string> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "cannot run " << cmd;
    return out;
  }
  std::string all;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) all.append(buf, n);
  const int status = pclose(p);
  EXPECT_EQ(status, 0) << cmd << "\n" << all;
  std::istringstream lines(all);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("CHILD ", 0) != 0) continue;
    std::istringstream kv(line.substr(6));
    std::string item;
    while (kv >> item)
      if (auto eq = item.find('='); eq != std::string::npos)
        out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  EXPECT_FALSE(out.empty()) << "the child printed nothing:\n" << all;
  return out;
}

// run_child() of the GPU suite test `suite_test` ("GpuChild.DISABLED_X") on device `spec` only.
inline std::map<std::string, std::string> run_gpu_child(const std::string& exe,
                                                        const std::string& spec,
                                                        const std::string& env,
                                                        const std::string& suite_test,
                                                        const std::string& cwd = ".") {
  return run_child(exe, env + " WICK_TEST_DEVICES=" + spec, "*/" + suite_test + "/*", cwd);
}

// A number the child printed; fails (and returns 0) when it is missing.
inline uint64_t number(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  if (it == kv.end() || it->second.empty() ||
      it->second.find_first_not_of("0123456789") != std::string::npos) {
    ADD_FAILURE() << "the child printed no number '" << key << "'";
    return 0;
  }
  return std::stoull(it->second);
}

}  // namespace wick::testing
