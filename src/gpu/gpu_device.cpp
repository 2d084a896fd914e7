// The GPU device: creation, options, synchronization, device-found errors and statistics.
#include "gpu/gpu_device.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "wick/config.h"

namespace wick::gpu {

using backend::Storage;

// Measured defaults (docs/architecture.md, "Commit policy"): on a GPU (H200) 25-100 ops per
// command buffer are equally good and 50 is the seed's; on lavapipe, whose "GPU" is the host's
// own cores, committing sooner lets its threads run while the host records. Committing on bytes
// did not help on either (a 16 MiB limit cost 25% on 1M-element adds on the H200), so it is off.
static int64_t default_ops_per_buffer(const DeviceCaps& caps) {
  return caps.is_cpu ? 20 : 50;
}
static uint64_t default_bytes_per_buffer(const DeviceCaps&) {
  return 0;
}

GpuOptions GpuOptions::from_knobs(const DeviceCaps& caps) {
  const Knobs& k = knobs();
  GpuOptions o;
  o.queue.ops_per_buffer =
      k.compute_per_buffer >= 0 ? k.compute_per_buffer : default_ops_per_buffer(caps);
  o.queue.bytes_per_buffer = default_bytes_per_buffer(caps);
  // Unused memory kept for reuse: an eighth of the device memory, at most 1 GiB.
  o.pool_limit =
      k.pool_limit ? k.pool_limit : std::min<uint64_t>(caps.device_local_bytes / 8, 1ull << 30);
  o.kernel_cache = DiskCache::folder_for(k.kernel_cache);
  o.fast_math = k.fast_math;
  o.int_dot = caps.int_dot && k.vk_int_dot;
  o.qmatvec = default_qmatvec_shape(caps);
  if (k.qmatvec_rows >= 0) o.qmatvec.max_rows = k.qmatvec_rows;
  // -2: "on", the default row count on any device.
  o.dequant_rows = k.qmatmul_f16_rows == -2 ? default_dequant_rows() : k.qmatmul_f16_rows;
  o.qmatvec_fuse_rows =
      k.qmatvec_fuse_rows < 0 ? default_qmatvec_fuse_rows(caps) : k.qmatvec_fuse_rows;
  o.qmatvec_fuse_max_k = k.qmatvec_fuse_rows < 0      ? default_qmatvec_fuse_max_k(caps)
                         : k.qmatvec_fuse_max_k == -2 ? std::numeric_limits<int64_t>::max()
                                                      : k.qmatvec_fuse_max_k;
  o.qmatvec_fuse_wide = k.qmatvec_fuse_max_k == -2;
  o.qmatvec_stage_rows =
      k.qmatvec_stage_rows < 0 ? default_qmatvec_stage_rows(caps) : k.qmatvec_stage_rows;
  o.qmatvec_rope = k.qmatvec_rope;
  o.qmatvec_argmax = k.qmatvec_argmax != 0;
  o.qmatvec_swiglu_rows = k.qmatvec_swiglu < 0    ? default_qmatvec_swiglu_rows(caps)
                          : k.qmatvec_swiglu == 0 ? 0
                                                  : std::numeric_limits<int64_t>::max();
  // Decode's attention workgroup: 256 on GPUs (CUDA: CudaOptions::from_knobs), few splits. On the
  // H100's Vulkan (SmolLM2-135M, session 23) decode took 703.5-707.7 tok/s against 662.6-667.3
  // at 128 (64: 647-668, 32: 611-613). CPU implementations (lavapipe) keep 128.
  o.attention_block = caps.is_cpu || caps.max_workgroup_size < 256 ? 128 : 256;
  if (k.attention_block > 0) o.attention_block = static_cast<uint32_t>(k.attention_block);
  // Where the kernels have 8-bit MMA: off unless the knob or the backend's options say (CUDA:
  // CudaOptions::from_knobs).
  if (caps.int8_mma && k.qmatvec_mma_rows > 0) o.qmatvec_mma_rows = k.qmatvec_mma_rows;
  if (caps.int8_mma && k.qmatvec_mma_threads > 0)
    o.qmatvec_mma_threads = static_cast<uint32_t>(k.qmatvec_mma_threads);
  if (k.qmatvec_threads > 0) {  // the knob's shapes, for every count of x rows
    o.qmatvec.threads = o.qmatvec.few_threads = static_cast<uint32_t>(k.qmatvec_threads);
    o.qmatvec.rows = o.qmatvec.few_rows = static_cast<uint32_t>(k.qmatvec_rows_per_group);
    o.qmatvec.few_x_rows = std::numeric_limits<int64_t>::max();
    if (k.qmatvec_wide_threads > 0) {  // a second shape for wide matrices
      o.qmatvec.wide_threads = static_cast<uint32_t>(k.qmatvec_wide_threads);
      o.qmatvec.wide_rows = static_cast<uint32_t>(k.qmatvec_wide_rows);
    } else {
      o.qmatvec.wide_min_out = std::numeric_limits<int64_t>::max();  // one shape everywhere
    }
    if (k.qmatvec_mid_threads > 0) {  // a third for matrices between the thresholds
      o.qmatvec.mid_threads = static_cast<uint32_t>(k.qmatvec_mid_threads);
      o.qmatvec.mid_rows = static_cast<uint32_t>(k.qmatvec_mid_rows);
    } else {
      o.qmatvec.mid_min_out = std::numeric_limits<int64_t>::max();
    }
  }
  return o;
}

GpuDevice::GpuDevice(int ordinal, std::unique_ptr<Driver> driver, const GpuOptions& options)
    : ordinal_(ordinal),
      created_at_(std::chrono::steady_clock::now()),
      driver_(std::move(driver)),
      options_(options),
      sources_(driver_->language().files) {
  kernels_ = std::make_unique<KernelCache>(*driver_, sources_, DiskCache(options_.kernel_cache),
                                           options_.fast_math);
  PoolConfig pool;
  pool.limit = options_.pool_limit ? options_.pool_limit : (256ull << 20);
  device_pool_ = std::make_unique<BufferPool>(*driver_, pool);
  pool.kind = MemoryKind::HostVisible;
  host_pool_ = std::make_unique<BufferPool>(*driver_, pool);
  queue_ = std::make_unique<CommandQueue>(*driver_, options_.queue);
  errors_ = std::make_unique<DeviceErrors>(*host_pool_);
  unused_record_ = errors_->acquire();
  creation_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - created_at_)
          .count();
}

