// GPU random numbers: Philox4x32-10 on the device from a per-device seed. Each call draws the
// next `numel` counters, so results depend on the seed and the order of calls only.
#include "gpu/gpu_device.h"
#include "gpu/kernel_params.h"

namespace wick::gpu {

using backend::Storage;

namespace {

constexpr uint32_t kUniform = 0, kNormal = 1;  // MODE in rand.comp

}  // namespace

void GpuDevice::set_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  rng_seed_ = seed;
  rng_counter_ = 0;
}

void GpuDevice::random(uint32_t mode, Storage& dst, double p0, double p1) {
  const DType dt = dst.dtype();
  require(dt, mode == kUniform ? "rand" : "randn");
  const uint64_t n = dst.numel();
  if (n > 0xffffffffull)
    fail(ErrorKind::Unsupported, mode == kUniform ? "rand" : "randn", n,
         " elements do not fit the kernels' 32-bit indices");
  uint64_t seed, base;
  {
    std::lock_guard<std::mutex> lock(rng_mu_);
    seed = rng_seed_;
    base = rng_counter_;
    rng_counter_ += n;
  }
  const Pipeline& pipeline = op_kernel(KernelFamily::Rand, "rand", mode, dt, true);
  auto fill = [&](auto& pc) {
    using P = decltype(pc.p0);
    pc.numel = static_cast<uint32_t>(n);
    pc.out_offset = 0;
    pc.seed[0] = static_cast<uint32_t>(seed);
    pc.seed[1] = static_cast<uint32_t>(seed >> 32);
    pc.base[0] = static_cast<uint32_t>(base);
    pc.base[1] = static_cast<uint32_t>(base >> 32);
    pc.p0 = static_cast<P>(p0);
    pc.p1 = static_cast<P>(p1);
  };
  RandParams<double> wide{};
  RandParams<float> narrow{};
  const bool f64 = param_kind(dt) == PushParam::F64;
  f64 ? fill(wide) : fill(narrow);
  const std::span<const uint32_t> words = f64 ? param_words(wide) : param_words(narrow);
  const auto groups = grid(n);
  Buffer& out = buffer(dst);
  queue_->record([&](CommandQueue::Recorder& r) {
    r.dispatch(pipeline, {{&out, Access::Write}}, words, groups);
  });
}

void GpuDevice::rand_uniform(Storage& dst, double lo, double hi) {
  random(kUniform, dst, lo, hi);
}

void GpuDevice::rand_normal(Storage& dst, double mean, double std) {
  random(kNormal, dst, mean, std);
}

}  // namespace wick::gpu
