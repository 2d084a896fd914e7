// The narrow waist: the one interface every backend implements (CPU, Vulkan, CUDA).
//
// The front end (src/core) validates arguments, resolves broadcasting into strided layouts,
// computes output shapes and dtypes, allocates the output through `alloc`, and then calls one of
// the op methods below. A backend only does arithmetic: every input arrives as (storage, layout),
// every output is a freshly allocated contiguous storage unless the method says otherwise.
// A backend that lacks an op or a dtype throws Error(Unsupported) naming both; never a fallback.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "wick/attention.h"
#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/quant_type.h"
#include "wick/shape.h"

namespace wick {
struct KernelSpec;  // wick/custom_kernel.h
}  // namespace wick

namespace wick::backend {

class BackendDevice;

// Untyped device memory of `numel` elements of `dtype`. Owned through shared_ptr; views share it.
class Storage {
 public:
  Storage(BackendDevice* device, DType dtype, size_t numel)
      : device_(device), dtype_(dtype), numel_(numel) {}
  virtual ~Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  BackendDevice& device() const { return *device_; }
  DType dtype() const { return dtype_; }
  size_t numel() const { return numel_; }
  size_t nbytes() const { return numel_ * dtype_size(dtype_); }

 private:
  BackendDevice* device_;
  DType dtype_;
  size_t numel_;
};
using StoragePtr = std::shared_ptr<Storage>;

// An input operand: storage plus the layout to read it through.
struct View {
  const Storage& storage;
  const Layout& layout;
};

enum class UnaryOp {
  Neg,
  Abs,
  Exp,
  Log,
  Sin,
  Cos,
  Tanh,
  Sqrt,
  Sqr,
  Recip,
  Relu,
  Gelu,
  GeluErf,
  Erf,
  Silu,
  Sigmoid,
  Floor,
  Ceil,
  Round,
  Sign,
  Affine,  // x * p0 + p1
  Powf,    // x ^ p0
  Elu,     // alpha = p0
  Clamp,   // [p0, p1]
};
const char* unary_op_name(UnaryOp op);
struct UnaryParams {
  double p0 = 0, p1 = 0;
};

enum class BinaryOp { Add, Sub, Mul, Div, Maximum, Minimum, Pow };
const char* binary_op_name(BinaryOp op);

enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge };
const char* cmp_op_name(CmpOp op);

// Mean: the sum divided by the reduced count before the one rounding to the dtype (float dtypes).
enum class ReduceOp { Sum, Max, Min, ArgMax, ArgMin, Mean };
const char* reduce_op_name(ReduceOp op);

// Sizes of a batched matmul. Both operands arrive with shape (batch..., m, k) / (batch..., k, n)
// where the batch dims are already broadcast to the same shape (broadcast dims have stride 0).
struct MatmulDims {
  int64_t batch, m, n, k;
};

// Work recorded once by BackendDevice::capture() and submitted again by replay().
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  virtual void replay() = 0;
  virtual uint64_t ops() const = 0;
  virtual uint64_t dispatches() const = 0;
};

// A KV cache written in place: a contiguous (b, kvh, max_seq, d) layout (any start offset).
struct CacheView {
  Storage& storage;
  const Layout& layout;
};
// rope_kv_cache's rotary tables, each (rows >= max_seq, d/2) with any strides.
struct RopeTableViews {
  View cos_q, sin_q, cos_k, sin_k;
};

// What qmatmul applies to x before the product, in x's dtype, as the ops it stands for compute
// and round it (QMatMul::forward_rms_norm, forward_swiglu):
//   None     x itself.
//   RmsNorm  x.rms_norm(*operand, eps): operand = alpha, 1-D of k elements.
//   SwiGlu   x.silu() * *operand: x is the gate, operand = up, (m, k) like x (any strides).
// The operand has x's dtype. A backend fuses it into the product where it can, else runs those
// ops first: either way dst is, bit for bit, qmatmul of what they would have stored.
struct QPrologue {
  enum class Kind { None, RmsNorm, SwiGlu };
  Kind kind = Kind::None;
  const View* operand = nullptr;
  double eps = 0;
};

