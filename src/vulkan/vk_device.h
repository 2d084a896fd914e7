// The Vulkan backend device: the gpu/ runtime's GpuDevice over the Vulkan driver, with the GLSL
// kernels of kernels/glsl. What only Vulkan has lives here: the cooperative-matrix f16 GEMM
// (vk_matmul.cpp), the driver's pipeline cache, and the options that choose them.
#pragma once

#include <memory>

#include "gpu/gpu_device.h"
#include "vulkan/vk_driver.h"
#include "vulkan/vk_entry.h"

namespace wick::vulkan {

// Settings of one Vulkan device: the GPU runtime's, and Vulkan's own.
struct VulkanOptions : gpu::GpuOptions {
  // f16 matmul on cooperative matrices (matmul_coop.comp) where the device has them; off: the
  // SIMT kernel (tests compare the two).
  bool cooperative_matrix = true;
  uint32_t coop_tile = 0;     // matmul_coop.comp's tile side (64 or 128); 0: chosen by shape
  uint32_t coop_threads = 0;  // its workgroup size (128 or 256); 0: the measured default
  static VulkanOptions from_knobs(const DeviceCaps& caps);
};

class VulkanDevice final : public gpu::GpuDevice {
 public:
  // Opens physical device `ordinal` with `options` (VulkanOptions::from_knobs() when null).
  explicit VulkanDevice(int ordinal, const VulkanOptions* options = nullptr);
  ~VulkanDevice() override;

  DeviceKind kind() const override { return DeviceKind::Vulkan; }

  // f16 products on cooperative matrices where the device has them; the rest as GpuDevice does.
  void matmul(backend::View a, backend::View b, const backend::MatmulDims& d,
              backend::Storage& dst) override;
  bool f16_tensor_gemm() const override {
    return caps().coopmat_f16 && options_.cooperative_matrix;
  }

  const DeviceCaps& caps() const { return vk_driver_.caps(); }
  const VulkanOptions& options() const { return options_; }

 private:
  struct Opened {
    std::unique_ptr<VkDriver> driver;
    VulkanOptions options;
  };
  static Opened open(int ordinal, const VulkanOptions* options);
  VulkanDevice(int ordinal, Opened opened);

  VkDriver& vk_driver_;
  VulkanOptions options_;
};

}  // namespace wick::vulkan
