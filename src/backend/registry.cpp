#include "backend/registry.h"

#include "cpu/cpu_device.h"

#ifdef WICK_WITH_VULKAN
#include "vulkan/vk_device.h"
#endif

namespace wick::backend {

std::shared_ptr<BackendDevice> cpu_device() {
  static std::shared_ptr<BackendDevice> dev = std::make_shared<cpu::CpuDevice>();
  return dev;
}

std::shared_ptr<BackendDevice> open_device(DeviceKind kind, int ordinal) {
  switch (kind) {
    case DeviceKind::Cpu:
      if (ordinal != 0) fail(ErrorKind::Device, "open_device", "cpu has only ordinal 0, got ", ordinal);
      return cpu_device();
    case DeviceKind::Vulkan:
#ifdef WICK_WITH_VULKAN
      return vulkan::open_vulkan_device(ordinal);
#else
      fail(ErrorKind::Device, "open_device", "this build of wick has no Vulkan backend");
#endif
    case DeviceKind::Cuda:
      fail(ErrorKind::Device, "open_device", "this build of wick has no CUDA backend");
  }
  fail(ErrorKind::Internal, "open_device", "unknown device kind");
}

int device_count(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Cpu: return 1;
    case DeviceKind::Vulkan:
#ifdef WICK_WITH_VULKAN
      return vulkan::vulkan_device_count();
#else
      return 0;
#endif
    case DeviceKind::Cuda: return 0;
  }
  return 0;
}

}  // namespace wick::backend