// Where qmatmul_rope_kv sends the product (decode's fused q/k/v projection): its n_out =
// (h + 2 kvh) d columns of x row i are batch item i's q, k and v for one new token (t = 1), as
// rope_kv_cache takes them; the other fields are rope_kv_cache's, checked by its front end.
struct QRopeKv {
  int64_t h, kvh, d;
  CacheView k_cache, v_cache;
  RopeTableViews tables;
  View pos;
  const View* slots;  // null: item i in slot i
  bool interleaved;
};

// A quantized weight as qmatmul takes it: the blocks on the device, their format and W's shape.
struct QWeights {
  const Storage* blocks;
  QuantType type;
  int64_t n_out, k;
};

class BackendDevice {
 public:
  virtual ~BackendDevice() = default;

  virtual DeviceKind kind() const = 0;
  virtual int ordinal() const = 0;
  virtual std::string name() const = 0;
  uint64_t id() const { return id_; }

  // ---- memory -----------------------------------------------------------------------------
  // Uninitialised storage (poisoned with 0xff bytes when poison_allocations() is on).
  virtual StoragePtr alloc(DType dt, size_t numel) = 0;
  virtual StoragePtr from_host(DType dt, const void* data, size_t numel) = 0;
  // Writes the view's elements, in row-major order, converted to `dst_dt`, into dst.
  virtual void to_host(View src, void* dst, DType dst_dt) = 0;
  virtual void synchronize() = 0;
  // ---- memory shared with other code (Tensor::from_blob, Tensor::data_ptr) ------------------
  // Storage over memory other code allocated, used in place: `numel` elements of `dt` at `data`,
  // an address in this device's memory (the host's for the CPU, the device's for CUDA), aligned
  // to their size. `owner` keeps the memory alive; it is dropped once the last tensor of it is
  // gone and no queued op uses it any more. Error(Device) by default (memory without addresses).
  virtual StoragePtr adopt_memory(DType dt, size_t numel, std::byte* data,
                                  std::shared_ptr<void> owner);
  // The address of the storage's element 0 in this device's memory, for other code to use in
  // place: GPUs first wait until every op recorded on the device has finished. nullptr where
  // the device's memory has no address other code can use (Vulkan).
  virtual std::byte* memory_address(const Storage&) { return nullptr; }

  // ---- capture and replay -----------------------------------------------------------------
  // Whether capture() works here (GPUs; the CPU runs ops as they come).
  virtual bool can_capture() const { return false; }
  // Records the ops f() runs on this device in this thread without running them (see
  // Device::capture). Unsupported by default.
  virtual std::unique_ptr<CapturedWork> capture(const std::function<void()>& f);

  // ---- custom kernels (wick/custom_kernel.h) ----------------------------------------------
  // Runs the user's kernel `spec` (checked by the front end): inputs of the declared dtypes,
  // contiguous from element 0, only read; outputs freshly allocated, only written; `params` the
  // parameter block packed as declared; `threads` 0: checks only. Unsupported by default.
  virtual void custom_kernel(const KernelSpec& spec, const std::vector<const Storage*>& inputs,
                             const std::vector<Storage*>& outputs,
                             const std::vector<uint32_t>& params, uint64_t threads);

  // ---- element-wise (dst: contiguous, shape = src shape) ----------------------------------
  virtual void unary(UnaryOp op, UnaryParams p, View x, Storage& dst) = 0;
  virtual void binary(BinaryOp op, View a, View b, Storage& dst) = 0;
  virtual void compare(CmpOp op, View a, View b, Storage& dst /* u8 */) = 0;
  virtual void where_cond(View cond, View on_true, View on_false, Storage& dst) = 0;
  // dst: any dtype; converts.
  virtual void cast(View x, Storage& dst) = 0;
  // Copies src's elements into dst's elements through dst_layout (same shape, same dtype).
  virtual void copy_strided(View src, Storage& dst, const Layout& dst_layout) = 0;
  // Sets the elements of dst selected by dst_layout to value.
  virtual void fill(Storage& dst, const Layout& dst_layout, double value) = 0;

