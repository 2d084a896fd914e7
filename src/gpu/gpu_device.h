// A GPU backend device: wick's BackendDevice on top of the gpu/ runtime and one Driver.
//
// Everything an op does that makes no API call lives here, once for every GPU API: it validates
// what the device can do, gets its pipeline from the kernel cache (compiling outside the
// recording lock), takes its output from the pool and records its dispatches under the command
// queue's lock, then returns without waiting. Read-back (to_host) and synchronize() are the only
// places that wait. A backend is this class over its driver and the kernels in its language
// (VulkanDevice: VkDriver and kernels/glsl; CudaDevice: CuDriver and kernels/cuda), plus what only
// it has (Vulkan's cooperative-matrix GEMM, CUDA's cuBLASLt).
//
// Op families live in their own files: gpu_memory.cpp (alloc, upload, read-back, copies, casts,
// fill), gpu_elementwise.cpp, gpu_random.cpp, gpu_reduce.cpp, gpu_matmul.cpp,
// gpu_quantized.cpp, gpu_indexing.cpp, gpu_attention.cpp, gpu_custom.cpp (custom kernels);
// gpu_launch.cpp holds the launch helpers they share.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <initializer_list>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "backend/backend.h"
#include "core/strided_plan.h"
#include "gpu/buffer_pool.h"
#include "gpu/command_queue.h"
#include "gpu/device_errors.h"
#include "gpu/driver.h"
#include "gpu/kernel_cache.h"

namespace wick::gpu {

class GpuDevice;

class GpuStorage final : public backend::Storage {
 public:
  GpuStorage(GpuDevice* dev, DType dt, size_t numel, BufferRef buffer);
  // Memory lent to other code (memory_address) is reused only after the work it queued.
  ~GpuStorage() override;
  Buffer& buffer() const { return *buffer_; }
  // Marks the memory as lent to other code (its address was handed out).
  void lend() const { lent_.store(true, std::memory_order_relaxed); }

