// The CUDA driver under the gpu/ runtime: one context (the device's primary one) and one stream,
// memory, NVRTC, modules and launches.
//
// Recording is launching: a dispatch, copy or fill goes onto the stream at once (the stream is
// CUDA's command list, already asynchronous), and commit(id) records the event of submission
// `id` after them. One stream orders everything, so submission id starts after id - 1 finished
// (the runtime's contract) and barriers cost nothing. wait(id) synchronises on that event;
// completed() queries the oldest outstanding events. Host-visible memory is pinned, mapped host
// memory: kernels read and write it through its device address (error records, staging).
#pragma once

#include <cuda.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cu_api.h"
#include "cuda/cu_compiler.h"
#include "gpu/driver.h"

namespace wick::cuda {

struct DeviceCaps : gpu::DeviceCaps {
  int sm_major = 0, sm_minor = 0;  // compute capability
  int multiprocessors = 0;
  int driver_version = 0;  // e.g. 13000
  std::string nvrtc_version;
};

// CUDA devices the driver reports (0 when libcuda cannot be loaded; `why` says why).
int cuda_device_count(std::string* why = nullptr);

class CuDriver final : public gpu::Driver {
 public:
  // Opens device `ordinal`; throws Error(Device) when CUDA or the device is absent.
  explicit CuDriver(int ordinal);
  ~CuDriver() override;
  CuDriver(const CuDriver&) = delete;
  CuDriver& operator=(const CuDriver&) = delete;

  const DeviceCaps& caps() const override { return caps_; }
  const gpu::KernelLanguage& language() const override;
  void add_capability_defines(gpu::Defines& defines) const override;

  gpu::Allocation allocate(size_t bytes, gpu::MemoryKind kind) override;
  void free(const gpu::Allocation& a) override;
  // Device memory of this device (checked with cuPointerGetAttribute: the whole range inside one
  // allocation of this device, in its primary context or none).
  gpu::Allocation adopt(uint64_t address, size_t bytes) override;
  uint64_t device_address(const gpu::Allocation& a) const override { return address(a.handle); }
  // Synchronizes the legacy default stream (which also waits for every blocking stream): where
  // the runtime API, PyTorch and CuPy queue work unless told otherwise.
  void wait_for_other_work() override;
  gpu::ModuleCode compile(const gpu::CompileRequest& req) override;
  std::unique_ptr<gpu::Pipeline> create_pipeline(const gpu::ModuleCode& code,
                                                 const std::string& entry,
                                                 std::span<const uint32_t> constants,
                                                 uint32_t block) override;
  // An ELF image (a cubin); whether the driver accepts it shows when the pipeline is made.
  bool validate_module(const gpu::ModuleCode& code, const std::string& entry) override;
  std::string identity() const override;
  void record_dispatch(const gpu::Dispatch& d) override;
  void record_barrier() override {}  // one stream: already in order
  void record_copy(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
                   uint64_t bytes) override;
  void record_fill(uint64_t dst, uint64_t offset, uint64_t bytes, uint32_t pattern) override;
  // A capture is CUDA stream capture into a graph (relaxed mode: the pool may allocate
  // meanwhile); replay launches the instantiated graph on the stream.
  bool can_capture() const override { return true; }
  void begin_capture() override;
  std::unique_ptr<gpu::Recording> end_capture() override;
  void replay(const gpu::Recording& r, uint64_t id) override;
  void commit(uint64_t id) override;
  void wait(uint64_t id) override;
  uint64_t completed() override;

  // For work recorded outside the runtime's primitives (cuBLASLt): the stream, with this
  // thread's context made current.
  CUstream stream();
  // The device address of a buffer handle.
  static CUdeviceptr address(uint64_t handle);
  const DriverApi& api() const { return api_; }

 private:
  void make_current() const;

  const DriverApi& api_;
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceCaps caps_;
  // Programmatic dependent launch (sm_90 on, WICK_CUDA_PDL): kernels of modules that wait for the
  // previous grid (kernels/cuda/include/common.cuh) are launched to overlap its end.
  bool dependent_launch_ = false;

  // Events of outstanding submissions, oldest first, and reusable ones.
  std::mutex events_mu_;
  std::deque<std::pair<uint64_t, CUevent>> pending_;
  std::vector<CUevent> spare_;
  std::atomic<uint64_t> completed_{0};

  // Frees wait while a capture runs (freeing memory may synchronise the device, which ends a
  // stream capture with an error).
  std::mutex frees_mu_;
  bool capturing_ = false;
  std::vector<gpu::Allocation> deferred_frees_;
};

}  // namespace wick::cuda