GpuDevice::~GpuDevice() {
  try {
    if (!driver_->shutting_down()) queue_->synchronize();
  } catch (const Error&) {
    // A lost device cannot be waited for; tear down anyway.
  }
  queue_.reset();
  unused_record_.reset();
  split_counters_.reset();
  errors_.reset();
  kernels_.reset();  // pipelines before the device that owns them
  host_pool_.reset();
  device_pool_.reset();
  driver_.reset();
}

std::string GpuDevice::name() const {
  std::ostringstream os;
  os << device_kind_name(kind()) << ":" << ordinal_ << " (" << device_caps().name << ")";
  return os.str();
}

void GpuDevice::synchronize() {
  queue_->synchronize();
  trim_pools();
  raise_device_errors();
}

namespace {

// A capture of this device's queue, with the error records its ops registered.
class GpuCapturedWork final : public backend::CapturedWork {
 public:
  GpuCapturedWork(CommandQueue& queue, DeviceErrors& errors, std::unique_ptr<Capture> capture,
                  std::vector<DeviceErrors::CapturedRecord> records)
      : queue_(queue),
        errors_(errors),
        capture_(std::move(capture)),
        records_(std::move(records)) {}
  void replay() override {
    const uint64_t id = queue_.replay(*capture_);
    for (const auto& r : records_) errors_.add(r.record, id, r.op, r.context);
  }
  uint64_t ops() const override { return capture_->ops(); }
  uint64_t dispatches() const override { return capture_->dispatches(); }

 private:
  CommandQueue& queue_;
  DeviceErrors& errors_;
  std::unique_ptr<Capture> capture_;
  std::vector<DeviceErrors::CapturedRecord> records_;
};

}  // namespace

std::unique_ptr<backend::CapturedWork> GpuDevice::capture(const std::function<void()>& f) {
  queue_->begin_capture();
  std::vector<DeviceErrors::CapturedRecord> records;
  errors_->divert(&records);
  try {
    f();
  } catch (...) {
    errors_->divert(nullptr);
    try {
      queue_->end_capture();  // dropped: nothing of it ran
    } catch (const Error&) {
    }
    throw;
  }
  errors_->divert(nullptr);
  std::unique_ptr<Capture> c = queue_->end_capture();
  return std::make_unique<GpuCapturedWork>(*queue_, *errors_, std::move(c), std::move(records));
}

void GpuDevice::trim_pools() {
  device_pool_->trim();
  host_pool_->trim();
}

Buffer& GpuDevice::split_counters(size_t rows) {
  std::lock_guard lk(split_counters_mu_);
  if (rows > split_counter_rows_) {
    // Work recorded before keeps the old buffer alive (pinned by its submission or capture).
    const size_t n = std::max<size_t>({rows, 2 * split_counter_rows_, 1024});
    split_counters_ = device_pool_->acquire(n * sizeof(uint32_t));
    split_counter_rows_ = n;
    Buffer& b = *split_counters_;
    queue_->record([&](CommandQueue::Recorder& r) { r.fill(b, 0, n * sizeof(uint32_t), 0u); });
  }
  return *split_counters_;
}

void GpuDevice::raise_device_errors() {
  errors_->raise_finished(driver_->completed());
}

void GpuDevice::refuse_device_errors(BufferRef record, uint64_t submission, const char* op,
                                     std::string context) {
  errors_->add(std::move(record), submission, op, std::move(context));
  // A GPU finds a bad index only while running the kernel: wait for it (a sync per such op).
  queue_->flush();
  queue_->wait(submission);
  raise_device_errors();
}

GpuDevice::Stats GpuDevice::stats() const {
  return {queue_->stats(),
          device_pool_->stats(),
          host_pool_->stats(),
          kernels_->stats(),
          coop_matmuls_.load(std::memory_order_relaxed),
          staged_qmatvecs_.load(std::memory_order_relaxed),
          mma_qmatvecs_.load(std::memory_order_relaxed)};
}

}  // namespace wick::gpu