 private:
  GpuDevice* gpu_;
  BufferRef buffer_;
  mutable std::atomic<bool> lent_{false};
};

// The quantized matrix-vector kernel (qmatvec): threads and output rows per workgroup, and the
// longest x it takes (longer x: the tiled qmatmul kernel).
struct QMatVecShape {
  uint32_t threads = 32, rows = 2;
  int64_t max_rows = 8;
  // Matrices of at least wide_min_out output rows (an lm_head: tens of thousands of one-warp
  // workgroups otherwise) take wide_threads x wide_rows workgroups. Up to few_x_rows rows of x
  // (decode), the others take mid_threads x mid_rows from mid_min_out rows, else few_threads x
  // few_rows; more x rows take threads x rows.
  int64_t wide_min_out = std::numeric_limits<int64_t>::max();
  uint32_t wide_threads = 128, wide_rows = 8;
  int64_t few_x_rows = 0;
  uint32_t few_threads = 128, few_rows = 2;
  int64_t mid_min_out = std::numeric_limits<int64_t>::max();
  uint32_t mid_threads = 128, mid_rows = 4;
};
// The measured defaults per device class (the table in gpu_quantized.cpp).
QMatVecShape default_qmatvec_shape(const DeviceCaps& caps);
// The x rows up to which qmatvec quantizes x itself by default (the table in gpu_quantized.cpp).
int64_t default_qmatvec_fuse_rows(const DeviceCaps& caps);
// The longest x rows (k) qmatvec quantizes itself by default (gpu_quantized.cpp).
int64_t default_qmatvec_fuse_max_k(const DeviceCaps& caps);
// The x rows from which qmatvec stages x in shared memory by default (gpu_quantized.cpp).
int64_t default_qmatvec_stage_rows(const DeviceCaps& caps);
// The x rows up to which the feed-forward block takes qmatvec's SWIGLU_Q8 stores by default
// (gpu_quantized.cpp).
int64_t default_qmatvec_swiglu_rows(const DeviceCaps& caps);
// x rows from which qmatmul dequantizes W to f16 and multiplies on the device's tensor-core GEMM,
// where it has one (the table in gpu_quantized.cpp).
int64_t default_dequant_rows();

// Settings of one device that every GPU backend has; from_knobs() reads the WICK_* knobs and the
// measured defaults.
struct GpuOptions {
  QueueConfig queue;
  uint64_t pool_limit = 0;   // 0: default for the device
  std::string kernel_cache;  // folder; "" = off
  bool fast_math = true;
  // Subgroup arithmetic in the kernels that use it (qmatvec), where the device has it; off:
  // their shared-memory path (tests run both).
  bool subgroups = true;
  // Packed 8-bit dot products in qmatvec's integer loop, where the device has them
  // (DeviceCaps::int_dot; WICK_VK_INT_DOT); off: one multiply per element (the same bits).
  bool int_dot = true;
  QMatVecShape qmatvec;  // WICK_QMATVEC_ROWS sets max_rows
  // x rows from which qmatmul dequantizes W to f16 and calls matmul (before qmatvec's and the
  // tiled kernel's turn). -1: default_dequant_rows() where the device multiplies f16 on tensor
  // cores (f16_tensor_gemm()), never elsewhere; 0: never; n > 0: from n rows on any device (tests,
  // A/B). WICK_QMATMUL_F16 sets it.
  int64_t dequant_rows = -1;
  // Up to this many x rows, qmatvec quantizes its own x rows (with the prologue) in shared
  // memory where they fit, instead of a qact dispatch before it (decode: a dispatch less per
  // product; the same bits). 0: never. default_qmatvec_fuse_rows(), or WICK_QMATVEC_FUSE (on: every
  // m qmatvec takes, off: 0).
  int64_t qmatvec_fuse_rows = 0;
  // ... for products of at most this many x elements a row (k), and of the wide shape too when
  // set (WICK_QMATVEC_FUSE "R,K" / on; default_qmatvec_fuse_max_k).
  int64_t qmatvec_fuse_max_k = std::numeric_limits<int64_t>::max();
  bool qmatvec_fuse_wide = true;
  // From this many x rows (0: never), qmatvec copies its x rows, quantized by qact, into shared
  // memory before its dot loop (default_qmatvec_stage_rows, WICK_QMATVEC_STAGE).
  int64_t qmatvec_stage_rows = 0;
  // From this many x rows (0: never), qmatvec multiplies on the tensor cores: its MMA variant, 16
  // output rows a workgroup of qmatvec_mma_threads threads, for the 32-element formats of 8-bit
  // x, where the kernels have 8-bit MMA (DeviceCaps::int8_mma). WICK_QMATVEC_MMA.
  int64_t qmatvec_mma_rows = 0;
  uint32_t qmatvec_mma_threads = 128;
  // qmatmul_rope_kv in qmatvec's stores where it can (WICK_QMATVEC_ROPE); off: the product, then
  // rope_kv_cache.
  bool qmatvec_rope = true;
  // qmatmul_argmax in qmatvec's stores where it can (WICK_QMATVEC_ARGMAX; CUDA's default off:
  // CudaOptions::from_knobs); off: the product, then argmax.
  bool qmatvec_argmax = true;
  // qmatvec's ACT_INLINE variant loads its weight rows before its prologue and decodes them from
  // shared memory (W_STAGE) where they fit; off: from the weight buffer, after the prologue.
  bool qmatvec_weight_stage = true;
  // x rows up to which qmatmul_swiglu_ffn runs in two kernels (qmatvec's SWIGLU_Q8 stores;
  // WICK_QMATVEC_SWIGLU; default_qmatvec_swiglu_rows); more rows, or 0: the caller runs the ops
  // one after the other.
  int64_t qmatvec_swiglu_rows = 0;
  // attention_cached's workgroup for one query an item (decode): its threads, and the keys each
  // step of a split scores (the kernels' CHUNK); splits are whole steps. 32, 64, 128 or 256
  // (WICK_ATTENTION_BLOCK; the default in GpuOptions::from_knobs). Prompts take 128.
  uint32_t attention_block = 128;
  static GpuOptions from_knobs(const DeviceCaps& caps);
};

inline constexpr uint32_t kWorkgroupSize = 256;  // the default WG_SIZE of the kernels

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
  RopeKv,
  Attention,
  QActPrologue,  // qact with an rms_norm or swiglu prologue
  Dequant,
  QMatVecAct,  // qmatvec quantizing its own x (ACT_INLINE)
};

// A value of a kernel's parameter block after its header (op parameters).
struct PushParam {
  enum Kind : uint8_t { U32, F32, F64 } kind;
  double value;
  static PushParam u32(uint32_t v) { return {U32, static_cast<double>(v)}; }
};

