// The seed's mechanisms on every GPU backend (lavapipe in CI, Vulkan and CUDA on a GPU): device
// identity, lazy recording and the commit policy, hazard barriers, the buffer pool, the kernel
// caches (in memory and on disk, across processes), and race-free read-back. Barriers are counted
// by the command queue wherever it records one, whatever the driver makes of it (a pipeline
// barrier on Vulkan; nothing on CUDA, whose one stream already orders everything).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "gpu/disk_cache.h"
#include "gpu_test_util.h"
#ifdef WICK_WITH_CUDA
#include "cuda/cu_compiler.h"
#endif
#ifdef WICK_WITH_VULKAN
#include "vulkan/vk_driver.h"
#endif

namespace wick::testing {
namespace {

Tensor f32(const std::vector<float>& v, const Device& d) {
  return Tensor::from_vec(v, Shape{static_cast<int64_t>(v.size())}, d);
}

std::vector<float> iota_f32(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = start + static_cast<float>(i);
  return v;
}

// ---- 1. device --------------------------------------------------------------------------------

class GpuDeviceIdentity : public GpuDeviceTest {};

TEST_P(GpuDeviceIdentity, ClonesShareEverythingAndIdsDecideEquality) {
  const DeviceKind kind = device().kind();
  const int ordinal = device().ordinal();
  const std::string kind_name = device_kind_name(kind);
  EXPECT_EQ(spec().rfind(kind_name, 0), 0u) << spec() << " opened a " << kind_name << " device";
  Device a = open_new_device(kind, ordinal);
  Device clone = a;
  EXPECT_EQ(a, clone);
  EXPECT_EQ(&a.backend(), &clone.backend());
  Device b = open_new_device(kind, ordinal);  // same GPU, new device
  EXPECT_NE(a, b);
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(Device::parse(spec()), Device::parse(spec()));
  EXPECT_NE(a.name().find(kind_name + ":" + std::to_string(ordinal)), std::string::npos);
  EXPECT_EQ(a.kind(), kind);
  // Tensors of two devices do not mix, even on one GPU.
  Tensor x = f32({1, 2}, a), y = f32({3, 4}, b);
  expect_error([&] { x.add(y); }, ErrorKind::Device, {"add", "different devices"});
  // Creation compiles nothing (kernels come on first use) and is measured.
  EXPECT_EQ(gpu(b).stats().kernels.compiles + gpu(b).stats().kernels.disk_hits, 0u);
  EXPECT_GT(gpu(b).creation_ms(), 0.0);
  RecordProperty("creation_ms", std::to_string(gpu(b).creation_ms()));
}

TEST_P(GpuDeviceIdentity, BadOrdinalIsADeviceError) {
  const DeviceKind kind = device().kind();
  expect_error([&] { open_new_device(kind, 99); }, ErrorKind::Device,
               {device_kind_name(kind), "99"});
}

WICK_INSTANTIATE_GPU_DEVICES(GpuDeviceIdentity);

// ---- 2. commands ------------------------------------------------------------------------------

class GpuQueue : public GpuDeviceTest {};

TEST_P(GpuQueue, OpsRecordWithoutSubmittingUntilTheBufferIsFull) {
  PoisonOff quiet;
  Device d = private_device([](gpu::GpuOptions& o) { o.queue.ops_per_buffer = 5; });
  Tensor a = f32(iota_f32(64, 0), d), b = f32(iota_f32(64, 100), d);
  d.synchronize();
  const auto before = gpu(d).stats().queue;
  Tensor x = a;
  for (int i = 0; i < 4; i++) x = x + b;
  EXPECT_EQ(gpu(d).stats().queue.commits, before.commits) << "4 ops < 5: nothing submitted yet";
  x = x + b;
  EXPECT_EQ(gpu(d).stats().queue.commits, before.commits + 1);
  for (int i = 0; i < 7; i++) x = x + b;
  EXPECT_EQ(gpu(d).stats().queue.commits, before.commits + 2);
  const std::vector<float> got = x.to_vec<float>();
  for (size_t i = 0; i < 64; i++) EXPECT_EQ(got[i], static_cast<float>(i) + 12 * (100.0f + i));
}

TEST_P(GpuQueue, ZeroCommitsAtEveryOp) {
  PoisonOff quiet;
  Device d = private_device([](gpu::GpuOptions& o) { o.queue.ops_per_buffer = 0; });
  Tensor a = f32(iota_f32(16, 1), d);
  d.synchronize();
  const auto before = gpu(d).stats().queue;
  Tensor x = a;
  for (int i = 0; i < 6; i++) x = x * a;
  EXPECT_EQ(gpu(d).stats().queue.commits - before.commits, 6u);
  EXPECT_FLOAT_EQ(x.to_vec<float>()[1], 128.0f);  // 2^7
}

TEST_P(GpuQueue, InFlightListIsBounded) {
  PoisonOff quiet;
  Device d = private_device([](gpu::GpuOptions& o) {
    o.queue.ops_per_buffer = 1;
    o.queue.max_in_flight = 3;
  });
  Tensor a = f32(iota_f32(4096, 0), d);
  Tensor x = a;
  for (int i = 0; i < 40; i++) {
    x = x + a;
    EXPECT_LE(gpu(d).stats().queue.in_flight, 3u);
  }
  d.synchronize();
  EXPECT_EQ(gpu(d).stats().queue.in_flight, 0u);
  EXPECT_EQ(x.to_vec<float>()[7], 41.0f * 7);
}

// The child side of the knob tests: prints what the device made of the environment.
class GpuChild : public GpuDeviceTest {};

TEST_P(GpuChild, DISABLED_ReportOptions) {
  const gpu::GpuOptions& o = gpu(device()).gpu_options();
  std::printf(
      "CHILD ops_per_buffer=%lld fast_math=%d qmatvec_rows=%lld dequant_rows=%lld "
      "qmatvec_fuse_rows=%lld qmatvec_fuse_max_k=%lld qmatvec_fuse_wide=%d "
      "qmatvec_stage_rows=%lld qmatvec_mma_rows=%lld qmatvec_mma_threads=%u "
      "qmatvec_swiglu_rows=%lld int_dot=%d\n",
      static_cast<long long>(o.queue.ops_per_buffer), o.fast_math ? 1 : 0,
      static_cast<long long>(o.qmatvec.max_rows), static_cast<long long>(o.dequant_rows),
      static_cast<long long>(o.qmatvec_fuse_rows), static_cast<long long>(o.qmatvec_fuse_max_k),
      o.qmatvec_fuse_wide ? 1 : 0, static_cast<long long>(o.qmatvec_stage_rows),
      static_cast<long long>(o.qmatvec_mma_rows), o.qmatvec_mma_threads,
      static_cast<long long>(o.qmatvec_swiglu_rows), o.int_dot ? 1 : 0);
}

TEST_P(GpuQueue, ComputePerBufferKnobIsParsed) {
  const std::string exe = self_exe();
  const auto ops = [&](const std::string& env) {
    return run_gpu_child(exe, spec(), env, "GpuChild.DISABLED_ReportOptions")["ops_per_buffer"];
  };
  const std::string def = ops("-u WICK_COMPUTE_PER_BUFFER");
  EXPECT_FALSE(def.empty());
  EXPECT_NE(def, "0");
  EXPECT_EQ(ops("WICK_COMPUTE_PER_BUFFER=7"), "7");
  EXPECT_EQ(ops("WICK_COMPUTE_PER_BUFFER=0"), "0");
  EXPECT_EQ(ops("WICK_COMPUTE_PER_BUFFER=abc"), def) << "unparsable falls back to the default";
  EXPECT_EQ(ops("WICK_COMPUTE_PER_BUFFER=-3"), def);
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQueue);
WICK_INSTANTIATE_GPU_DEVICES(GpuChild);

// ---- 3. hazards -------------------------------------------------------------------------------

class GpuHazards : public GpuDeviceTest {
 protected:
  PoisonOff quiet;
  Device d = private_device([](gpu::GpuOptions& o) { o.queue.ops_per_buffer = 1000; });
  Tensor a = f32(iota_f32(256, 1), d), b = f32(iota_f32(256, 2), d);
  Tensor c = f32(iota_f32(256, 3), d), e = f32(iota_f32(256, 4), d);
  void SetUp() override { d.synchronize(); }  // uploads done; the next list starts clean
  uint64_t barriers() const { return gpu(d).stats().queue.barriers; }
};

TEST_P(GpuHazards, IndependentOpsGetNoBarrier) {
  const uint64_t before = barriers();
  Tensor x = a + b;
  Tensor y = c + e;
  EXPECT_EQ(barriers() - before, 0u);
  EXPECT_EQ(x.to_vec<float>()[10], 11.0f + 12.0f);
  EXPECT_EQ(y.to_vec<float>()[10], 13.0f + 14.0f);
}

TEST_P(GpuHazards, ReadAfterWriteGetsOneBarrier) {
  const uint64_t before = barriers();
  Tensor x = a + b;
  Tensor y = x * c;
  EXPECT_EQ(barriers() - before, 1u);
  EXPECT_EQ(y.to_vec<float>()[10], (11.0f + 12.0f) * 13.0f);
}

TEST_P(GpuHazards, OrderAcrossCommandBuffersNeedsNoBarrier) {
  Device d1 = private_device([](gpu::GpuOptions& o) { o.queue.ops_per_buffer = 1; });
  Tensor a1 = a.to_device(d1), b1 = b.to_device(d1), c1 = c.to_device(d1);
  d1.synchronize();
  const auto before = gpu(d1).stats().queue;
  Tensor x = a1 + b1;  // committed alone
  Tensor y = x * c1;   // next submission: starts after the previous one finished
  EXPECT_EQ(gpu(d1).stats().queue.barriers - before.barriers, 0u);
  EXPECT_EQ(gpu(d1).stats().queue.commits - before.commits, 2u);
  EXPECT_EQ(y.to_vec<float>()[10], (11.0f + 12.0f) * 13.0f);
}

TEST_P(GpuHazards, DroppedInputIsReusedOnlyAfterAWriteAfterReadBarrier) {
  // t is read by queued work, then dropped; the next op of its size gets t's buffer and writes
  // it. The queued read must still see the old values: the tracker puts a barrier before.
  Tensor t = a + b;
  const gpu::Buffer* t_buffer = &static_cast<const gpu::GpuStorage&>(*t.storage()).buffer();
  Tensor y = t * c;  // reads t (RAW on t: one barrier)
  t = Tensor();
  const uint64_t before = barriers();
  Tensor z = e - a;  // takes t's buffer
  EXPECT_EQ(&static_cast<const gpu::GpuStorage&>(*z.storage()).buffer(), t_buffer);
  EXPECT_EQ(barriers() - before, 1u) << "write after the queued read needs a barrier";
  EXPECT_EQ(y.to_vec<float>()[5], (6.0f + 7.0f) * 8.0f);
  EXPECT_EQ(z.to_vec<float>()[5], 9.0f - 6.0f);
}

// A test kernel in every GPU backend's language.
struct KernelSource {
  const char* glsl;
  const char* cuda;
};

// y[i] = 2 x[i] for i < n; x binds at 0, y at 1, n is the parameter block.
constexpr KernelSource kTimesTwo = {
    R"(#version 450
#include "include/common.glsl"
layout(push_constant) uniform P { uint n; } p;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };
void main() { uint i = global_index(); if (i < p.n) y[i] = 2.0 * x[i]; }
)",
    R"(#include "include/common.cuh"
struct Params { uint32_t n; };
extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  const uint32_t n = PARAMS(Params, args).n;
  const float* x = buffer_at<const float>(args, 0);
  float* y = buffer_at<float>(args, 1);
  const uint32_t i = global_index();
  if (i < n) y[i] = 2.0f * x[i];
}
)"};

