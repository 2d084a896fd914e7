// The CUDA backend device: the gpu/ runtime's GpuDevice over the CUDA driver, with the CUDA
// kernels of kernels/cuda. What only CUDA has lives here: GEMM through cuBLASLt (cu_matmul.cpp).
#pragma once

#include <memory>
#include <string>

#include "cuda/cu_blas.h"
#include "cuda/cu_driver.h"
#include "cuda/cu_entry.h"
#include "gpu/gpu_device.h"

namespace wick::cuda {

struct CudaOptions : gpu::GpuOptions {
  // f32 products on TF32 tensor cores (WICK_TF32=1; off by default, as in PyTorch).
  bool tf32 = false;
  // GEMM through cuBLASLt where the operands' strides allow; off: the SIMT kernel (tests).
  bool cublas = true;
  static CudaOptions from_knobs(const DeviceCaps& caps);
};

class CudaDevice final : public gpu::GpuDevice {
 public:
  explicit CudaDevice(int ordinal, const CudaOptions* options = nullptr);
  ~CudaDevice() override;

  DeviceKind kind() const override { return DeviceKind::Cuda; }

  // f32/f16/bf16/f64 products through cuBLASLt; the rest as GpuDevice does.
  void matmul(backend::View a, backend::View b, const backend::MatmulDims& d,
              backend::Storage& dst) override;
  bool f16_tensor_gemm() const override { return lt_ != nullptr; }

  const DeviceCaps& caps() const { return cu_driver_.caps(); }
  const CudaOptions& options() const { return options_; }
  uint64_t cublas_matmuls() const { return cublas_matmuls_.load(); }

 private:
  struct Opened {
    std::unique_ptr<CuDriver> driver;
    CudaOptions options;
  };
  static Opened open(int ordinal, const CudaOptions* options);
  CudaDevice(int ordinal, Opened opened);
  // One cuBLASLt call per batch group; false when cuBLASLt cannot take the operands.
  bool matmul_lt(backend::View a, backend::View b, const backend::MatmulDims& d,
                 backend::Storage& dst);

  CuDriver& cu_driver_;
  CudaOptions options_;
  std::unique_ptr<LtGemm> lt_;
  gpu::BufferRef workspace_;
  std::atomic<uint64_t> cublas_matmuls_{0};
};

}  // namespace wick::cuda