// The words of a parameter block, laid out as std430 (and the C++/CUDA structs of
// kernels/shared/params.h) do: doubles 8-byte aligned.
class PushConstants {
 public:
  void u32(uint32_t v);
  void param(const PushParam& p);
  std::span<const uint32_t> words() const { return {w_.data(), n_}; }

 private:
  std::array<uint32_t, kMaxPushConstantBytes / 4> w_{};
  size_t n_ = 0;
};

// Whether an operand can be read by vectors of `width` elements along one of its matrix dims:
// stride 1 along it, and its length there, the other stride, the offset and every batch stride
// multiples of `width`, so that each vector is aligned and lies wholly inside or outside.
bool vectors_fit(int64_t width, int64_t stride_along, int64_t len_along, int64_t stride_other,
                 int64_t offset, const std::vector<int64_t>& batch_strides);

// A batched matmul as the matrix kernels see it (kernels/shared/params.h, WICK_PARAMS_BATCH):
// the operands in binding order, their offsets and strides, the batch dims collapsed (at most
// WICK_BATCH_RANK, a stride per operand; size-1 dims stride 0). For gemv (m == 1 or n == 1) the
// matrix operand comes first and "rows" is the output length.
struct MatmulPlan {
  backend::MatmulDims d;
  bool gemv = false;
  Buffer *first = nullptr, *second = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t a_off = 0, a_row = 0, a_k = 0, b_off = 0, b_k = 0, b_col = 0;
  std::vector<int64_t> batch_shape, a_batch, b_batch;
  // The tiled kernels' ALIGNED constant (bit 0: m % bm == 0, bit 1: n % bn, bit 2: k % bk: no
  // bound checks there) and their grid of bm x bn tiles.
  uint32_t aligned_flags(int64_t bm, int64_t bn, int64_t bk) const;
  std::array<uint32_t, 3> tile_grid(int64_t bm, int64_t bn) const;
};

// The batch dims of a matmul's operands and its contiguous output, collapsed together (operand
// 0: a, 1: b, 2: the output).
StridedPlan<3> batch_plan(backend::View a, backend::View b, const backend::MatmulDims& d);

// The source of the user's kernel `spec` (wick/custom_kernel.h) for devices of `kind` (GLSL for
// Vulkan, CUDA for CUDA): the declarations of its buffers and parameters around its body.
std::string custom_kernel_source(const KernelSpec& spec, DeviceKind kind);

class GpuDevice : public backend::BackendDevice {
 public:
  ~GpuDevice() override;

  int ordinal() const override { return ordinal_; }
  std::string name() const override;

  backend::StoragePtr alloc(DType dt, size_t numel) override;
  backend::StoragePtr from_host(DType dt, const void* data, size_t numel) override;
  void to_host(backend::View src, void* dst, DType dst_dt) override;
  void synchronize() override;
  // Memory shared with other code, where the driver gives addresses (CUDA): gpu_memory.cpp.
  backend::StoragePtr adopt_memory(DType dt, size_t numel, std::byte* data,
                                   std::shared_ptr<void> owner) override;
  std::byte* memory_address(const backend::Storage& s) override;
  // Waits for the work other code queued on the device (Driver::wait_for_other_work); never
  // throws (storage destructors call it).
  void wait_for_other_work() noexcept;

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

  void rope_kv_cache(backend::View q, backend::View k, backend::View v,
                     const backend::CacheView& k_cache, const backend::CacheView& v_cache,
                     const backend::RopeTableViews& tables, backend::View pos,
                     const backend::View* slots, bool interleaved,
                     backend::Storage& q_out) override;
  void attention_cached(backend::View q, backend::View k_cache, backend::View v_cache,
                        backend::View pos, const backend::View* slots,
                        const AttentionOptions& options, backend::Storage& dst) override;