  // ---- reductions -------------------------------------------------------------------------
  // dims: sorted, unique. dst has x's shape with dims set to 1 (contiguous); dtype x's, or u32
  // for ArgMax/ArgMin (which take exactly one dim).
  virtual void reduce(ReduceOp op, View x, const std::vector<size_t>& dims, Storage& dst) = 0;
  virtual void softmax_last_dim(View x, Storage& dst) = 0;
  virtual void log_softmax_last_dim(View x, Storage& dst) = 0;
  virtual void rms_norm(View x, View alpha, double eps, Storage& dst) = 0;
  virtual void layer_norm(View x, View alpha, View beta, double eps, Storage& dst) = 0;
  // x: (b, h, t, d); cos/sin: (b, t, d/2) with stride-0 b when shared.
  virtual void rope(View x, View cos, View sin, bool interleaved, Storage& dst) = 0;
  // dst: u32 indices, x's shape.
  virtual void arg_sort_last_dim(View x, bool ascending, Storage& dst) = 0;

  // ---- decode attention (wick/attention.h) ------------------------------------------------
  // `pos` is a u32 view of one element (every batch item) or of b contiguous ones (item i at
  // pos[i]); `slots`, when not null, b contiguous u32 elements: item i uses cache slot slots[i]
  // of caches (S, kvh, max_seq, d), else slot i of (b, kvh, max_seq, d). Their values are read on
  // the device. Shapes were checked by the front end except pos + t <= max_seq and slot < S,
  // which the backend checks (OutOfRange, naming the op: the CPU at once; a GPU in the op's
  // error record, without waiting) before it reads or writes any cache row.
  // q (b, h, t, d), k and v (b, kvh, t, d): any strides; the tables (rows >= max_seq, d/2): any
  // strides; everything of one float dtype. The caches are written in place: rows
  // pos .. pos + t - 1 of k_cache get the rotated k, of v_cache v. q_out: contiguous (b, h, t, d).
  // No input shares storage with a cache (the front end copies such inputs first).
  virtual void rope_kv_cache(View q, View k, View v, const CacheView& k_cache,
                             const CacheView& v_cache, const RopeTableViews& tables, View pos,
                             const View* slots, bool interleaved, Storage& q_out) = 0;
  // dst (b, h, t, d) contiguous = causal softmax(q k^T) v over cache rows 0 ..= pos + i for
  // query i (within options.window; scores capped by options.softcap: both checked by the front
  // end); q (b, h, t, d) any strides, caches contiguous (b or S, kvh, max_seq, d).
  virtual void attention_cached(View q, View k_cache, View v_cache, View pos, const View* slots,
                                const AttentionOptions& options, Storage& dst) = 0;

