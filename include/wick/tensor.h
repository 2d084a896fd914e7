// wick::Tensor: an n-dimensional array on a device. A Tensor is a cheap shared handle: copying it
// copies a pointer. Tensors are immutable except through the explicit in-place ops (slice_set,
// zero_set, const_set), which write into the tensor's storage and so are seen by every view of it.
// Ops on GPU devices are recorded and return at once; reading values (to_vec, to_scalar) waits.
// A default-constructed Tensor is undefined: it can be tested (defined()), printed, copied,
// assigned and destroyed, and every other method throws Error(Shape, "... undefined tensor").
// Compound assignment (a += b, a *= 2, ...) rebinds the handle `a` to a new tensor, as
// a = a + b would: the old tensor, and every other handle or view of it, keeps its values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/shape.h"

namespace wick {

namespace backend {
class Storage;
}

class Tensor {
 public:
  // ---- creation ---------------------------------------------------------------------------
  // Copies numel(shape) elements of dtype `dt` from `data`.
  static Tensor from_data(const void* data, DType dt, const Shape& shape,
                          const Device& dev = Device::cpu());
  template <typename T>
  static Tensor from_vec(const std::vector<T>& v, const Shape& shape,
                         const Device& dev = Device::cpu()) {
    check_numel(v.size(), shape, "from_vec");
    return from_data(v.data(), dtype_of<T>::value, shape, dev);
  }
  template <typename T>
  static Tensor scalar(T v, const Device& dev = Device::cpu()) {
    return from_data(&v, dtype_of<T>::value, Shape{}, dev);
  }
  static Tensor zeros(const Shape& shape, DType dt, const Device& dev = Device::cpu());
  static Tensor ones(const Shape& shape, DType dt, const Device& dev = Device::cpu());
  static Tensor full(double value, const Shape& shape, DType dt,
                     const Device& dev = Device::cpu());
  // [start, end) in steps of `step` (step != 0).
  static Tensor arange(double start, double end, double step, DType dt,
                       const Device& dev = Device::cpu());
  static Tensor arange(int64_t end, DType dt, const Device& dev = Device::cpu()) {
    return arange(0, static_cast<double>(end), 1, dt, dev);
  }
  static Tensor arange(double start, double end, DType dt, const Device& dev = Device::cpu()) {
    return arange(start, end, 1, dt, dev);
  }
  // `steps` values from start to end inclusive, evenly spaced (computed in f64, as PyTorch:
  // the first half counts up from start, the second half down from end; steps >= 0).
  static Tensor linspace(double start, double end, int64_t steps, DType dt,
                         const Device& dev = Device::cpu());
  static Tensor eye(int64_t n, DType dt, const Device& dev = Device::cpu());
  // Uniform in [lo, hi) / normal(mean, std), from the device's seeded generator. Float dtypes.
  static Tensor rand(double lo, double hi, const Shape& shape, DType dt,
                     const Device& dev = Device::cpu());
  static Tensor randn(double mean, double std, const Shape& shape, DType dt,
                      const Device& dev = Device::cpu());
  // This tensor's shape, dtype and device, filled.
  Tensor zeros_like() const;
  Tensor ones_like() const;
  Tensor full_like(double value) const;

  // ---- memory shared with other code, without a copy (CPU and CUDA tensors) ----------------
  // A contiguous tensor on `dev` over numel(shape) elements of `dt` at `data`, which it uses in
  // place: writes through data_ptr() or the in-place ops are seen by the caller and vice versa.
  // On the CPU `data` is host memory. On a CUDA device it is that device's memory in its primary
  // context (cudaMalloc, cuMemAlloc, PyTorch's allocator, ...), checked: the whole range must
  // be device memory of that device (Error(Device) otherwise). Before it returns, from_blob
  // waits for the work queued on the CUDA legacy default stream (where PyTorch, CuPy and
  // cudaMemcpy put work unless told otherwise; it also waits for every blocking stream), so wick
  // reads what that work wrote; finish work on non-blocking streams first. Devices whose memory
  // has no address other code can use (Vulkan) refuse it with Error(Device).
  // `data` must be aligned to dtype_size(dt) bytes (Error(Unsupported) otherwise) and non-null
  // unless the shape is empty. `deleter(data)` runs exactly once, when the last tensor or view
  // using the memory is destroyed and no queued op of wick's uses it any more (on a GPU that can
  // be as late as the device's next synchronization or read-back); without one the caller keeps
  // the memory alive that long. When from_blob throws, it has taken nothing: the deleter does
  // not run.
  static Tensor from_blob(void* data, const Shape& shape, DType dt, const Device& dev,
                          std::function<void(void*)> deleter = {});
  // On the CPU.
  static Tensor from_blob(void* data, const Shape& shape, DType dt,
                          std::function<void(void*)> deleter = {});
  // The address of this view's first element (storage offset applied; walk it with layout()'s
  // strides), valid while the tensor lives: host memory for CPU tensors; for CUDA tensors an
  // address in the device's memory (primary context), for other code to use in place. On a
  // CUDA device data_ptr() first waits until every op recorded on the device has finished, so
  // the memory holds the tensor's values; ops recorded later are not waited for (order your
  // accesses against them with device().synchronize()). Once the last tensor of that storage is
  // gone, wick waits for the work queued on the CUDA legacy default stream before it reuses the
  // memory, so such work may still read it. Other devices (Vulkan): Error(Device) naming the
  // device. The typed forms check that T is the tensor's dtype (Error(DType)).
  void* data_ptr();
  const void* data_ptr() const;
  template <typename T>
  T* data_ptr() {
    check_data_type(dtype_of<T>::value);
    return static_cast<T*>(data_ptr());
  }
  template <typename T>
  const T* data_ptr() const {
    check_data_type(dtype_of<T>::value);
    return static_cast<const T*>(data_ptr());
  }