  // The shared GEMM: gemv for m == 1 or n == 1, the tiled SIMT kernel otherwise. Backends with a
  // faster path for some products (tensor cores) override it and call this for the rest.
  void matmul(backend::View a, backend::View b, const backend::MatmulDims& d,
              backend::Storage& dst) override;
  void qmatmul(backend::View x, const backend::QPrologue& prologue, const backend::Storage& wblocks,
               QuantType type, int64_t n_out, int64_t k, const backend::View* residual,
               backend::Storage& dst) override;
  bool qmatmul_rope_kv(backend::View x, const backend::QPrologue& prologue,
                       const backend::Storage& wblocks, QuantType type, int64_t n_out, int64_t k,
                       const backend::QRopeKv& rope, backend::Storage& q_out) override;
  backend::StoragePtr qmatmul_swiglu_ffn(backend::View x, const backend::QPrologue& prologue,
                                         const backend::QWeights& gate_up,
                                         const backend::QWeights& down,
                                         const backend::View* residual) override;
  bool qmatmul_argmax(backend::View x, const backend::QPrologue& prologue,
                      const backend::QWeights& w, backend::View ids) override;
  void qmatmul_rows(backend::View ids, const backend::Storage& wblocks, QuantType type,
                    int64_t n_out, int64_t k, backend::Storage& dst) override;
  // Whether matmul multiplies f16 on tensor cores (backends that can override it).
  virtual bool f16_tensor_gemm() const { return false; }
  // A block-format weight's bytes a row, after the checks every kernel on it needs (a kernel for
  // the format, 16-bit storage, the weight within one binding); Unsupported naming `op` else.
  int64_t weight_row_bytes(const char* op, const backend::Storage& wblocks, QuantType type,
                           int64_t n_out, int64_t k) const;
  // Whether qmatmul of m rows of x dequantizes W to f16 for matmul (GpuOptions::dequant_rows).
  bool qmatmul_dequantizes(int64_t m) const;

  void index_select(backend::View src, backend::View ids, size_t dim,
                    backend::Storage& dst) override;
  void gather(backend::View src, backend::View ids, size_t dim, backend::Storage& dst) override;
  void scatter_add(backend::Storage& dst, const Shape& dst_shape, backend::View ids,
                   backend::View src, size_t dim) override;
  void index_add(backend::Storage& dst, const Shape& dst_shape, backend::View ids,
                 backend::View src, size_t dim) override;

  bool can_capture() const override { return driver_->can_capture(); }
  std::unique_ptr<backend::CapturedWork> capture(const std::function<void()>& f) override;

  void set_seed(uint64_t seed) override;
  void rand_uniform(backend::Storage& dst, double lo, double hi) override;
  void rand_normal(backend::Storage& dst, double mean, double std) override;

  // ---- custom kernels (gpu_custom.cpp) ------------------------------------------------------
  // The user's kernels of wick/custom_kernel.h, and the source generated for them here.
  void custom_kernel(const KernelSpec& spec, const std::vector<const backend::Storage*>& inputs,
                     const std::vector<backend::Storage*>& outputs,
                     const std::vector<uint32_t>& params, uint64_t threads) override;
  // A test kernel in the driver's language (it may #include wick's headers, e.g.
  // "include/dtype.glsl"). Buffers bind in order: inputs, then outputs. Inputs are only read and
  // outputs written: the hazard tracker orders it against other ops by exactly these
  // declarations.
  struct CustomKernel {
    std::string name;
    std::string source;
    Defines defines;
    std::vector<uint32_t> constants;
    uint32_t block = kWorkgroupSize;
  };
  void run_custom(const CustomKernel& kernel, std::initializer_list<const backend::Storage*> inputs,
                  std::initializer_list<backend::Storage*> outputs,
                  std::span<const uint32_t> push_constants, std::array<uint32_t, 3> groups);

  // ---- introspection (tests, wick info) ---------------------------------------------------
  const DeviceCaps& device_caps() const { return driver_->caps(); }
  const GpuOptions& gpu_options() const { return options_; }
  double creation_ms() const { return creation_ms_; }
  struct Stats {
    CommandQueue::Stats queue;
    BufferPool::Stats device_pool, host_pool;
    KernelCache::Stats kernels;
    uint64_t coop_matmuls = 0;     // matmuls recorded on tensor cores
    uint64_t staged_qmatvecs = 0;  // qmatvec products that staged x in shared memory (ACT_STAGE)
    uint64_t mma_qmatvecs = 0;     // qmatvec products on the tensor cores (MMA)
  };
  Stats stats() const;

 protected:
  // Takes the driver; `options` were derived from its caps (GpuOptions::from_knobs, maybe edited).
  GpuDevice(int ordinal, std::unique_ptr<Driver> driver, const GpuOptions& options);

