// The Vulkan backend device: wick's BackendDevice on top of the gpu/ runtime and the Vulkan driver.
//
// Every op validates what the device can do, gets its pipeline from the kernel cache (compiling
// outside the recording lock), takes its output from the pool and records one dispatch under the
// command queue's lock, then returns without waiting. Read-back (to_host) and synchronize() are
// the only places that wait. Op families live in their own files: vk_memory.cpp (alloc, upload,
// read-back, copies, casts, fill), vk_elementwise.cpp, vk_random.cpp, vk_reduce.cpp,
// vk_matmul.cpp, vk_quantized.cpp, vk_indexing.cpp; vk_launch.cpp holds the launch helpers they
// share.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "backend/backend.h"
#include "gpu/buffer_pool.h"
#include "gpu/command_queue.h"
#include "gpu/kernel_cache.h"
#include "vulkan/vk_driver.h"

namespace wick::vulkan {

// The registry's entry points (src/backend/registry.cpp).
std::shared_ptr<backend::BackendDevice> open_vulkan_device(int ordinal);
int vulkan_device_count();

class VulkanStorage final : public backend::Storage {
 public:
  VulkanStorage(backend::BackendDevice* dev, DType dt, size_t numel, gpu::BufferRef buffer)
      : Storage(dev, dt, numel), buffer_(std::move(buffer)) {}
  gpu::Buffer& buffer() const { return *buffer_; }

 private:
  gpu::BufferRef buffer_;
};

// The quantized matrix-vector kernel (qmatvec.comp): threads and output rows per workgroup, and
// the longest x it takes (longer x: the tiled qmatmul.comp).
struct QMatVecShape {
  uint32_t threads = 32, rows = 2;
  int64_t max_rows = 8;
};
// The measured defaults per device class (the table in vk_quantized.cpp).
QMatVecShape default_qmatvec_shape(const DeviceCaps& caps);

// Settings of one device; from_knobs() reads the WICK_* knobs and the measured defaults.
struct VulkanOptions {
  gpu::QueueConfig queue;
  uint64_t pool_limit = 0;   // 0: default for the device
  std::string kernel_cache;  // folder; "" = off
  bool fast_math = true;
  // Subgroup arithmetic in the kernels that use it (qmatvec.comp), where the device has it; off:
  // their shared-memory path (tests run both).
  bool subgroups = true;
  QMatVecShape qmatvec;  // WICK_QMATVEC_ROWS sets max_rows
  // f16 matmul on cooperative matrices (matmul_coop.comp) where the device has them; off: the
  // SIMT kernel (tests compare the two).
  bool cooperative_matrix = true;
  uint32_t coop_tile = 0;     // matmul_coop.comp's tile side (64 or 128); 0: chosen by shape
  uint32_t coop_threads = 0;  // its workgroup size (128 or 256); 0: the measured default
  static VulkanOptions from_knobs(const DeviceCaps& caps);
};

// What kernels write to the device's error words (kernels/glsl/include/errors.glsl): {code, a, b}.
enum DeviceErrorCode : uint32_t {
  kIndexSelectRange = 1,  // a: the index, b: the dim size
  kGatherRange = 2,
  kScatterAddRange = 3,
  kIndexAddRange = 4,
  kIntDivByZero = 5,  // a: the DType
};

inline constexpr uint32_t kWorkgroupSize = 256;  // WG_SIZE in kernels/glsl/include/common.glsl

// v as a 32-bit kernel index (the kernels index with uint); Unsupported when it does not fit.
uint32_t to_index(int64_t v, const char* what);

// The places that build kernel keys; with the values a key is built from they name its pipeline
// (gpu::KernelId), so an op's steady state builds no key strings.
enum class KernelFamily : uint32_t {
  Unary = 1,
  Binary,
  Compare,
  Where,
  Copy,
  Fill,
  Index,
  Scatter,
  Reduce,
  Norm,
  Rope,
  Sort,
  Gemv,
  Matmul,
  MatmulCoop,
  QMatVec,
  QMatMul,
  QAct,
  Rand,
};

// A value of a kernel's push constants after the layout header (op parameters).
struct PushParam {
  enum Kind : uint8_t { U32, F32, F64 } kind;
  double value;
  static PushParam u32(uint32_t v) { return {U32, static_cast<double>(v)}; }
};

// The words of a push-constant block, laid out as GLSL's std430 does (doubles 8-byte aligned).
class PushConstants {
 public:
  void u32(uint32_t v);
  void param(const PushParam& p);
  std::span<const uint32_t> words() const { return {w_.data(), n_}; }

 private:
  std::array<uint32_t, gpu::kMaxPushConstantBytes / 4> w_{};
  size_t n_ = 0;
};

class VulkanDevice final : public backend::BackendDevice {
 public:
  // Opens physical device `ordinal` with `options` (VulkanOptions::from_knobs() when null).
  explicit VulkanDevice(int ordinal, const VulkanOptions* options = nullptr);
  ~VulkanDevice() override;

