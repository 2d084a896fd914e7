// Tensor handle, creation, views and copies.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <sstream>

#include "core/tensor_impl.h"

namespace wick {

using backend::View;

// The one door every tensor, and so every layout a kernel gets, comes through.
Tensor::Tensor(std::shared_ptr<backend::Storage> storage, Layout layout, DType dt, Device dev) {
  if (!storage) fail(ErrorKind::Internal, "tensor", "no storage for layout ", layout.str());
  if (storage->dtype() != dt)
    fail(ErrorKind::DType, "tensor", "a storage of ", storage->dtype(), " cannot hold a ", dt,
         " tensor");
  layout.check_fits(static_cast<int64_t>(storage->numel()), "tensor");
  impl_ =
      std::make_shared<const Impl>(Impl{std::move(storage), std::move(layout), dt, std::move(dev)});
}

const Tensor::Impl& Tensor::impl() const {
  if (!impl_)
    fail(ErrorKind::Shape, "tensor",
         "undefined tensor (a default-constructed Tensor has no shape, dtype, device or data)");
  return *impl_;
}

const Shape& Tensor::shape() const {
  return impl().layout.shape;
}
DType Tensor::dtype() const {
  return impl().dtype;
}
const Device& Tensor::device() const {
  return impl().device;
}
const Layout& Tensor::layout() const {
  return impl().layout;
}
const std::shared_ptr<backend::Storage>& Tensor::storage() const {
  return impl().storage;
}
bool Tensor::shares_storage_with(const Tensor& o) const {
  return storage() == o.storage();
}
int64_t Tensor::dim(int64_t d) const {
  return shape()[shape().dim(d, "dim")];
}

std::string Tensor::str() const {
  if (!impl_) return "Tensor[undefined]";
  std::ostringstream os;
  os << "Tensor" << shape() << "{" << dtype() << ", " << device().name() << "}";
  return os.str();
}
std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.to_string();
}

// ---- host memory ------------------------------------------------------------------------------

Tensor Tensor::from_blob(void* data, const Shape& shape, DType dt,
                         std::function<void(void*)> deleter) {
  return from_blob(data, shape, dt, Device::cpu(), std::move(deleter));
}

Tensor Tensor::from_blob(void* data, const Shape& shape, DType dt, const Device& dev,
                         std::function<void(void*)> deleter) {
  const char* name = "from_blob";
  core::check_nbytes(shape, dt, name);
  const int64_t n = shape.numel();
  if (!data && n > 0)
    fail(ErrorKind::OutOfRange, name, "null data for ", shape, ' ', dt, " (", n, " elements)");
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(dt) != 0)
    fail(ErrorKind::Unsupported, name, "data at ", data, " is not aligned to the ", dtype_size(dt),
         " bytes of a ", dt, " element");
  // The shared owner runs the deleter once, when the backend drops it (the last storage, so the
  // last view, is gone and no queued op uses the memory); armed only once the backend took the
  // memory, so a refusal runs nothing.
  struct Owner {
    void* data = nullptr;
    std::function<void(void*)> deleter;
    bool armed = false;
    ~Owner() {
      if (armed) deleter(data);
    }
  };
  std::shared_ptr<Owner> owner;
  if (deleter) {
    owner = std::make_shared<Owner>();
    owner->data = data;
    owner->deleter = std::move(deleter);
  }
  auto s =
      dev.backend().adopt_memory(dt, static_cast<size_t>(n), static_cast<std::byte*>(data), owner);
  if (owner) owner->armed = true;
  return core::wrap(std::move(s), shape, dt, dev);
}

const void* Tensor::data_ptr() const {
  std::byte* base = device().backend().memory_address(*storage());
  if (!base)
    fail(ErrorKind::Device, "data_ptr", "tensor ", core::describe(*this), " lives on ",
         device().name(), ", whose memory has no address other code can use: copy it with ",
         "to_device(Device::cpu()) first");
  return base + layout().start_offset * static_cast<int64_t>(dtype_size(dtype()));
}
void* Tensor::data_ptr() {
  return const_cast<void*>(static_cast<const Tensor*>(this)->data_ptr());
}

void Tensor::check_data_type(DType dt) const {
  if (dt != dtype())
    fail(ErrorKind::DType, "data_ptr", "asked for ", dt, " elements of ", core::describe(*this));
}

void Tensor::check_numel(size_t n, const Shape& shape, const char* op) {
  if (static_cast<int64_t>(n) != shape.numel(op))
    fail(ErrorKind::Shape, op, n, " elements given for shape ", shape, " (", shape.numel(),
         " elements)");
}

