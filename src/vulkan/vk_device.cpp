// The Vulkan device: creation with its options, the pipeline cache, and the registry's entry
// points. Every op is GpuDevice's, but for the cooperative-matrix GEMM (vk_matmul.cpp).
#include "vulkan/vk_device.h"

#include "wick/config.h"

namespace wick::vulkan {

std::shared_ptr<backend::BackendDevice> open_device(int ordinal) {
  return std::make_shared<VulkanDevice>(ordinal);
}

int device_count() {
  return physical_device_count();
}

std::string absent_reason() {
  return physical_device_count() > 0 ? std::string()
                                     : "no Vulkan driver or device (is the loader and an ICD "
                                       "installed?)";
}

VulkanOptions VulkanOptions::from_knobs(const DeviceCaps& caps) {
  VulkanOptions o;
  static_cast<gpu::GpuOptions&>(o) = gpu::GpuOptions::from_knobs(caps);
  o.coop_tile = static_cast<uint32_t>(knobs().vk_coop_tile);
  o.coop_threads = static_cast<uint32_t>(knobs().vk_coop_threads);
  return o;
}

VulkanDevice::Opened VulkanDevice::open(int ordinal, const VulkanOptions* options) {
  auto driver = std::make_unique<VkDriver>(ordinal);
  VulkanOptions o = options ? *options : VulkanOptions::from_knobs(driver->caps());
  return {std::move(driver), std::move(o)};
}

VulkanDevice::VulkanDevice(int ordinal, const VulkanOptions* options)
    : VulkanDevice(ordinal, open(ordinal, options)) {}

VulkanDevice::VulkanDevice(int ordinal, Opened opened)
    : GpuDevice(ordinal, std::move(opened.driver), opened.options),
      vk_driver_(static_cast<VkDriver&>(driver())),
      options_(std::move(opened.options)) {
  // No pipeline exists yet: the driver's own pipeline cache can still be seeded from disk.
  vk_driver_.load_pipeline_cache(gpu::DiskCache(options_.kernel_cache));
}

VulkanDevice::~VulkanDevice() {
  try {
    if (!VkDriver::exiting()) {  // at exit the driver already finished this device
      synchronize();
      vk_driver_.save_pipeline_cache();
    }
  } catch (const Error&) {
    // A lost device cannot be waited for; tear down anyway.
  }
}

}  // namespace wick::vulkan