constexpr KernelSource kBroken = {"#version 450\nvoid main() { undefined_fn(); }\n",
                                  "extern \"C\" __global__ void wick_main() { undefined_fn(); }\n"};

const char* in_language_of(const Device& d, const KernelSource& k) {
  switch (d.kind()) {
    case DeviceKind::Vulkan:
      return k.glsl;
    case DeviceKind::Cuda:
      return k.cuda;
    case DeviceKind::Cpu:
      break;
  }
  ADD_FAILURE() << "no test kernel in the language of " << d.name();
  return "";
}

TEST_P(GpuHazards, CustomKernelsDeclareInputsAndOutputs) {
  gpu::GpuDevice::CustomKernel k;
  k.name = "times_two";
  k.source = in_language_of(d, kTimesTwo);
  Tensor out = Tensor::zeros(Shape{256}, DType::F32, d);
  d.synchronize();
  const uint64_t before = barriers();
  Tensor x = a + b;  // written by the previous op
  const uint32_t n = 256;
  gpu(d).run_custom(k, {x.storage().get()}, {out.storage().get()}, {&n, 1}, {1, 1, 1});
  EXPECT_EQ(barriers() - before, 1u) << "the custom kernel reads x";
  Tensor y = out + c;  // reads the custom kernel's output
  EXPECT_EQ(barriers() - before, 2u);
  EXPECT_EQ(y.to_vec<float>()[3], 2.0f * (4.0f + 5.0f) + 6.0f);
  // Error paths: a kernel that does not compile, too many push constants.
  gpu::GpuDevice::CustomKernel broken = k;
  broken.name = "broken_kernel";
  broken.source = in_language_of(d, kBroken);
  expect_error(
      [&] {
        gpu(d).run_custom(broken, {x.storage().get()}, {out.storage().get()}, {&n, 1}, {1, 1, 1});
      },
      ErrorKind::Internal, {"broken_kernel", "undefined_fn"});
  const std::vector<uint32_t> too_many(40, 0);
  expect_error(
      [&] {
        gpu(d).run_custom(k, {x.storage().get()}, {out.storage().get()}, too_many, {1, 1, 1});
      },
      ErrorKind::Unsupported, {"times_two", "push constants"});
}