namespace core {

void check_nbytes(const Shape& shape, DType dt, const char* op) {
  const int64_t n = shape.numel(op);
  const auto size = static_cast<int64_t>(dtype_size(dt));
  if (n > (kSizeLimit - 1) / size)
    fail(ErrorKind::OutOfMemory, op, shape, ' ', dt, ": ", n, " elements of ", size,
         " bytes pass wick's size limit of 2^62 bytes");
}

Tensor empty(const Shape& shape, DType dt, const Device& dev, const char* op) {
  check_nbytes(shape, dt, op);
  auto s = dev.backend().alloc(dt, static_cast<size_t>(shape.numel()));
  return wrap(std::move(s), shape, dt, dev);
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device())
    fail(ErrorKind::Device, op, "tensors on different devices: ", a.device().name(), " (",
         a.shape(), ") and ", b.device().name(), " (", b.shape(), ")");
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    fail(ErrorKind::DType, op, "dtypes differ: ", describe(a), " and ", describe(b));
}

void check_float(const char* op, const Tensor& t) {
  if (!is_float(t.dtype()))
    fail(ErrorKind::DType, op, "expects a float tensor (f32, f16, bf16, f64), got ", describe(t));
}

void check_index_dtype(const char* op, const Tensor& ids) {
  if (is_float(ids.dtype()))
    fail(ErrorKind::DType, op, "indices must be u8, u32 or i64, got ", describe(ids));
}

std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << t.shape() << ' ' << t.dtype();
  return os.str();
}

std::optional<std::vector<int64_t>> reshape_strides(const Layout& l, const Shape& to) {
  const std::vector<int64_t>& from = l.shape.dims();
  const std::vector<int64_t>& dims = to.dims();
  if (l.numel() == 0) return to.contiguous_strides();
  std::vector<int64_t> out(dims.size(), 0);
  // Walk both shapes from the last dim. A run of l's dims ends where the next dim out is not
  // laid out just outside it (size-1 dims join any run); `to`'s dims are handed out over the
  // run until their product reaches its element count, strided from the run's innermost stride.
  int64_t next = static_cast<int64_t>(dims.size()) - 1;
  int64_t run_elems = 1, base = from.empty() ? 1 : l.strides.back();
  for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; d--) {
    run_elems *= from[d];
    const bool run_ends = d == 0 || (from[d - 1] != 1 && l.strides[d - 1] != run_elems * base);
    if (!run_ends) continue;
    int64_t taken = 1;
    while (next >= 0 && (taken < run_elems || dims[next] == 1)) {
      out[next] = taken * base;
      taken *= dims[next];
      next--;
    }
    if (taken != run_elems) return std::nullopt;
    if (d > 0) {
      base = l.strides[d - 1];
      run_elems = 1;
    }
  }
  for (; next >= 0; next--) {  // leading size-1 dims of `to`
    if (dims[next] != 1) return std::nullopt;
    out[next] = 1;
  }
  return out;
}

Layout broadcast_layout(const Layout& l, const Shape& to, const char* op) {
  to.numel(op);  // no negative dims, no overflowing count
  if (to.rank() < l.rank())
    fail(ErrorKind::Shape, op, "cannot broadcast shape ", l.shape, " to ", to);
  const size_t pad = to.rank() - l.rank();
  std::vector<int64_t> st(to.rank(), 0);
  for (size_t i = 0; i < l.rank(); i++) {
    const int64_t from = l.shape[i], want = to[pad + i];
    if (from == want)
      st[pad + i] = l.strides[i];
    else if (from == 1)
      st[pad + i] = 0;
    else
      fail(ErrorKind::Shape, op, "cannot broadcast shape ", l.shape, " to ", to);
  }
  return Layout(to, std::move(st), l.start_offset);
}

}  // namespace core

using core::empty;

// ---- reading ----------------------------------------------------------------------------------

void Tensor::read_into(void* dst, DType dt) const {
  if (numel() == 0) return;
  device().backend().to_host(core::view(*this), dst, dt);
}

// ---- creation ---------------------------------------------------------------------------------

Tensor Tensor::from_data(const void* data, DType dt, const Shape& shape, const Device& dev) {
  core::check_nbytes(shape, dt, "from_data");
  auto s = dev.backend().from_host(dt, data, static_cast<size_t>(shape.numel()));
  return core::wrap(std::move(s), shape, dt, dev);
}