  // ---- properties -------------------------------------------------------------------------
  const Shape& shape() const;
  const std::vector<int64_t>& dims() const { return shape().dims(); }
  int64_t dim(int64_t d) const;  // size of dim d (negative counts from the end)
  size_t rank() const { return shape().rank(); }
  int64_t numel() const { return shape().numel(); }
  DType dtype() const;
  const Device& device() const;
  const Layout& layout() const;
  bool is_contiguous() const { return layout().is_contiguous(); }
  std::string str() const;  // "Tensor[2, 3]{f32, cpu}"
  // The values (read to the host: waits for the device), then str(). PyTorch's layout: nested
  // brackets; more than 1000 elements print the first and last 3 of every dim longer than 6,
  // "..." between; floats print 4 decimals, or integral as "1.", or in scientific notation when
  // their magnitudes span more than 1000x or pass 1e8 or fall under 1e-4. operator<< prints it.
  std::string to_string() const;
  bool defined() const { return impl_ != nullptr; }

  // ---- reading values (waits for the device) ----------------------------------------------
  // Elements in row-major order of the view, converted to T.
  template <typename T>
  std::vector<T> to_vec() const {
    std::vector<T> out = host_vector<T>(numel(), "to_vec");
    read_into(out.data(), dtype_of<T>::value);
    return out;
  }
  std::vector<double> to_vec_f64() const { return to_vec<double>(); }
  template <typename T>
  T to_scalar() const {
    if (numel() != 1) fail(ErrorKind::Shape, "to_scalar", "tensor has shape ", shape());
    return to_vec<T>()[0];
  }
  // Writes numel() elements of dtype `dt` (converting) into `dst`.
  void read_into(void* dst, DType dt) const;

  // ---- views (no copy) --------------------------------------------------------------------
  Tensor narrow(int64_t dim, int64_t start, int64_t len) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor t() const;  // swaps the last two dims
  // A view wherever the elements, in row-major order, already lie at strides of the new shape
  // (always when contiguous; also e.g. splitting the last dim of narrowed rows), otherwise a
  // contiguous copy, as PyTorch's reshape. One dim may be -1 (inferred).
  Tensor reshape(const Shape& shape) const;
  Tensor broadcast_as(const Shape& shape) const;
  Tensor broadcast_left(const Shape& left) const;  // prepends dims
  Tensor squeeze(int64_t dim) const;
  Tensor squeeze() const;  // drops every size-1 dim
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor flatten_all() const { return flatten(0, -1); }
  Tensor get(int64_t index) const;  // index into dim 0, dropping it

  // ---- copies -----------------------------------------------------------------------------
  Tensor contiguous() const;  // self when already contiguous
  Tensor copy() const;        // always new storage
  Tensor to_dtype(DType dt) const;
  Tensor to_device(const Device& dev) const;

  // ---- unary ------------------------------------------------------------------------------
  Tensor neg() const;  // not for u8/u32 (DType error)
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sqrt() const;
  Tensor sqr() const;
  Tensor recip() const;
  Tensor relu() const;
  Tensor gelu() const;  // tanh approximation
  Tensor gelu_erf() const;
  Tensor erf() const;
  Tensor silu() const;
  Tensor sigmoid() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;  // half away from zero
  Tensor sign() const;
  Tensor affine(double mul, double add) const;  // x * mul + add
  Tensor powf(double e) const;
  Tensor elu(double alpha) const;
  Tensor clamp(double lo, double hi) const;