WICK_INSTANTIATE_GPU_DEVICES(GpuHazards);

#ifdef WICK_WITH_CUDA
// The CUDA test kernels compile (NVRTC needs no GPU), and the broken one fails as the device test
// expects: so CI checks them where no CUDA device runs them.
TEST(GpuCustomKernelSources, TheCudaTwinsCompileWithNvrtc) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const gpu::SourceTable includes(gpu::cuda_kernel_files());
  gpu::CompileRequest req;
  req.name = "times_two";
  req.source = kTimesTwo.cuda;
  req.defines = {{"WG_SIZE", "256"}};
  req.includes = &includes;
  EXPECT_FALSE(cuda::compile_cuda(req, 9, 0).empty());
  req.name = "broken_kernel";
  req.source = kBroken.cuda;
  expect_error([&] { cuda::compile_cuda(req, 9, 0); }, ErrorKind::Internal,
               {"broken_kernel", "undefined_fn"});
}
#endif

// ---- 4. buffer pool ---------------------------------------------------------------------------

class GpuPool : public GpuDeviceTest {};

TEST_P(GpuPool, TwoByteScalarGetsTwoBytes) {
  Device d = private_device();
  Tensor s = Tensor::scalar(f16(1.5f), d);
  const gpu::Buffer& buf = static_cast<const gpu::GpuStorage&>(*s.storage()).buffer();
  EXPECT_GE(buf.capacity, 2u);
  EXPECT_GE(buf.alloc.size, 2u);
  EXPECT_EQ(s.to_scalar<float>(), 1.5f);
  Tensor b = Tensor::scalar(bf16(-2.25f), d);
  EXPECT_EQ((b + b).to_scalar<float>(), -4.5f);
}