  DeviceKind kind() const override { return DeviceKind::Vulkan; }
  int ordinal() const override { return ordinal_; }
  std::string name() const override;

  backend::StoragePtr alloc(DType dt, size_t numel) override;
  backend::StoragePtr from_host(DType dt, const void* data, size_t numel) override;
  void to_host(backend::View src, void* dst, DType dst_dt) override;
  void synchronize() override;

  void unary(backend::UnaryOp op, backend::UnaryParams p, backend::View x,
             backend::Storage& dst) override;
  void binary(backend::BinaryOp op, backend::View a, backend::View b,
              backend::Storage& dst) override;
  void compare(backend::CmpOp op, backend::View a, backend::View b, backend::Storage& dst) override;
  void where_cond(backend::View cond, backend::View on_true, backend::View on_false,
                  backend::Storage& dst) override;
  void cast(backend::View x, backend::Storage& dst) override;
  void copy_strided(backend::View src, backend::Storage& dst, const Layout& dst_layout) override;
  void fill(backend::Storage& dst, const Layout& dst_layout, double value) override;

  void reduce(backend::ReduceOp op, backend::View x, const std::vector<size_t>& dims,
              backend::Storage& dst) override;
  void softmax_last_dim(backend::View x, backend::Storage& dst) override;
  void log_softmax_last_dim(backend::View x, backend::Storage& dst) override;
  void rms_norm(backend::View x, backend::View alpha, double eps, backend::Storage& dst) override;
  void layer_norm(backend::View x, backend::View alpha, backend::View beta, double eps,
                  backend::Storage& dst) override;
  void rope(backend::View x, backend::View cos, backend::View sin, bool interleaved,
            backend::Storage& dst) override;
  void arg_sort_last_dim(backend::View x, bool ascending, backend::Storage& dst) override;

  void matmul(backend::View a, backend::View b, const backend::MatmulDims& d,
              backend::Storage& dst) override;
  void qmatmul(backend::View x, const backend::Storage& wblocks, QuantType type, int64_t n_out,
               int64_t k, backend::Storage& dst) override;

  void index_select(backend::View src, backend::View ids, size_t dim,
                    backend::Storage& dst) override;
  void gather(backend::View src, backend::View ids, size_t dim, backend::Storage& dst) override;
  void scatter_add(backend::Storage& dst, const Shape& dst_shape, backend::View ids,
                   backend::View src, size_t dim) override;
  void index_add(backend::Storage& dst, const Shape& dst_shape, backend::View ids,
                 backend::View src, size_t dim) override;

  void set_seed(uint64_t seed) override;
  void rand_uniform(backend::Storage& dst, double lo, double hi) override;
  void rand_normal(backend::Storage& dst, double mean, double std) override;

  // ---- custom kernels ---------------------------------------------------------------------
  // A user GLSL compute kernel (it may #include wick's headers, e.g. "include/dtype.glsl").
  // Buffers bind in order: inputs, then outputs. Inputs are only read and outputs written: the
  // hazard tracker orders it against other ops by exactly these declarations.
  struct CustomKernel {
    std::string name;
    std::string source;
    gpu::Defines defines;
    std::vector<uint32_t> constants;
  };
  void run_custom(const CustomKernel& kernel, std::initializer_list<const backend::Storage*> inputs,
                  std::initializer_list<backend::Storage*> outputs,
                  std::span<const uint32_t> push_constants, std::array<uint32_t, 3> groups);

  // ---- introspection (tests, wick info) ---------------------------------------------------
  const DeviceCaps& caps() const { return driver_->caps(); }
  const VulkanOptions& options() const { return options_; }
  double creation_ms() const { return creation_ms_; }
  struct Stats {
    gpu::CommandQueue::Stats queue;
    gpu::BufferPool::Stats device_pool, host_pool;
    gpu::KernelCache::Stats kernels;
    uint64_t coop_matmuls = 0;  // matmuls recorded with matmul_coop.comp
  };
  Stats stats() const;