  // ---- matmul -----------------------------------------------------------------------------
  virtual void matmul(View a, View b, const MatmulDims& d, Storage& dst) = 0;
  // dst (m, n_out) f32 = prologue(x (m, k)) @ W^T (+ residual) for W (n_out, k) in a ggml block
  // format. `residual`, when given: f32 (m, n_out), any strides, added to each product as
  // `residual + y` would add it (bit for bit); dst does not overlap it.
  // `wblocks` is a U8 storage on this device holding W's rows of k / block_elems blocks back to
  // back (uploaded once by QMatMul). x: f32/f16/bf16, any strides; m, n_out > 0; k > 0, a
  // multiple of the block size.
  // Only GPU backends implement it: on the CPU, QMatMul (src/quantized/qmatmul.cpp) multiplies
  // with weights it prepared once (repacked, or dense), which this call could not carry, so
  // CpuDevice refuses it with Unsupported. A backend without a kernel for `type` does the same.
  virtual void qmatmul(View x, const QPrologue& prologue, const Storage& wblocks, QuantType type,
                       int64_t n_out, int64_t k, const View* residual, Storage& dst) = 0;
  // rope_kv_cache(q, k, v, ...) of qmatmul's product split into q, k and v (QRopeKv), in one
  // kernel where the backend has one for these arguments: q_out (b, h, 1, d) contiguous f32 gets
  // rope_kv_cache's q and the caches their rows, bit for bit as the two ops would write them.
  // Returns false, having recorded nothing, where it has none; the caller then runs the two.
  virtual bool qmatmul_rope_kv(View /*x*/, const QPrologue& /*prologue*/,
                               const Storage& /*wblocks*/, QuantType /*type*/, int64_t /*n_out*/,
                               int64_t /*k*/, const QRopeKv& /*rope*/, Storage& /*q_out*/) {
    return false;
  }
  // A feed-forward block: (m, down.n_out) f32, contiguous, = (residual +) down(silu(gate) * up)
  // where [gate | up] (m, gate_up.n_out = 2 down.k) = prologue(x) @ gate_up^T, each product as
  // qmatmul computes it (x quantized for down as qmatmul with a SwiGlu prologue would): bit for
  // bit qmatmul(gate_up) then qmatmul(down, SwiGlu). In fewer kernels where the backend has them;
  // null, having allocated and recorded nothing, where it has none (the caller runs the two).
  virtual StoragePtr qmatmul_swiglu_ffn(View /*x*/, const QPrologue& /*prologue*/,
                                        const QWeights& /*gate_up*/, const QWeights& /*down*/,
                                        const View* /*residual*/) {
    return nullptr;
  }
  // argmax(-1) of qmatmul's product (m, w.n_out) (each row's first maximum, NaN the largest, as
  // reduce(ArgMax) picks) into ids: m u32 elements along any stride (a 1-D view), in one kernel
  // where the backend has one for these arguments, no logits stored. Returns false, having
  // recorded nothing, where it has none; the caller then runs the product and argmax.
  virtual bool qmatmul_argmax(View /*x*/, const QPrologue& /*prologue*/, const QWeights& /*w*/,
                              View /*ids*/) {
    return false;
  }
  // QMatMul::rows: dst (n, k) f32 contiguous = rows ids[0 .. n) of W (n_out, k), each value as
  // dequantize_row gives it (bit for bit); ids: n u32 elements along any stride (a 1-D view).
  // An id >= n_out gives a row of zeros and OutOfRange, naming the op, at this thread's next
  // wait (nothing waits here, so a captured step can hold it). GPU backends; elsewhere (and for a
  // format without a kernel) Unsupported: the CPU's QMatMul dequantizes its own host rows.
  virtual void qmatmul_rows(View ids, const Storage& wblocks, QuantType type, int64_t n_out,
                            int64_t k, Storage& dst);
  // Whether qmatmul() runs on this device (false: QMatMul multiplies on the host with weights it
  // prepares, as for the CPU).
  virtual bool runs_qmatmul() const { return true; }

  // ---- indexing ---------------------------------------------------------------------------
  // Indices are u8/u32/i64 and already checked against the indexed dim's size by the front end
  // only where cheap; backends must still refuse (OutOfRange) or skip nothing silently.
  virtual void index_select(View src, View ids, size_t dim, Storage& dst) = 0;
  virtual void gather(View src, View ids, size_t dim, Storage& dst) = 0;
  // In place on dst (contiguous, shape dst_shape): dst[.. ids[..] ..] += src[..].
  virtual void scatter_add(Storage& dst, const Shape& dst_shape, View ids, View src,
                           size_t dim) = 0;
  virtual void index_add(Storage& dst, const Shape& dst_shape, View ids, View src, size_t dim) = 0;

  // ---- random -----------------------------------------------------------------------------
  virtual void set_seed(uint64_t seed) = 0;
  virtual void rand_uniform(Storage& dst, double lo, double hi) = 0;
  virtual void rand_normal(Storage& dst, double mean, double std) = 0;

 protected:
  BackendDevice();

 private:
  uint64_t id_;
};

// Checks that a layout stays inside its storage (Internal otherwise): the front end already made
// sure of it, so only a bug can fail it, but a backend must not corrupt memory over one.
void check_span(const Layout& l, const Storage& s, const char* op);

// Test hook: when on, every alloc fills new storage with 0xff bytes so unwritten outputs show.
void set_poison_allocations(bool on);
bool poison_allocations();

}  // namespace wick::backend