TEST_P(GpuPool, MemoryStaysBoundedOver10000Iterations) {
  PoisonOff quiet;
  Device d = private_device();
  Tensor y = f32(iota_f32(256, 1), d);
  Tensor x = f32(std::vector<float>(256, 0.0f), d);
  for (int i = 0; i < 10000; i++) {
    x = x + y;
    if (i % 2000 == 1999) {
      EXPECT_EQ(x.to_vec<float>()[3], 4.0f * (i + 1));
    }
  }
  d.synchronize();
  const auto s = gpu(d).stats().device_pool;
  // Three live 1 KiB tensors and a few in flight: nothing grows with the iteration count.
  EXPECT_LE(s.peak_bytes, 64u << 10);
  EXPECT_LE(s.allocations, 16u);
  EXPECT_GE(s.reuses, 9990u);
}

TEST_P(GpuPool, LimitTrimsUnusedMemory) {
  PoisonOff quiet;
  const uint64_t limit = 64 << 10;
  Device d = private_device([&](gpu::GpuOptions& o) { o.pool_limit = limit; });
  for (int i = 1; i <= 40; i++)
    Tensor::zeros(Shape{i * 1024}, DType::F32, d);  // distinct sizes, dropped
  d.synchronize();
  const auto s = gpu(d).stats().device_pool;
  EXPECT_LE(s.free_bytes, limit);
  EXPECT_GT(s.frees, 0u);
  EXPECT_EQ(s.in_use_bytes, 0u);
}

