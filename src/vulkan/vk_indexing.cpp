// Vulkan indexing ops: not implemented yet (each refuses clearly).
#include "vulkan/vk_device.h"

namespace wick::vulkan {

using backend::Storage;
using backend::View;

namespace {
[[noreturn]] void not_yet(const char* op) {
  fail(ErrorKind::Unsupported, op, "not implemented on vulkan yet");
}
}  // namespace

void VulkanDevice::index_select(View, View, size_t, Storage&) {
  not_yet("index_select");
}
void VulkanDevice::gather(View, View, size_t, Storage&) {
  not_yet("gather");
}
void VulkanDevice::scatter_add(Storage&, const Shape&, View, View, size_t) {
  not_yet("scatter_add");
}
void VulkanDevice::index_add(Storage&, const Shape&, View, View, size_t) {
  not_yet("index_add");
}

}  // namespace wick::vulkan