  // ---- binary (numpy broadcasting; dtypes must match) -------------------------------------
  // Integers: add/sub/mul wrap, div truncates toward zero and throws OutOfRange on a zero
  // divisor; maximum/minimum of floats propagate NaN; pow takes float dtypes only.
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor pow(const Tensor& o) const;
  // A scalar of another dtype converts to the tensor's dtype as to_dtype does (floats round to
  // nearest even; integer dtypes truncate toward zero and saturate, so u8 + 2.7 adds 2 and
  // u8 - (-1) subtracts 0), as does a 0-d tensor of another dtype given for `o` (or called on,
  // when o is not 0-d): the other operand's dtype is the result's.
  Tensor add(double s) const;
  Tensor sub(double s) const;
  Tensor mul(double s) const;
  Tensor div(double s) const;
  Tensor maximum(double s) const;
  Tensor minimum(double s) const;
  Tensor pow(double s) const;
  Tensor rsub(double s) const;  // s - this
  Tensor rdiv(double s) const;  // s / this

  // ---- comparison (result u8: 1 where true) -----------------------------------------------
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor eq(double s) const;
  Tensor ne(double s) const;
  Tensor lt(double s) const;
  Tensor le(double s) const;
  Tensor gt(double s) const;
  Tensor ge(double s) const;
  // this (u8/u32/i64 condition) ? on_true : on_false, broadcasting all three.
  Tensor where_cond(const Tensor& on_true, const Tensor& on_false) const;