// Buffers of mixed sizes made and dropped in random order under a small pool limit, so that the
// driver frees them (on Vulkan, buffers of up to 4 MiB share memory blocks: each takes a range, a
// freed range joins its neighbours, an empty block goes back): every live tensor keeps its own
// values, so no two buffers share a byte, and host-visible staging reads back what was written.
TEST_P(GpuPool, BuffersOfMixedSizesNeverShareMemory) {
  PoisonOff quiet;
  Device d = private_device([](gpu::GpuOptions& o) { o.pool_limit = 256 << 10; });
  std::mt19937 rng(20261206);
  struct Live {
    Tensor t;
    float base;
    int64_t n;
  };
  std::vector<Live> live;
  const auto check_all = [&] {
    for (const Live& l : live) {
      const std::vector<float> v = l.t.to_vec<float>();
      ASSERT_EQ(static_cast<int64_t>(v.size()), l.n);
      for (int64_t i = 0; i < l.n; i += std::max<int64_t>(1, l.n / 64))
        ASSERT_EQ(v[static_cast<size_t>(i)], l.base + static_cast<float>(i % 1000))
            << "tensor of " << l.n << " at " << i;
      ASSERT_EQ(v.back(), l.base + static_cast<float>((l.n - 1) % 1000));
    }
  };
  for (int round = 0; round < 300; round++) {
    // Sizes from 1 element to 1.5 M (6 MiB: past the shared blocks' 4 MiB).
    const int64_t n = std::uniform_int_distribution<int>(0, 9)(rng) == 0
                          ? std::uniform_int_distribution<int64_t>(1 << 20, 3 << 19)(rng)
                          : std::uniform_int_distribution<int64_t>(1, 40000)(rng);
    const float base = static_cast<float>(round) * 1000.0f;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) v[static_cast<size_t>(i)] = base + static_cast<float>(i % 1000);
    live.push_back({f32(v, d), base, n});
    // The tensor through a kernel too: its output is a new buffer written on the device.
    if (round % 3 == 0) live.push_back({live.back().t + 0.0f, base, n});
    while (live.size() > 12)
      live.erase(live.begin() + std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng));
    if (round % 25 == 24) check_all();
  }
  check_all();
  d.synchronize();
  EXPECT_GT(gpu(d).stats().device_pool.frees, 0u) << "the limit should have freed buffers";
}

TEST_P(GpuPool, StagingIsNotReusedBeforeItsCopyRan) {
  // Uploads write host-visible staging buffers (mapped on Vulkan, pinned host memory on CUDA)
  // directly: a staging buffer whose copy is still queued must not be handed to the next upload,
  // or the first tensor gets the second's data.
  Device d = private_device([](gpu::GpuOptions& o) { o.queue.ops_per_buffer = 1000; });
  std::vector<Tensor> ts;
  for (int i = 0; i < 20; i++) ts.push_back(f32(std::vector<float>(300, static_cast<float>(i)), d));
  for (int i = 0; i < 20; i++) EXPECT_EQ(ts[i].to_vec<float>()[299], static_cast<float>(i)) << i;
}

WICK_INSTANTIATE_GPU_DEVICES(GpuPool);

// ---- 5. kernels -------------------------------------------------------------------------------

class GpuKernels : public GpuDeviceTest {};

