// GPU random numbers: Philox4x32-10 on the device from a per-device seed. Each call draws the
// next `numel` counters, so results depend on the seed and the order of calls only.
#include "gpu/gpu_device.h"

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
  PushConstants pc;
  pc.u32(static_cast<uint32_t>(n));
  pc.u32(0);  // output offset
  pc.u32(static_cast<uint32_t>(seed));
  pc.u32(static_cast<uint32_t>(seed >> 32));
  pc.u32(static_cast<uint32_t>(base));
  pc.u32(static_cast<uint32_t>(base >> 32));
  const PushParam::Kind pk = param_kind(dt);
  pc.param({pk, p0});
  pc.param({pk, p1});
  const auto groups = grid(n);
  Buffer& out = buffer(dst);
  queue_->record([&](CommandQueue::Recorder& r) {
    r.dispatch(pipeline, {{&out, Access::Write}}, pc.words(), groups);
  });
}

void GpuDevice::rand_uniform(Storage& dst, double lo, double hi) {
  random(kUniform, dst, lo, hi);
}

void GpuDevice::rand_normal(Storage& dst, double mean, double std) {
  random(kNormal, dst, mean, std);
}

}  // namespace wick::gpu
