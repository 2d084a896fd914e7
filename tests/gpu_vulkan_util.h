// Helpers for the Vulkan-only tests (what no other GPU API has: cooperative matrices, Vulkan's
// own options): the shared device and private devices with VulkanOptions. The tests of the GPU
// runtime on every backend use gpu_test_util.h.
#pragma once

#include <functional>
#include <memory>

#include "gpu_test_util.h"
#include "vulkan/vk_device.h"

namespace wick::testing {

// The process's shared "vulkan:0" (what WICK_TEST_DEVICES=vulkan:0 tests).
inline Device vk0() {
  return Device::parse("vulkan:0");
}

inline vulkan::VulkanDevice& vk(const Device& d) {
  return dynamic_cast<vulkan::VulkanDevice&>(d.backend());
}

// A new Vulkan device with its own queue, pools and counters; `tweak` edits the knob-derived
// options, Vulkan's own included.
inline Device private_device(const std::function<void(vulkan::VulkanOptions&)>& tweak = {}) {
  vulkan::VulkanOptions opts = vulkan::VulkanOptions::from_knobs(vk(vk0()).caps());
  if (tweak) tweak(opts);
  return Device(std::make_shared<vulkan::VulkanDevice>(0, &opts));
}

}  // namespace wick::testing