 private:
  // An operand of an element-wise kernel: a buffer read or written through a layout.
  struct Operand {
    gpu::Buffer* buffer;
    const Layout* layout;
  };
  struct BoundView {
    gpu::Buffer* buffer;
  };
  // Runs a kernel using include/rows.glsl over x split into outer dims and `inner` dims (sorted):
  // x binds at 0, extra inputs after it, `out` (contiguous over the outer dims) last.
  // per_group: a workgroup per outer index, else a thread.
  void launch_rows(const gpu::Pipeline& pipeline, backend::View x, const std::vector<size_t>& inner,
                   gpu::Buffer& out, bool per_group,
                   std::initializer_list<BoundView> extra_inputs = {},
                   std::initializer_list<PushParam> params = {});
  // norm.comp: 0 softmax, 1 log_softmax, 2 rms_norm, 3 layer_norm.
  void norm(uint32_t kind, const char* name, backend::View x, const backend::View* alpha,
            const backend::View* beta, double eps, backend::Storage& dst);
  // Runs a strided kernel (kernels/glsl/include/strided.glsl) over out's shape: inputs bind at
  // 0.., the output last. out_strided: the kernel writes through out's layout (else contiguous).
  // unordered: one more buffer bound last, used only through order-free atomics (error flag).
  void launch_strided(const gpu::Pipeline& pipeline, std::initializer_list<Operand> inputs,
                      Operand out, bool out_strided, std::initializer_list<PushParam> params = {},
                      gpu::Buffer* unordered = nullptr);
  // Kernels report what the CPU refuses (out-of-range ids, integer division by zero) in device
  // words (include/errors.glsl) instead of faulting. The ops that can fail wait for themselves
  // and check (refuse_device_errors), so the error comes from the op that caused it, as on the
  // CPU; other waits check too.
  // shape: the op's shape, named in the message (a division by zero).
  void check_device_errors(const Shape* shape = nullptr);
  void refuse_device_errors(const Shape* shape = nullptr);
  // index_select / gather (index.comp) and scatter_add / index_add (scatter.comp) launches.
  void launch_index(uint32_t mode, const char* op, backend::View src, backend::View ids, size_t dim,
                    backend::Storage& dst);
  void launch_scatter(uint32_t mode, const char* op, backend::Storage& dst, const Shape& dst_shape,
                      backend::View ids, backend::View src, size_t dim);
  // Workgroups for n invocations of a kernel (WG_SIZE each) as a 2-D grid within device limits.
  std::array<uint32_t, 3> grid(uint64_t n) const;
  // Throws Unsupported naming `op` when the device cannot hold `dt`.
  void require(DType dt, const char* op) const;
  // The pipeline of `family` for `values` (everything its key depends on besides the device);
  // make_key() builds the key the first time only.
  template <typename MakeKey>
  const gpu::Pipeline& kernel(KernelFamily family, std::initializer_list<uint32_t> values,
                              MakeKey&& make_key) {
    gpu::KernelId id;
    id.family = static_cast<uint32_t>(family);
    WICK_ASSERT(values.size() <= id.values.size());
    std::copy(values.begin(), values.end(), id.values.begin());
    return kernels_->pipeline(id, make_key);
  }
  // The key of kernels/glsl/<source> with the device's capability defines added.
  gpu::KernelKey key_for(const char* source, gpu::Defines defines,
                         std::vector<uint32_t> constants = {}) const;
  // copy.comp converting `from` to `to` (a plain copy when equal).
  const gpu::Pipeline& copy_kernel(DType from, DType to);
  // A kernel of `source` on `dt` whose op `code` is specialization constant 0 (unary, compare,
  // rand, norm, rope, sort); with_params: its op parameters travel as PARAM_T (param_type(dt)).
  const gpu::Pipeline& op_kernel(KernelFamily family, const char* source, uint32_t code, DType dt,
                                 bool with_params);
  // index.comp / scatter.comp for values of `dt` and ids of `id_dt`.
  const gpu::Pipeline& indexed_kernel(KernelFamily family, const char* source, DType dt,
                                      DType id_dt);
  // DT=<dtype> and DT_KIND=<0 f32/f16/bf16, 1 f64, 2 u8/u32, 3 i64> under a prefix ("", "SRC_").
  static void add_dtype(gpu::Defines& defines, const std::string& prefix, DType dt);
  // The PushParam kind op parameters of a kernel on `dt` travel as.
  PushParam::Kind param_kind(DType dt) const;
  std::string param_type(DType dt) const;
  static gpu::Buffer& buffer(const backend::Storage& s);
  void upload(gpu::Buffer& dst, const void* data, size_t bytes);
  // rand.comp: mode 0 uniform [p0, p1), 1 normal(p0, p1).
  void random(uint32_t mode, backend::Storage& dst, double p0, double p1);
  void trim_pools();

  int ordinal_;
  std::chrono::steady_clock::time_point created_at_;
  std::unique_ptr<VkDriver> driver_;
  VulkanOptions options_;
  gpu::SourceTable sources_;
  std::unique_ptr<gpu::KernelCache> kernels_;
  std::unique_ptr<gpu::BufferPool> device_pool_, host_pool_;
  std::unique_ptr<gpu::CommandQueue> queue_;
  double creation_ms_ = 0;
  std::atomic<uint64_t> coop_matmuls_{0};
  gpu::BufferRef error_flag_;  // host-visible: {op code, index, dim size, 0}
  std::mutex rng_mu_;
  uint64_t rng_seed_ = 299792458, rng_counter_ = 0;
};

}  // namespace wick::vulkan