static Tensor filled(double value, const Shape& shape, DType dt, const Device& dev,
                     const char* op) {
  Tensor t = empty(shape, dt, dev, op);
  if (t.numel() > 0) dev.backend().fill(*t.storage(), t.layout(), value);
  return t;
}
Tensor Tensor::full(double value, const Shape& shape, DType dt, const Device& dev) {
  return filled(value, shape, dt, dev, "full");
}
Tensor Tensor::zeros(const Shape& shape, DType dt, const Device& dev) {
  return filled(0, shape, dt, dev, "zeros");
}
Tensor Tensor::ones(const Shape& shape, DType dt, const Device& dev) {
  return filled(1, shape, dt, dev, "ones");
}

// n values f(i) of dtype dt on dev, made on the host in pieces of a bounded size, so a range too
// large for the device fails in the device's allocation and the host never holds all of it.
template <typename F>
static Tensor host_sequence(int64_t n, DType dt, const Device& dev, const char* name, F&& f) {
  constexpr int64_t kPiece = int64_t{1} << 16;
  const auto piece = [&](int64_t first, int64_t len) {
    return dispatch_dtype(dt, [&](auto z) {
      using T = decltype(z);
      std::vector<T> v(static_cast<size_t>(len));
      for (int64_t i = 0; i < len; i++) v[i] = from_f64<T>(f(first + i));
      return Tensor::from_data(v.data(), dt, Shape{len}, dev);
    });
  };
  if (n <= kPiece) return piece(0, n);
  Tensor out = empty({n}, dt, dev, name);
  for (int64_t first = 0; first < n; first += kPiece)
    out.slice_set(piece(first, std::min(kPiece, n - first)), 0, first);
  return out;
}

Tensor Tensor::linspace(double start, double end, int64_t steps, DType dt, const Device& dev) {
  const char* name = "linspace";
  if (steps < 0) fail(ErrorKind::OutOfRange, name, "negative number of steps ", steps);
  if (!std::isfinite(start) || !std::isfinite(end))
    fail(ErrorKind::OutOfRange, name, "bad range start=", start, " end=", end);
  core::check_nbytes(Shape{steps}, dt, name);
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0;
  const int64_t half = steps == 1 ? 1 : steps / 2;
  return host_sequence(steps, dt, dev, name, [&](int64_t i) {
    return i < half ? start + step * static_cast<double>(i)
                    : end - step * static_cast<double>(steps - 1 - i);
  });
}

Tensor Tensor::arange(double start, double end, double step, DType dt, const Device& dev) {
  const char* name = "arange";
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end))
    fail(ErrorKind::OutOfRange, name, "bad range start=", start, " end=", end, " step=", step);
  const double count = std::ceil((end - start) / step);  // inf when end - start overflows
  if (!(count < static_cast<double>(kSizeLimit)))
    fail(ErrorKind::Shape, name, "range start=", start, " end=", end, " step=", step, " has ",
         count, " elements, more than wick's size limit of 2^62");
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  return host_sequence(n, dt, dev, name,
                       [&](int64_t i) { return start + step * static_cast<double>(i); });
}

Tensor Tensor::zeros_like() const {
  return zeros(shape(), dtype(), device());
}
Tensor Tensor::ones_like() const {
  return ones(shape(), dtype(), device());
}
Tensor Tensor::full_like(double value) const {
  return full(value, shape(), dtype(), device());
}

Tensor Tensor::eye(int64_t n, DType dt, const Device& dev) {
  if (n < 0) fail(ErrorKind::Shape, "eye", "negative size ", n);
  Tensor t = filled(0, {n, n}, dt, dev, "eye");
  // The diagonal is a strided view with stride n + 1.
  if (n > 0) dev.backend().fill(*t.storage(), Layout(Shape{n}, {n + 1}, 0), 1.0);
  return t;
}

static void check_rand(const char* op, const Shape& shape, DType dt) {
  if (!is_float(dt)) fail(ErrorKind::DType, op, "expects a float dtype, got ", dt);
  shape.numel(op);  // shape errors before range errors
}

Tensor Tensor::rand(double lo, double hi, const Shape& shape, DType dt, const Device& dev) {
  check_rand("rand", shape, dt);
  if (!(lo <= hi)) fail(ErrorKind::OutOfRange, "rand", "lo ", lo, " > hi ", hi);
  Tensor t = empty(shape, dt, dev, "rand");
  if (t.numel()) dev.backend().rand_uniform(*t.storage(), lo, hi);
  return t;
}

