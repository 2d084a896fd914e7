// Vulkan reductions, softmax, norms, rope and sort: not implemented yet (each refuses clearly).
#include "vulkan/vk_device.h"

namespace wick::vulkan {

using backend::Storage;
using backend::View;

namespace {
[[noreturn]] void not_yet(const char* op) {
  fail(ErrorKind::Unsupported, op, "not implemented on vulkan yet");
}
}  // namespace

void VulkanDevice::reduce(backend::ReduceOp op, View, const std::vector<size_t>&, Storage&) {
  not_yet(backend::reduce_op_name(op));
}
void VulkanDevice::softmax_last_dim(View, Storage&) {
  not_yet("softmax");
}
void VulkanDevice::log_softmax_last_dim(View, Storage&) {
  not_yet("log_softmax");
}
void VulkanDevice::rms_norm(View, View, double, Storage&) {
  not_yet("rms_norm");
}
void VulkanDevice::layer_norm(View, View, View, double, Storage&) {
  not_yet("layer_norm");
}
void VulkanDevice::rope(View, View, View, bool, Storage&) {
  not_yet("rope");
}
void VulkanDevice::arg_sort_last_dim(View, bool, Storage&) {
  not_yet("arg_sort_last_dim");
}

}  // namespace wick::vulkan