  // An operand of an element-wise kernel: a buffer read or written through a layout.
  struct Operand {
    Buffer* buffer;
    const Layout* layout;
  };
  struct BoundView {
    Buffer* buffer;
    Access access = Access::Read;
  };
  // Runs a kernel using include/rows over x split into outer dims and `inner` dims (sorted):
  // x binds at 0, extra buffers after it, `out` (contiguous over the outer dims) last.
  // per_group: groups_per_row workgroups per outer index, else a thread.
  void launch_rows(const Pipeline& pipeline, backend::View x, const std::vector<size_t>& inner,
                   Buffer& out, bool per_group, std::initializer_list<BoundView> extras = {},
                   std::initializer_list<PushParam> params = {}, uint64_t groups_per_row = 1);
  MatmulPlan plan_matmul(backend::View a, backend::View b, const backend::MatmulDims& d) const;
  // Records a matrix kernel over the plan (the batch along the grid's z, in several dispatches
  // beyond the device's limit).
  void record_matmul(const Pipeline& pipeline, std::array<uint32_t, 3> groups, const MatmulPlan& p,
                     backend::Storage& dst);
  // What qmatvec's stores do besides storing the product (record_qmatmul; each checked by its
  // caller to be one qmatvec takes).
  struct QMatVecStores {
    // qmatmul_rope_kv: the product goes to rope_kv_cache's outputs (ROPE_KV), dst being q_out.
    const backend::QRopeKv* rope = nullptr;
    // qmatmul_swiglu_ffn's gate/up product (SWIGLU_Q8): dst gets h = silu(gate) * up (m, n_out
    // / 2) and this buffer h's 8-bit rows, as qact would quantize them (the same format as x's).
    Buffer* swiglu_rows = nullptr;
    // qmatmul_swiglu_ffn's down product: x's 8-bit rows, already quantized (no qact).
    Buffer* act_rows = nullptr;
    // qmatmul_argmax: each x row's argmax goes to these ids (ARGMAX), dst being their storage.
    const backend::View* argmax_ids = nullptr;
  };
  // qmatmul's work, with `stores` as they say.
  void record_qmatmul(backend::View x, const backend::QPrologue& prologue,
                      const backend::Storage& wblocks, QuantType type, int64_t n_out, int64_t k,
                      const backend::View* residual, const QMatVecStores& stores,
                      backend::Storage& dst);
  // Whether qmatmul_swiglu_ffn's two kernels take these products of m x rows.
  bool swiglu_stores_take(int64_t m, const backend::QWeights& gate_up,
                          const backend::QWeights& down) const;
  // qmatvec's workgroup shape for a matrix of n_out rows and m rows of x, and whether it takes
  // them.
  QMatVecShape qmatvec_shape(int64_t n_out, int64_t m) const;
  bool qmatvec_takes(int64_t m) const;
  // Whether qmatvec's product of m x rows and `type` runs its MMA variant.
  bool qmatvec_mma(int64_t m, QuantType type) const;
  // norm: 0 softmax, 1 log_softmax, 2 rms_norm, 3 layer_norm.
  void norm(uint32_t kind, const char* name, backend::View x, const backend::View* alpha,
            const backend::View* beta, double eps, backend::Storage& dst);
  // Runs a strided kernel (include/strided) over out's shape: inputs bind at 0.., the output
  // last. out_strided: the kernel writes through out's layout (else contiguous).
  // error_record: one more buffer bound last, the op's error record (gpu/device_errors.h),
  // written only through order-free atomics. Returns the submission that holds the op.
  uint64_t launch_strided(const Pipeline& pipeline, std::initializer_list<Operand> inputs,
                          Operand out, bool out_strided,
                          std::initializer_list<PushParam> params = {},
                          Buffer* error_record = nullptr);
  // Raises the errors kernels found in this thread's finished ops (gpu/device_errors.h).
  void raise_device_errors();
  // For the ops that can fail (what the CPU refuses: out-of-range ids, integer division by
  // zero): registers the op's error record, waits for the op's submission and raises its error
  // here, as the CPU would. context: added to a division error's message (the shape).
  void refuse_device_errors(BufferRef record, uint64_t submission, const char* op,
                            std::string context = {});
  // index_select / gather (index) and scatter_add / index_add (scatter) launches.
  void launch_index(uint32_t mode, const char* op, backend::View src, backend::View ids, size_t dim,
                    backend::Storage& dst);
  void launch_scatter(uint32_t mode, const char* op, backend::Storage& dst, const Shape& dst_shape,
                      backend::View ids, backend::View src, size_t dim);
  // Workgroups for n invocations of a kernel (WG_SIZE each) as a 2-D grid within device limits.
  std::array<uint32_t, 3> grid(uint64_t n) const;
  // Throws Unsupported naming `op` when the device cannot hold `dt` (require_storage), or has no
  // compute kernels for it (require: i32 is only stored, copied and converted).
  void require(DType dt, const char* op) const;
  void require_storage(DType dt, const char* op) const;
  // The pipeline of `family` for `values` (everything its key depends on besides the device);
  // make_key() builds the key the first time only.
  template <typename MakeKey>
  const Pipeline& kernel(KernelFamily family, std::initializer_list<uint32_t> values,
                         MakeKey&& make_key) {
    KernelId id;
    id.family = static_cast<uint32_t>(family);
    WICK_ASSERT(values.size() <= id.values.size());
    std::copy(values.begin(), values.end(), id.values.begin());
    return kernels_->pipeline(id, make_key);
  }
  // The key of the kernel family `source` ("unary": kernels/<api>/unary.<ext>) with the device's
  // capability defines and a workgroup of `block` threads.
  KernelKey key_for(const char* source, Defines defines, std::vector<uint32_t> constants = {},
                    uint32_t block = kWorkgroupSize) const;
  // copy converting `from` to `to` (a plain copy when equal).
  const Pipeline& copy_kernel(DType from, DType to);
  // A kernel of `source` on `dt` whose op `code` is specialization constant 0 (unary, compare,
  // rand, norm, rope, sort); with_params: its op parameters travel as PARAM_T (param_type(dt)).
  const Pipeline& op_kernel(KernelFamily family, const char* source, uint32_t code, DType dt,
                            bool with_params);
  // index / scatter for values of `dt` and ids of `id_dt`.
  const Pipeline& indexed_kernel(KernelFamily family, const char* source, DType dt, DType id_dt);
  // DT=<dtype> and DT_KIND=<0 f32/f16/bf16, 1 f64, 2 u8/u32, 3 i64, 4 i32> under a prefix ("",
  // "SRC_").
  static void add_dtype(Defines& defines, const std::string& prefix, DType dt);
  // The PushParam kind op parameters of a kernel on `dt` travel as.
  PushParam::Kind param_kind(DType dt) const;
  std::string param_type(DType dt) const;
  static Buffer& buffer(const backend::Storage& s);
  void upload(Buffer& dst, const void* data, size_t bytes);
  // rand: mode 0 uniform [p0, p1), 1 normal(p0, p1).
  void random(uint32_t mode, backend::Storage& dst, double p0, double p1);
  void trim_pools();
  // The split counters for `rows` rows (split_counters_), zeroed on the queue when new.
  Buffer& split_counters(size_t rows);
  Driver& driver() const { return *driver_; }

  int ordinal_;
  std::chrono::steady_clock::time_point created_at_;
  std::unique_ptr<Driver> driver_;
  GpuOptions options_;
  SourceTable sources_;
  std::unique_ptr<KernelCache> kernels_;
  std::unique_ptr<BufferPool> device_pool_, host_pool_;
  std::unique_ptr<CommandQueue> queue_;
  double creation_ms_ = 0;
  std::atomic<uint64_t> coop_matmuls_{0};
  std::atomic<uint64_t> staged_qmatvecs_{0};
  std::atomic<uint64_t> mma_qmatvecs_{0};
  std::unique_ptr<DeviceErrors> errors_;
  BufferRef unused_record_;  // bound by integer binary ops that cannot fail (never read)
  // The split counters of ops whose rows are split over workgroups (attention_cached, long
  // reductions): a u32 per row, zero between ops (each op's last workgroup of a row resets its
  // counter). Grown (a new zeroed buffer) when an op has more rows.
  std::mutex split_counters_mu_;
  BufferRef split_counters_;
  size_t split_counter_rows_ = 0;
  std::mutex rng_mu_;
  uint64_t rng_seed_ = 299792458, rng_counter_ = 0;
};

}  // namespace wick::gpu