TEST_P(GpuKernels, ModulesPerSourceAndOptionsPipelinesPerConstants) {
  PoisonOff quiet;
  Device d = private_device();
  Tensor a = f32(iota_f32(8, 1), d);
  const auto s0 = gpu(d).stats().kernels;
  Tensor x = a + a;
  Tensor y = a + a;  // cached pipeline
  const auto s1 = gpu(d).stats().kernels;
  EXPECT_EQ(s1.pipelines - s0.pipelines, 1u);
  EXPECT_EQ(modules(s1) - modules(s0), 1u);
  Tensor z = a - a;  // same source and options (binary, f32), another op constant
  const auto s2 = gpu(d).stats().kernels;
  EXPECT_EQ(s2.pipelines - s1.pipelines, 1u);
  EXPECT_EQ(modules(s2) - modules(s1), constants_in_module(d) ? 1u : 0u);
  Tensor h = a.to_dtype(DType::F16);
  Tensor w = h + h;  // new options (f16): new module
  const auto s3 = gpu(d).stats().kernels;
  EXPECT_EQ(modules(s3) - modules(s2), 2u);  // cast + binary f16
  EXPECT_EQ(w.to_vec<float>()[2], 6.0f);
}

// The child side of the disk-cache test: a few ops on a fresh device, then its kernel counters.
TEST_P(GpuChild, DISABLED_KernelCacheRun) {
  Device d = device();  // the child's first use of it
  Tensor a = Tensor::arange(0, 64, 1, DType::F32, d);
  Tensor h = (a * 0.01).exp().to_dtype(DType::F16);
  Tensor y = a.gt(10.0).where_cond(h, h.neg());
  EXPECT_EQ(y.to_vec<float>()[0], -1.0f);
  const auto s = gpu(d).stats().kernels;
  std::printf(
      "CHILD compiles=%llu disk_hits=%llu pipelines=%llu compile_ms=%.2f pipeline_ms=%.2f\n",
      static_cast<unsigned long long>(s.compiles), static_cast<unsigned long long>(s.disk_hits),
      static_cast<unsigned long long>(s.pipelines), s.compile_ms, s.pipeline_ms);
}

// The first bytes of a compiled module of `kind`: SPIR-V's magic number (little-endian) for
// Vulkan, an ELF image (a cubin) for CUDA.
std::string module_magic(DeviceKind kind) {
  if (kind == DeviceKind::Cuda)
    return "\x7f"
           "ELF";
  return std::string("\x03\x02\x23\x07", 4);
}

// How many entries of the disk cache in `folder` hold a payload starting with `magic` (the
// layout of gpu/disk_cache.cpp: magic, key length, key, payload length, payload, hash).
size_t cached_payloads_starting_with(const std::filesystem::path& folder,
                                     const std::string& magic) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::ifstream f(entry.path(), std::ios::binary);
    const std::string in((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    uint64_t key_len = 0, len = 0;
    if (in.size() < 16 || in.compare(0, 8, "WICKKC2\n") != 0) continue;
    std::memcpy(&key_len, in.data() + 8, 8);
    if (in.size() < 24 + key_len) continue;
    std::memcpy(&len, in.data() + 16 + key_len, 8);
    if (len >= magic.size() && in.size() >= 24 + key_len + magic.size() &&
        in.compare(24 + key_len, magic.size(), magic) == 0)
      n++;
  }
  return n;
}