Tensor Tensor::randn(double mean, double std, const Shape& shape, DType dt, const Device& dev) {
  check_rand("randn", shape, dt);
  if (!(std >= 0)) fail(ErrorKind::OutOfRange, "randn", "negative std ", std);
  Tensor t = empty(shape, dt, dev, "randn");
  if (t.numel()) dev.backend().rand_normal(*t.storage(), mean, std);
  return t;
}

// ---- views ------------------------------------------------------------------------------------

static Tensor with_layout(const Tensor& t, Layout l) {
  return Tensor(t.storage(), std::move(l), t.dtype(), t.device());
}

// offset + index * stride; only a layout with absurd strides on an empty or size-1 dim can
// overflow it (otherwise the layout's span bounds it).
static int64_t moved_offset(int64_t offset, int64_t index, int64_t stride, const char* op,
                            const Tensor& t) {
  int64_t moved;
  if (__builtin_mul_overflow(index, stride, &moved) ||
      __builtin_add_overflow(offset, moved, &moved))
    fail(ErrorKind::OutOfRange, op, "index ", index, " overflows the offsets of ",
         t.layout().str());
  return moved;
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t len) const {
  const size_t k = shape().dim(d, "narrow");
  const int64_t n = shape()[k];
  if (start < 0 || len < 0 || start > n || len > n - start)
    fail(ErrorKind::OutOfRange, "narrow", "length ", len, " at start ", start, " outside dim ", d,
         " (size ", n, ") of shape ", shape());
  Layout l = layout();
  l.start_offset = moved_offset(l.start_offset, start, l.strides[k], "narrow", *this);
  l.shape[k] = len;
  return with_layout(*this, std::move(l));
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  const size_t k = shape().dim(d, "chunk");
  if (chunks <= 0) fail(ErrorKind::OutOfRange, "chunk", "chunks must be > 0, got ", chunks);
  const int64_t n = shape()[k];
  const int64_t size = std::max<int64_t>(1, n / chunks + (n % chunks != 0));
  std::vector<Tensor> out;
  for (int64_t s = 0; s < n; s += size) out.push_back(narrow(d, s, std::min(size, n - s)));
  if (n == 0) out.push_back(*this);
  return out;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  const size_t a = shape().dim(d0, "transpose"), b = shape().dim(d1, "transpose");
  Layout l = layout();
  std::swap(l.shape[a], l.shape[b]);
  std::swap(l.strides[a], l.strides[b]);
  return with_layout(*this, std::move(l));
}

Tensor Tensor::t() const {
  if (rank() < 2) fail(ErrorKind::Shape, "t", "needs rank >= 2, got shape ", shape());
  return transpose(-2, -1);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  if (dims.size() != rank())
    fail(ErrorKind::Shape, "permute", dims.size(), " dims given for shape ", shape());
  std::vector<bool> seen(rank(), false);
  std::vector<int64_t> sh(rank()), st(rank());
  for (size_t i = 0; i < dims.size(); i++) {
    const size_t k = shape().dim(dims[i], "permute");
    if (seen[k]) fail(ErrorKind::Shape, "permute", "dim ", dims[i], " repeated");
    seen[k] = true;
    sh[i] = shape()[k];
    st[i] = layout().strides[k];
  }
  return with_layout(*this, Layout(Shape(sh), st, layout().start_offset));
}

Tensor Tensor::reshape(const Shape& s) const {
  std::vector<int64_t> dims = s.dims();
  int infer = -1;
  for (size_t i = 0; i < dims.size(); i++) {
    if (dims[i] != -1) continue;
    if (infer >= 0) fail(ErrorKind::Shape, "reshape", "more than one -1 in ", s);
    infer = static_cast<int>(i);
  }
  if (infer >= 0) {
    dims[infer] = 1;
    const int64_t known = Shape(dims).numel("reshape");
    if (known == 0 || numel() % known != 0)
      fail(ErrorKind::Shape, "reshape", "cannot reshape ", shape(), " to ", s);
    dims[infer] = numel() / known;
  }
  Shape target(std::move(dims));
  if (target.numel("reshape") != numel())
    fail(ErrorKind::Shape, "reshape", "cannot reshape ", shape(), " (", numel(), " elements) to ",
         target);
  // A view wherever the elements already lie at strides of the new shape (as PyTorch's reshape):
  // q, k, v narrowed from a fused projection's rows split into heads without a copy.
  if (auto strides = core::reshape_strides(layout(), target))
    return with_layout(*this, Layout(target, std::move(*strides), layout().start_offset));
  const Tensor src = contiguous();
  return with_layout(src, Layout::contiguous(target, src.layout().start_offset));
}

