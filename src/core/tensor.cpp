// Tensor handle, creation, views and copies.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/tensor_impl.h"

namespace wick {

using backend::View;

Tensor::Tensor(std::shared_ptr<backend::Storage> storage, Layout layout, DType dt, Device dev)
    : impl_(std::make_shared<const Impl>(Impl{std::move(storage), std::move(layout), dt, std::move(dev)})) {}

const Shape& Tensor::shape() const { return impl_->layout.shape; }
DType Tensor::dtype() const { return impl_->dtype; }
const Device& Tensor::device() const { return impl_->device; }
const Layout& Tensor::layout() const { return impl_->layout; }
const std::shared_ptr<backend::Storage>& Tensor::storage() const { return impl_->storage; }
bool Tensor::shares_storage_with(const Tensor& o) const { return storage() == o.storage(); }
int64_t Tensor::dim(int64_t d) const { return shape()[shape().dim(d, "dim")]; }

std::string Tensor::str() const {
  if (!impl_) return "Tensor[undefined]";
  std::ostringstream os;
  os << "Tensor" << shape() << "{" << dtype() << ", " << device().name() << "}";
  return os.str();
}
std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

void Tensor::check_numel(size_t n, const Shape& shape, const char* op) {
  if (static_cast<int64_t>(n) != shape.numel())
    fail(ErrorKind::Shape, op, n, " elements given for shape ", shape, " (", shape.numel(), " elements)");
}

namespace core {

Tensor empty(const Shape& shape, DType dt, const Device& dev) {
  for (int64_t d : shape.dims())
    if (d < 0) fail(ErrorKind::Shape, "alloc", "negative dim in shape ", shape);
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

Layout broadcast_layout(const Layout& l, const Shape& to, const char* op) {
  if (to.rank() < l.rank())
    fail(ErrorKind::Shape, op, "cannot broadcast shape ", l.shape, " to ", to);
  const size_t pad = to.rank() - l.rank();
  std::vector<int64_t> st(to.rank(), 0);
  for (size_t i = 0; i < l.rank(); i++) {
    const int64_t from = l.shape[i], want = to[pad + i];
    if (from == want) st[pad + i] = l.strides[i];
    else if (from == 1) st[pad + i] = 0;
    else fail(ErrorKind::Shape, op, "cannot broadcast shape ", l.shape, " to ", to);
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
  for (int64_t d : shape.dims())
    if (d < 0) fail(ErrorKind::Shape, "from_data", "negative dim in shape ", shape);
  auto s = dev.backend().from_host(dt, data, static_cast<size_t>(shape.numel()));
  return core::wrap(std::move(s), shape, dt, dev);
}

Tensor Tensor::full(double value, const Shape& shape, DType dt, const Device& dev) {
  Tensor t = empty(shape, dt, dev);
  if (t.numel() > 0) dev.backend().fill(*t.storage(), t.layout(), value);
  return t;
}
Tensor Tensor::zeros(const Shape& shape, DType dt, const Device& dev) { return full(0, shape, dt, dev); }
Tensor Tensor::ones(const Shape& shape, DType dt, const Device& dev) { return full(1, shape, dt, dev); }

Tensor Tensor::arange(double start, double end, double step, DType dt, const Device& dev) {
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end))
    fail(ErrorKind::OutOfRange, "arange", "bad range start=", start, " end=", end, " step=", step);
  const double count = std::ceil((end - start) / step);
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) v[i] = start + step * static_cast<double>(i);
  return from_vec(v, Shape{n}, dev).to_dtype(dt);
}

Tensor Tensor::eye(int64_t n, DType dt, const Device& dev) {
  if (n < 0) fail(ErrorKind::Shape, "eye", "negative size ", n);
  Tensor t = zeros({n, n}, dt, dev);
  // The diagonal is a strided view with stride n + 1.
  if (n > 0) dev.backend().fill(*t.storage(), Layout(Shape{n}, {n + 1}, 0), 1.0);
  return t;
}

static void check_rand(const char* op, const Shape& shape, DType dt) {
  if (!is_float(dt)) fail(ErrorKind::DType, op, "expects a float dtype, got ", dt);
  for (int64_t d : shape.dims())
    if (d < 0) fail(ErrorKind::Shape, op, "negative dim in shape ", shape);
}

Tensor Tensor::rand(double lo, double hi, const Shape& shape, DType dt, const Device& dev) {
  check_rand("rand", shape, dt);
  if (!(lo <= hi)) fail(ErrorKind::OutOfRange, "rand", "lo ", lo, " > hi ", hi);
  Tensor t = empty(shape, dt, dev);
  if (t.numel()) dev.backend().rand_uniform(*t.storage(), lo, hi);
  return t;
}

Tensor Tensor::randn(double mean, double std, const Shape& shape, DType dt, const Device& dev) {
  check_rand("randn", shape, dt);
  if (!(std >= 0)) fail(ErrorKind::OutOfRange, "randn", "negative std ", std);
  Tensor t = empty(shape, dt, dev);
  if (t.numel()) dev.backend().rand_normal(*t.storage(), mean, std);
  return t;
}

// ---- views ------------------------------------------------------------------------------------

static Tensor with_layout(const Tensor& t, Layout l) {
  return Tensor(t.storage(), std::move(l), t.dtype(), t.device());
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t len) const {
  const size_t k = shape().dim(d, "narrow");
  const int64_t n = shape()[k];
  if (start < 0 || len < 0 || start + len > n)
    fail(ErrorKind::OutOfRange, "narrow", "range [", start, ", ", start + len, ") on dim ", d,
         " of shape ", shape());
  Layout l = layout();
  l.start_offset += start * l.strides[k];
  l.shape[k] = len;
  return with_layout(*this, std::move(l));
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  const size_t k = shape().dim(d, "chunk");
  if (chunks <= 0) fail(ErrorKind::OutOfRange, "chunk", "chunks must be > 0, got ", chunks);
  const int64_t n = shape()[k];
  const int64_t size = std::max<int64_t>(1, (n + chunks - 1) / chunks);
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
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < dims.size(); i++) {
    if (dims[i] == -1) {
      if (infer >= 0) fail(ErrorKind::Shape, "reshape", "more than one -1 in ", s);
      infer = static_cast<int>(i);
    } else if (dims[i] < 0) {
      fail(ErrorKind::Shape, "reshape", "negative dim in ", s);
    } else {
      known *= dims[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0)
      fail(ErrorKind::Shape, "reshape", "cannot reshape ", shape(), " to ", s);
    dims[infer] = numel() / known;
  }
  Shape target(std::move(dims));
  if (target.numel() != numel())
    fail(ErrorKind::Shape, "reshape", "cannot reshape ", shape(), " (", numel(), " elements) to ",
         target);
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

Tensor Tensor::unsqueeze(int64_t d) const {
  const int64_t r = static_cast<int64_t>(rank());
  const int64_t k = d < 0 ? d + r + 1 : d;
  if (k < 0 || k > r) fail(ErrorKind::OutOfRange, "unsqueeze", "dim ", d, " out of range for shape ", shape());
  Layout l = layout();
  std::vector<int64_t> sh = l.shape.dims();
  const int64_t stride = k < r ? l.strides[k] * sh[k] : 1;
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
  if (i < 0 || i >= n) fail(ErrorKind::OutOfRange, "get", "index ", index, " out of range for shape ", shape());
  return narrow(0, i, 1).squeeze(0);
}

// ---- copies -----------------------------------------------------------------------------------

Tensor Tensor::copy() const {
  Tensor out = empty(shape(), dtype(), device());
  if (numel()) device().backend().copy_strided(core::view(*this), *out.storage(), out.layout());
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : copy(); }

Tensor Tensor::to_dtype(DType dt) const {
  if (dt == dtype()) return *this;
  Tensor out = empty(shape(), dt, device());
  if (numel()) device().backend().cast(core::view(*this), *out.storage());
  return out;
}

Tensor Tensor::to_device(const Device& dev) const {
  if (dev == device()) return *this;
  // Through host memory; backends that share memory can shortcut this later.
  std::vector<uint8_t> host(static_cast<size_t>(numel()) * dtype_size(dtype()));
  read_into(host.data(), dtype());
  return from_data(host.data(), dtype(), shape(), dev);
}

}  // namespace wick