  // ---- reductions -------------------------------------------------------------------------
  Tensor sum(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor sum(int64_t dim, bool keepdim = false) const { return sum(std::vector<int64_t>{dim}, keepdim); }
  Tensor sum_keepdim(int64_t dim) const { return sum(dim, true); }
  Tensor sum_all() const;
  Tensor mean(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor mean(int64_t dim, bool keepdim = false) const { return mean(std::vector<int64_t>{dim}, keepdim); }
  Tensor mean_all() const;
  Tensor max(int64_t dim, bool keepdim = false) const;
  Tensor min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;  // u32
  Tensor argmin(int64_t dim, bool keepdim = false) const;  // u32
  Tensor max_all() const;
  Tensor min_all() const;
  // Over all dims, to a 0-d tensor (as sum_all, mean_all, max_all, min_all).
  Tensor sum() const { return sum_all(); }
  Tensor mean() const { return mean_all(); }
  Tensor max() const { return max_all(); }
  Tensor min() const { return min_all(); }
  // Variance / standard deviation over `dim` (float dtypes), divided by n - 1 when `unbiased`
  // (NaN for one element), else by n. f16/bf16 compute in f32, rounding once at the end.
  Tensor var(int64_t dim, bool unbiased = true, bool keepdim = false) const;
  Tensor std(int64_t dim, bool unbiased = true, bool keepdim = false) const;
  // Running sums along dim; integer dtypes wrap as sum does, f16/bf16 accumulate in f32.
  Tensor cumsum(int64_t dim) const;
  // The k largest (largest = true) or smallest elements along dim, in order, and their u32
  // indices; ties keep the lower index first, NaN counts as the largest value.
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true) const;

  // ---- normalisation and attention helpers ------------------------------------------------
  Tensor softmax_last_dim() const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  // x / sqrt(mean(x^2, last) + eps) * alpha, alpha of shape [last dim].
  Tensor rms_norm(const Tensor& alpha, double eps) const;
  // (x - mean) / sqrt(var + eps) * alpha + beta over the last dim.
  Tensor layer_norm(const Tensor& alpha, const Tensor& beta, double eps) const;
  // Rotary embedding on x of shape (b, h, t, d); cos/sin of shape (t, d/2) or (b, t, d/2).
  // rope: rotates the pair (i, i + d/2); rope_i: the interleaved pair (2i, 2i + 1).
  Tensor rope(const Tensor& cos, const Tensor& sin) const;
  Tensor rope_i(const Tensor& cos, const Tensor& sin) const;

  // ---- matmul -----------------------------------------------------------------------------
  // (..., m, k) x (..., k, n) -> (..., m, n); batch dims broadcast; any strides.
  Tensor matmul(const Tensor& o) const;

  // ---- indexing ---------------------------------------------------------------------------
  // ids: 1-D u8/u32/i64. Picks slices of `dim`.
  Tensor index_select(const Tensor& ids, int64_t dim) const;
  // self: (vocab, hidden) table; ids of any shape -> ids.shape + (hidden).
  Tensor embedding(const Tensor& ids) const;
  // out[i][j] = self[ids[i][j]][j] (dim 0); ids has self's rank; out has ids' shape.
  Tensor gather(const Tensor& ids, int64_t dim) const;
  // self + src scattered: out[ids[i][j]][j] += src[i][j] (dim 0). ids and src share a shape.
  Tensor scatter_add(const Tensor& ids, const Tensor& src, int64_t dim) const;
  // self + src added at 1-D ids along dim: out[..., ids[i], ...] += src[..., i, ...].
  Tensor index_add(const Tensor& ids, const Tensor& src, int64_t dim) const;
  static Tensor cat(const std::vector<Tensor>& ts, int64_t dim);
  static Tensor stack(const std::vector<Tensor>& ts, int64_t dim);
  // Indices (u32) that sort each row of the last dim.
  Tensor arg_sort_last_dim(bool ascending = true) const;

  // ---- in-place ---------------------------------------------------------------------------
  // Writes src into self's elements [offset, offset + src.dim(dim)) along dim.
  void slice_set(const Tensor& src, int64_t dim, int64_t offset) const;
  void zero_set() const;
  void const_set(double value) const;

  // ---- operators --------------------------------------------------------------------------
  friend Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
  friend Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
  friend Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
  friend Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
  friend Tensor operator+(const Tensor& a, double s) { return a.add(s); }
  friend Tensor operator-(const Tensor& a, double s) { return a.sub(s); }
  friend Tensor operator*(const Tensor& a, double s) { return a.mul(s); }
  friend Tensor operator/(const Tensor& a, double s) { return a.div(s); }
  friend Tensor operator+(double s, const Tensor& a) { return a.add(s); }
  friend Tensor operator-(double s, const Tensor& a) { return a.rsub(s); }
  friend Tensor operator*(double s, const Tensor& a) { return a.mul(s); }
  friend Tensor operator/(double s, const Tensor& a) { return a.rdiv(s); }
  Tensor operator-() const { return neg(); }
  // Rebind this handle to the result (see the top of this file); no storage is written.
  Tensor& operator+=(const Tensor& o) { return *this = add(o); }
  Tensor& operator-=(const Tensor& o) { return *this = sub(o); }
  Tensor& operator*=(const Tensor& o) { return *this = mul(o); }
  Tensor& operator/=(const Tensor& o) { return *this = div(o); }
  Tensor& operator+=(double s) { return *this = add(s); }
  Tensor& operator-=(double s) { return *this = sub(s); }
  Tensor& operator*=(double s) { return *this = mul(s); }
  Tensor& operator/=(double s) { return *this = div(s); }
  // Element-wise comparisons: u8 tensors (1 where true), not bool.
  friend Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
  friend Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
  friend Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
  friend Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
  friend Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
  friend Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
  friend Tensor operator==(const Tensor& a, double s) { return a.eq(s); }
  friend Tensor operator!=(const Tensor& a, double s) { return a.ne(s); }
  friend Tensor operator<(const Tensor& a, double s) { return a.lt(s); }
  friend Tensor operator<=(const Tensor& a, double s) { return a.le(s); }
  friend Tensor operator>(const Tensor& a, double s) { return a.gt(s); }
  friend Tensor operator>=(const Tensor& a, double s) { return a.ge(s); }
  friend Tensor operator==(double s, const Tensor& a) { return a.eq(s); }
  friend Tensor operator!=(double s, const Tensor& a) { return a.ne(s); }
  friend Tensor operator<(double s, const Tensor& a) { return a.gt(s); }
  friend Tensor operator<=(double s, const Tensor& a) { return a.ge(s); }
  friend Tensor operator>(double s, const Tensor& a) { return a.lt(s); }
  friend Tensor operator>=(double s, const Tensor& a) { return a.le(s); }

  // ---- internals (used by backends, io, tests) --------------------------------------------
  Tensor() = default;  // undefined
  // Throws unless `layout` fits `storage` (Layout::check_fits) and the storage holds `dt`.
  Tensor(std::shared_ptr<backend::Storage> storage, Layout layout, DType dt, Device dev);
  const std::shared_ptr<backend::Storage>& storage() const;
  // True when both tensors use the same storage buffer.
  bool shares_storage_with(const Tensor& o) const;

 private:
  static void check_numel(size_t n, const Shape& shape, const char* op);
  void check_data_type(DType dt) const;
  // n zeroed elements of T on the host: Error(OutOfMemory) naming `op`, never std::bad_alloc,
  // when their bytes reach wick's size limit or the host has no room for them.
  template <typename T>
  static std::vector<T> host_vector(int64_t n, const char* op) {
    if (n > (kSizeLimit - 1) / static_cast<int64_t>(sizeof(T)))
      fail(ErrorKind::OutOfMemory, op, n, " elements of ", sizeof(T),
           " bytes pass wick's size limit of 2^62 bytes");
    try {
      return std::vector<T>(static_cast<size_t>(n));
    } catch (const std::bad_alloc&) {
      fail(ErrorKind::OutOfMemory, op, "no host memory for ", n, " elements of ", sizeof(T),
           " bytes");
    }
  }
  struct Impl;
  const Impl& impl() const;  // throws on an undefined tensor
  std::shared_ptr<const Impl> impl_;
};

// Prints t.to_string(): the values, then shape, dtype and device.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace wick