Tensor Tensor::broadcast_as(const Shape& s) const {
  return with_layout(*this, core::broadcast_layout(layout(), s, "broadcast_as"));
}

Tensor Tensor::broadcast_left(const Shape& left) const {
  std::vector<int64_t> dims = left.dims();
  dims.insert(dims.end(), this->dims().begin(), this->dims().end());
  return broadcast_as(Shape(std::move(dims)));
}

Tensor Tensor::squeeze(int64_t d) const {
  const size_t k = shape().dim(d, "squeeze");
  if (shape()[k] != 1) return *this;  // as in PyTorch/candle: no-op on non-1 dims
  Layout l = layout();
  std::vector<int64_t> sh = l.shape.dims();
  sh.erase(sh.begin() + static_cast<long>(k));
  l.strides.erase(l.strides.begin() + static_cast<long>(k));
  l.shape = Shape(std::move(sh));
  return with_layout(*this, std::move(l));
}

Tensor Tensor::squeeze() const {
  Layout l = layout();
  std::vector<int64_t> sh, st;
  for (size_t i = 0; i < l.rank(); i++) {
    if (l.shape[i] == 1) continue;
    sh.push_back(l.shape[i]);
    st.push_back(l.strides[i]);
  }
  return with_layout(*this, Layout(Shape(std::move(sh)), std::move(st), l.start_offset));
}

Tensor Tensor::unsqueeze(int64_t d) const {
  const int64_t r = static_cast<int64_t>(rank());
  const int64_t k = d < 0 ? d + r + 1 : d;
  if (k < 0 || k > r)
    fail(ErrorKind::OutOfRange, "unsqueeze", "dim ", d, " out of range for shape ", shape());
  Layout l = layout();
  std::vector<int64_t> sh = l.shape.dims();
  // A size-1 dim's stride never meets a non-zero index; this one keeps the layout readable as
  // contiguous, or is 0 where that product would not fit.
  int64_t stride = 1;
  if (k < r && (__builtin_mul_overflow(l.strides[k], sh[k], &stride) || stride >= kSizeLimit ||
                stride <= -kSizeLimit))
    stride = 0;
  sh.insert(sh.begin() + k, 1);
  l.strides.insert(l.strides.begin() + k, stride);
  l.shape = Shape(std::move(sh));
  return with_layout(*this, std::move(l));
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (rank() == 0) return reshape({1});
  const size_t a = shape().dim(start_dim, "flatten"), b = shape().dim(end_dim, "flatten");
  if (a > b) fail(ErrorKind::Shape, "flatten", "start dim ", start_dim, " after end dim ", end_dim);
  std::vector<int64_t> dims(this->dims().begin(), this->dims().begin() + static_cast<long>(a));
  int64_t n = 1;
  for (size_t i = a; i <= b; i++) n *= shape()[i];
  dims.push_back(n);
  dims.insert(dims.end(), this->dims().begin() + static_cast<long>(b) + 1, this->dims().end());
  return reshape(Shape(std::move(dims)));
}

Tensor Tensor::get(int64_t index) const {
  if (rank() == 0) fail(ErrorKind::Shape, "get", "cannot index a scalar");
  const int64_t n = shape()[0];
  const int64_t i = index < 0 ? index + n : index;
  if (i < 0 || i >= n)
    fail(ErrorKind::OutOfRange, "get", "index ", index, " out of range for shape ", shape());
  return narrow(0, i, 1).squeeze(0);
}

// ---- copies -----------------------------------------------------------------------------------

Tensor Tensor::copy() const {
  Tensor out = empty(shape(), dtype(), device(), "copy");
  if (numel()) device().backend().copy_strided(core::view(*this), *out.storage(), out.layout());
  return out;
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : copy();
}

Tensor Tensor::to_dtype(DType dt) const {
  if (dt == dtype()) return *this;
  Tensor out = empty(shape(), dt, device(), "to_dtype");
  if (numel()) device().backend().cast(core::view(*this), *out.storage());
  return out;
}

Tensor Tensor::to_device(const Device& dev) const {
  if (dev == device()) return *this;
  // Through host memory; backends that share memory can shortcut this later.
  return dispatch_dtype(dtype(), [&](auto z) {
    std::vector<decltype(z)> host = host_vector<decltype(z)>(numel(), "to_device");
    read_into(host.data(), dtype());
    return from_data(host.data(), dtype(), shape(), dev);
  });
}

}  // namespace wick