TEST_P(GpuKernels, DiskCacheHitsInANewProcessWhereverTheBinaryIs) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() /
                       (std::string("wick_gpu_cache_") + device_kind_name(device().kind()) + "_" +
                        std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp / "elsewhere");
  const std::string cache = (tmp / "cache").string(), env = "WICK_KERNEL_CACHE=" + cache;
  const std::string child = "GpuChild.DISABLED_KernelCacheRun";
  auto cold = run_gpu_child(self_exe(), spec(), env, child);
  EXPECT_GT(number(cold, "compiles"), 0u);
  EXPECT_EQ(number(cold, "disk_hits"), 0u);
  // Every module compiled went to disk in the driver's own format (cubins on CUDA).
  EXPECT_EQ(cached_payloads_starting_with(cache, module_magic(device().kind())),
            number(cold, "compiles"));
  // The same binary copied to another folder, run from there: every module comes from disk.
  const fs::path copy = tmp / "elsewhere" / "wick_tests_copy";
  fs::copy_file(self_exe(), copy);
  auto warm = run_gpu_child(copy.string(), spec(), env, child, (tmp / "elsewhere").string());
  EXPECT_EQ(number(warm, "compiles"), 0u);
  EXPECT_EQ(number(warm, "disk_hits"), number(cold, "compiles"));
  // Fast math is part of the key: turning it off compiles again.
  auto precise = run_gpu_child(self_exe(), spec(), env + " WICK_FAST_MATH=0", child);
  EXPECT_GT(number(precise, "compiles"), 0u);
  // Off means off: nothing is written.
  const fs::path off_dir = tmp / "unused";
  run_gpu_child(
      self_exe(), spec(),
      "WICK_KERNEL_CACHE=off XDG_CACHE_HOME=" + off_dir.string() + " HOME=" + off_dir.string(),
      child);
  EXPECT_FALSE(fs::exists(off_dir / "wick"));  // (the driver may keep its own cache there)
  std::printf("first use of %s kernels: cold %s ms compile + %s ms pipelines, warm %s ms + %s ms\n",
              cold["compiles"].c_str(), cold["compile_ms"].c_str(), cold["pipeline_ms"].c_str(),
              warm["compile_ms"].c_str(), warm["pipeline_ms"].c_str());
  fs::remove_all(tmp);
}

