// The Vulkan device: creation, options, custom kernels, statistics, and the registry entry points.
#include "vulkan/vk_device.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "wick/config.h"

namespace wick::vulkan {

using backend::Storage;

std::shared_ptr<backend::BackendDevice> open_vulkan_device(int ordinal) {
  return std::make_shared<VulkanDevice>(ordinal);
}

int vulkan_device_count() {
  return physical_device_count();
}

// Measured defaults (docs/architecture.md, "Commit policy"): on a GPU (H200) 25-100 ops per
// command buffer are equally good and 50 is the seed's; on lavapipe, whose "GPU" is the host's
// own cores, committing sooner lets its threads run while the host records. Committing on bytes
// did not help on either (a 16 MiB limit cost 25% on 1M-element adds on the H200), so it is off.
static int64_t default_ops_per_buffer(const DeviceCaps& caps) {
  return caps.is_cpu ? 20 : 50;
}
static uint64_t default_bytes_per_buffer(const DeviceCaps&) {
  return 0;
}

VulkanOptions VulkanOptions::from_knobs(const DeviceCaps& caps) {
  const Knobs& k = knobs();
  VulkanOptions o;
  o.queue.ops_per_buffer =
      k.compute_per_buffer >= 0 ? k.compute_per_buffer : default_ops_per_buffer(caps);
  o.queue.bytes_per_buffer = default_bytes_per_buffer(caps);
  // Unused memory kept for reuse: an eighth of the device memory, at most 1 GiB.
  o.pool_limit =
      k.pool_limit ? k.pool_limit : std::min<uint64_t>(caps.device_local_bytes / 8, 1ull << 30);
  o.kernel_cache = gpu::DiskCache::folder_for(k.kernel_cache);
  o.fast_math = k.fast_math;
  o.qmatvec = default_qmatvec_shape(caps);
  if (k.qmatvec_rows >= 0) o.qmatvec.max_rows = k.qmatvec_rows;
  return o;
}

VulkanDevice::VulkanDevice(int ordinal, const VulkanOptions* options)
    : ordinal_(ordinal),
      created_at_(std::chrono::steady_clock::now()),
      driver_(std::make_unique<VkDriver>(ordinal)),
      options_(options ? *options : VulkanOptions::from_knobs(driver_->caps())),
      sources_(gpu::glsl_kernel_files()) {
  gpu::DiskCache disk(options_.kernel_cache);
  driver_->load_pipeline_cache(disk);
  kernels_ = std::make_unique<gpu::KernelCache>(*driver_, sources_, disk, options_.fast_math);
  gpu::PoolConfig pool;
  pool.limit = options_.pool_limit ? options_.pool_limit : (256ull << 20);
  device_pool_ = std::make_unique<gpu::BufferPool>(*driver_, pool);
  pool.kind = gpu::MemoryKind::HostVisible;
  host_pool_ = std::make_unique<gpu::BufferPool>(*driver_, pool);
  queue_ = std::make_unique<gpu::CommandQueue>(*driver_, options_.queue);
  error_flag_ = host_pool_->acquire(16);
  std::memset(error_flag_->alloc.mapped, 0, 16);
  creation_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - created_at_)
          .count();
}

VulkanDevice::~VulkanDevice() {
  try {
    if (!VkDriver::exiting()) {  // at exit the driver already finished this device
      queue_->synchronize();
      driver_->save_pipeline_cache();
    }
  } catch (const Error&) {
    // A lost device cannot be waited for; tear down anyway.
  }
  queue_.reset();
  error_flag_.reset();
  kernels_.reset();  // pipelines before the device that owns them
  host_pool_.reset();
  device_pool_.reset();
}

std::string VulkanDevice::name() const {
  std::ostringstream os;
  os << "vulkan:" << ordinal_ << " (" << caps().name << ")";
  return os.str();
}

void VulkanDevice::synchronize() {
  queue_->synchronize();
  trim_pools();
  check_device_errors();
}

void VulkanDevice::trim_pools() {
  device_pool_->trim();
  host_pool_->trim();
}

void VulkanDevice::check_device_errors(const Shape* shape) {
  uint32_t words[3];
  std::memcpy(words, error_flag_->alloc.mapped, sizeof words);
  if (words[0] == 0) return;
  std::memset(error_flag_->alloc.mapped, 0, sizeof words);
  switch (words[0]) {
    case kIntDivByZero:
      fail(ErrorKind::OutOfRange, "div", "integer division by zero in ",
           shape ? shape->str() + " " : std::string(), dtype_name(static_cast<DType>(words[1])));
    default: {
      const char* op = words[0] == kIndexSelectRange  ? "index_select"
                       : words[0] == kGatherRange     ? "gather"
                       : words[0] == kScatterAddRange ? "scatter_add"
                                                      : "index_add";
      fail(ErrorKind::OutOfRange, op, "index ", static_cast<int32_t>(words[1]),
           " out of range for a dim of size ", words[2]);
    }
  }
}

void VulkanDevice::refuse_device_errors(const Shape* shape) {
  // A GPU finds a bad index only while running the kernel: wait for it (a sync per such op).
  queue_->wait(queue_->flush());
  check_device_errors(shape);
}

VulkanDevice::Stats VulkanDevice::stats() const {
  return {queue_->stats(), device_pool_->stats(), host_pool_->stats(), kernels_->stats(),
          coop_matmuls_.load(std::memory_order_relaxed)};
}

void VulkanDevice::run_custom(const CustomKernel& kernel,
                              std::initializer_list<const Storage*> inputs,
                              std::initializer_list<Storage*> outputs,
                              std::span<const uint32_t> push_constants,
                              std::array<uint32_t, 3> groups) {
  if (inputs.size() + outputs.size() > gpu::kMaxBindings)
    fail(ErrorKind::Unsupported, kernel.name.c_str(), "a custom kernel binds at most ",
         gpu::kMaxBindings, " buffers, got ", inputs.size() + outputs.size());
  if (push_constants.size_bytes() > gpu::kMaxPushConstantBytes)
    fail(ErrorKind::Unsupported, kernel.name.c_str(), "at most ", gpu::kMaxPushConstantBytes,
         " bytes of push constants, got ", push_constants.size_bytes());
  gpu::KernelKey k = key_for(kernel.name.c_str(), kernel.defines, kernel.constants);
  k.text = kernel.source;
  const gpu::Pipeline& pipeline = kernels_->pipeline(k);
  std::vector<gpu::BufferAccess> args;
  for (const Storage* s : inputs) args.push_back({&buffer(*s), gpu::Access::Read});
  for (Storage* s : outputs) args.push_back({&buffer(*s), gpu::Access::Write});
  queue_->record(
      [&](gpu::CommandQueue::Recorder& r) { r.dispatch(pipeline, args, push_constants, groups); });
}

}  // namespace wick::vulkan
