// The CUDA device: creation with its options, and the registry's entry points. Every op is
// GpuDevice's (the kernels of kernels/cuda), but GEMM through cuBLASLt (cu_matmul.cpp).
#include "cuda/cu_device.h"

#include <cstdlib>
#include <cstring>

#include "cuda/cu_compiler.h"
#include "wick/config.h"

namespace wick::cuda {

std::shared_ptr<backend::BackendDevice> open_device(int ordinal) {
  return std::make_shared<CudaDevice>(ordinal);
}

int device_count() {
  if (!nvrtc_available()) return 0;
  return cuda_device_count();
}

std::string absent_reason() {
  std::string why;
  if (cuda_device_count(&why) == 0) return why.empty() ? "no CUDA device" : why;
  if (!nvrtc_available(&why)) return why;
  return "";
}

CudaOptions CudaOptions::from_knobs(const DeviceCaps& caps) {
  CudaOptions o;
  static_cast<gpu::GpuOptions&>(o) = gpu::GpuOptions::from_knobs(caps);
  // qmatvec.cu's workgroup unless WICK_QMATVEC_SHAPE sets one: 128 threads x 4 rows. On the H200
  // (SmolLM2-135M's decode, 2026-12-04) a one-token pass took 0.78 ms against 0.85 at the GPU
  // default 32 x 2, a pass of 8 sequences 1.47 against 1.72 ms: at k = 576 a row's 18 units of 32
  // left a 32-thread workgroup two rounds of loads, a 128-thread one a single round.
  // Wide matrices (the lm_head) 128 x 8: 17 us for SmolLM2's on the H200 (ncu, session 14).
  if (knobs().qmatvec_threads == 0) {
    o.qmatvec.threads = 128;
    o.qmatvec.rows = 4;
    o.qmatvec.wide_threads = 128;
    o.qmatvec.wide_rows = 8;
    o.qmatvec.few_x_rows = 0;  // Vulkan's decode shapes (default_qmatvec_shape), not measured here
  }
  // qmatvec.cu copies qact's rows into shared memory from 2 x rows unless WICK_QMATVEC_STAGE says
  // otherwise: on the H200 (SmolLM2-135M, session 17) passes of 2 / 4 / 8 sequences took
  // 0.856-0.857 / 0.987 / 1.198-1.201 ms against 0.855-0.899 / 1.046-1.088 / 1.277-1.284 ms, one
  // sequence's unchanged (Vulkan's qmatvec.comp lost: gpu_quantized.cpp).
  if (knobs().qmatvec_stage_rows < 0) o.qmatvec_stage_rows = 2;
  // qmatvec.cu quantizing its own x: off unless WICK_QMATVEC_FUSE says otherwise. Fused everywhere
  // it made the H200's decode slower (session 17: 828-836 against 1251-1270 tok/s); which of its
  // products lost is not measured per kernel yet (Vulkan's: gpu_quantized.cpp).
  if (knobs().qmatvec_fuse_rows < 0) o.qmatvec_fuse_rows = 0;
  o.qmatvec_weight_stage = false;  // qmatvec.cu has no W_STAGE
  // The feed-forward block's swiglu quantized by qact unless WICK_QMATVEC_SWIGLU says otherwise:
  // on the H100 (SmolLM2-135M, session 22) decode with qmatvec.cu's SWIGLU_Q8 stores took
  // 1239.8 / 1242.6 tok/s against 1257.4 / 1255.8 (the last block's fence, count and L2 round
  // trip cost more than qact's launch, which programmatic dependent launch overlaps).
  if (knobs().qmatvec_swiglu < 0) o.qmatvec_swiglu_rows = 0;
  // The greedy pick's argmax as its own kernel unless WICK_QMATVEC_ARGMAX says otherwise: on the
  // H100 (SmolLM2-135M-shaped Q4_1, session 32, five alternations) decode with qmatvec.cu's
  // ARGMAX took 1263.8-1289.8 tok/s (median 1277.2) against 1290.7-1295.9 (1293.9): the parts'
  // fences, counts and merges cost more than the argmax launch, which programmatic dependent
  // launch overlaps. Vulkan gained (853.8 -> 866.3 median): the default there.
  if (knobs().qmatvec_argmax < 0) o.qmatvec_argmax = false;
  // attention.cu's workgroup 128 unless WICK_ATTENTION_BLOCK says otherwise: on the H100 (session
  // 23, one run each) decode 1241.8 tok/s at 128, 1263.9 at 64, 1170.7 at 32 (256 not measured).
  if (knobs().attention_block == 0) o.attention_block = 128;
  // qmatvec on the tensor cores (its MMA variant) for a whole group of 8 x rows, 512 threads a
  // workgroup, unless WICK_QMATVEC_MMA says otherwise. On the H100 (SmolLM2-135M, session 18)
  // passes of 8 sequences took 1.132-1.136 ms against 1.205-1.214; passes of 2 and 4 lost with
  // it (1.085 / 1.107 ms against 0.875 / 1.002), and 128 threads lost at 8 too (1.351-1.383
  // against 1.242-1.253): the warps splitting k shorten each one's chain of loads. 512 against
  // 256 threads (session 19, three alternations): 0.954-0.979 ms against 0.998-1.025.
  if (caps.int8_mma) {
    if (knobs().qmatvec_mma_rows < 0) o.qmatvec_mma_rows = 8;
    if (knobs().qmatvec_mma_threads == 0) o.qmatvec_mma_threads = 512;
  }
  const char* tf32 = std::getenv("WICK_TF32");
  o.tf32 = tf32 && (std::strcmp(tf32, "1") == 0 || std::strcmp(tf32, "on") == 0);
  return o;
}

CudaDevice::Opened CudaDevice::open(int ordinal, const CudaOptions* options) {
  auto driver = std::make_unique<CuDriver>(ordinal);
  CudaOptions o = options ? *options : CudaOptions::from_knobs(driver->caps());
  return {std::move(driver), std::move(o)};
}

CudaDevice::CudaDevice(int ordinal, const CudaOptions* options)
    : CudaDevice(ordinal, open(ordinal, options)) {}

CudaDevice::CudaDevice(int ordinal, Opened opened)
    : GpuDevice(ordinal, std::move(opened.driver), opened.options),
      cu_driver_(static_cast<CuDriver&>(driver())),
      options_(std::move(opened.options)) {
  if (options_.cublas) lt_ = LtGemm::open(nullptr);  // without it, the SIMT kernel does GEMM
}

CudaDevice::~CudaDevice() {
  try {
    synchronize();
  } catch (const Error&) {
    // A failed device cannot be waited for; tear down anyway.
  }
  workspace_.reset();
  lt_.reset();
}

}  // namespace wick::cuda
