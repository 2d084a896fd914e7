// Vulkan matmul: not implemented yet (refuses clearly).
#include "vulkan/vk_device.h"

namespace wick::vulkan {

void VulkanDevice::matmul(backend::View, backend::View, const backend::MatmulDims&,
                          backend::Storage&) {
  fail(ErrorKind::Unsupported, "matmul", "not implemented on vulkan yet");
}

}  // namespace wick::vulkan