// Every entry of the disk cache in `folder` (the layout of gpu/disk_cache.cpp: magic, key length,
// key, payload length, payload, hash): its key.
std::vector<std::string> cached_keys(const std::filesystem::path& folder) {
  std::vector<std::string> keys;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::ifstream f(entry.path(), std::ios::binary);
    const std::string in((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    uint64_t key_len = 0;
    if (in.size() < 16 || in.compare(0, 8, "WICKKC2\n") != 0) continue;
    std::memcpy(&key_len, in.data() + 8, 8);
    if (in.size() >= 16 + key_len) keys.push_back(in.substr(16, key_len));
  }
  return keys;
}

// A cache entry that is well formed (right key, right checksum) but holds a module the driver
// cannot use — garbage, or a truncated module — is compiled again from source and replaced: the
// ops give the right answers, in this process and the next (before, such an entry made every
// later run fail, or crashed lavapipe). Another entry's payload spliced in with its own checksum
// is a miss already (DiskCacheTest.AnotherEntrysPayloadUnderTheRightKeyIsAMiss).
TEST_P(GpuKernels, BadModulesInTheDiskCacheAreCompiledAgain) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       (std::string("wick_gpu_bad_cache_") + device_kind_name(device().kind()) +
                        "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto with_cache = [&](gpu::GpuOptions& o) { o.kernel_cache = dir.string(); };
  const std::vector<float> xs = {0.5f, -1.5f, 2.0f, 3.25f};
  auto run_ops = [&](const Device& d) {
    const Tensor x = Tensor::from_vec(xs, {4}, d);
    return std::make_pair(x.exp().add(x).to_vec<float>(), x.sum_all().to_vec<float>()[0]);
  };
  const auto want = run_ops(private_device(with_cache));
  // Every module entry (not the driver's own pipeline-cache blob) rewritten under its key:
  // garbage, or the first half of the real module.
  gpu::DiskCache disk(dir.string());
  size_t rewritten = 0;
  for (const std::string& key : cached_keys(dir)) {
    if (key.rfind("vk-pipeline-cache", 0) == 0) continue;
    std::vector<uint8_t> bad(64, 0xab);
    if (rewritten % 2 == 1) {
      bad = *disk.load(key);
      bad.resize(bad.size() / 2);
    }
    ASSERT_TRUE(disk.store(key, bad));
    rewritten++;
  }
  ASSERT_GE(rewritten, 2u);
  const Device d = private_device(with_cache);
  EXPECT_EQ(run_ops(d), want);
  EXPECT_GT(gpu(d).stats().kernels.disk_rejects, 0u);
  // Replaced on disk: a new device finds good entries.
  const Device next = private_device(with_cache);
  EXPECT_EQ(run_ops(next), want);
  EXPECT_EQ(gpu(next).stats().kernels.compiles, 0u);
  fs::remove_all(dir);
}

// The check a disk-cache module passes before use (Driver::validate_module, no longer SPIRV-Tools'
// full validator on Vulkan): every module the ops above cached passes it, and every cut of one at
// a word boundary, and a wrong entry point name, fails it.
TEST_P(GpuKernels, EveryCutOfACachedModuleIsRefused) {
#ifndef WICK_WITH_VULKAN
  GTEST_SKIP() << "the SPIR-V check (CUDA: cubins)";
#else
  if (device().kind() != DeviceKind::Vulkan) GTEST_SKIP() << "the SPIR-V check (CUDA: cubins)";
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("wick_gpu_module_cuts_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const Device d = private_device([&](gpu::GpuOptions& o) { o.kernel_cache = dir.string(); });
  const Tensor x = Tensor::from_vec(std::vector<float>{0.5f, -1.5f, 2.0f, 3.25f}, {4}, d);
  ASSERT_EQ(x.exp().add(x).sum_all().to_vec<float>().size(), 1u);
  vulkan::VkDriver drv(device().ordinal());
  gpu::DiskCache disk(dir.string());
  size_t modules = 0;
  for (const std::string& key : cached_keys(dir)) {
    if (key.rfind("vk-pipeline-cache", 0) == 0) continue;
    const std::vector<uint8_t> module = *disk.load(key);
    ASSERT_TRUE(drv.validate_module(module, "main")) << key;
    EXPECT_FALSE(drv.validate_module(module, "mainx"));
    for (size_t cut = 0; cut < module.size(); cut += 4)
      ASSERT_FALSE(
          drv.validate_module({module.begin(), module.begin() + static_cast<long>(cut)}, "main"))
          << "a module cut to " << cut << " of " << module.size() << " bytes passed";
    modules++;
  }
  EXPECT_GE(modules, 2u);
  fs::remove_all(dir);
#endif
}

WICK_INSTANTIATE_GPU_DEVICES(GpuKernels);

// ---- 6. read-back -----------------------------------------------------------------------------

class GpuReadBack : public GpuDeviceTest {};

TEST_P(GpuReadBack, ConcurrentReadBacksNeverSeeStaleData) {
  // The seed's PR #3595 race: 8 threads, each writing and reading back its own tensors while the
  // others submit. A read-back that returns before its own copy ran shows stale values.
  Device d = device();
  constexpr int kThreads = 8, kIters = 400;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; i++) {
        const float base = static_cast<float>(t * 100000 + i * 10);
        Tensor x = f32(iota_f32(64, base), d);
        Tensor y = (x + x).narrow(0, 3, 50);  // a strided read-back of a computed tensor
        const std::vector<float> got = y.to_vec<float>();
        for (size_t k = 0; k < got.size(); k++)
          if (got[k] != 2 * (base + 3 + static_cast<float>(k))) {
            bad++;
            break;
          }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_P(GpuReadBack, CopiesOnlyTheViewsElements) {
  PoisonOff quiet;
  Device d = private_device();
  Tensor big = f32(iota_f32(1 << 16, 0), d);
  Tensor one = big.narrow(0, 12345, 1);
  EXPECT_EQ(one.to_scalar<float>(), 12345.0f);
  EXPECT_LE(gpu(d).stats().host_pool.peak_bytes, (1u << 18) + 64) << "staging for the upload only";
  const auto before = gpu(d).stats().host_pool.allocations;
  Tensor col = big.reshape({256, 256}).narrow(1, 7, 1);  // strided: every 256th element
  const std::vector<float> got = col.to_vec<float>();
  for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(got[i], 256.0f * i + 7);
  // The 1 KiB gather fits in a staging buffer of its own size, not the 256 KiB storage.
  const auto s = gpu(d).stats().host_pool;
  EXPECT_LE(s.allocations - before, 1u);
}

WICK_INSTANTIATE_GPU_DEVICES(GpuReadBack);

}  // namespace
}  // namespace wick::testing
