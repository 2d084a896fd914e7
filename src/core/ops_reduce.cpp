// Front end of reductions, softmax, normalisation, rope and arg-sort.
#include <algorithm>

#include "core/tensor_impl.h"

namespace wick {

using backend::ReduceOp;

namespace {

std::vector<size_t> resolve_dims(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  std::vector<size_t> out;
  for (int64_t d : dims) out.push_back(x.shape().dim(d, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    fail(ErrorKind::Shape, op, "repeated dim in reduction over shape ", x.shape());
  return out;
}

Shape drop_dims(const Shape& keep_shape, const std::vector<size_t>& dims) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < keep_shape.rank(); i++)
    if (!std::binary_search(dims.begin(), dims.end(), i)) out.push_back(keep_shape[i]);
  return Shape(std::move(out));
}

Tensor reduce(const Tensor& x, ReduceOp op, const std::vector<size_t>& dims, bool keepdim) {
  const char* name = backend::reduce_op_name(op);
  std::vector<int64_t> kd = x.dims();
  for (size_t d : dims) {
    if (kd[d] == 0 && op != ReduceOp::Sum)
      fail(ErrorKind::Shape, name, "cannot reduce an empty dim of shape ", x.shape());
    kd[d] = 1;
  }
  const Shape keep_shape(kd);
  const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  Tensor out = core::empty(keep_shape, arg ? DType::U32 : x.dtype(), x.device(), name);
  if (out.numel() > 0) {
    if (x.numel() == 0)
      x.device().backend().fill(*out.storage(), out.layout(), 0.0);  // empty sums
    else
      x.device().backend().reduce(op, core::view(x), dims, *out.storage());
  }
  return keepdim ? out : out.reshape(drop_dims(keep_shape, dims));
}

Tensor last_dim_op(const Tensor& x, const char* name,
                   void (backend::BackendDevice::*fn)(backend::View, backend::Storage&)) {
  core::check_float(name, x);
  if (x.rank() == 0) fail(ErrorKind::Shape, name, "needs rank >= 1, got a scalar");
  Tensor out = core::empty(x.shape(), x.dtype(), x.device(), name);
  if (x.numel()) (x.device().backend().*fn)(core::view(x), *out.storage());
  return out;
}

// Applies a last-dim op on `dim` by moving it last and back.
template <typename F>
Tensor along_dim(const Tensor& x, int64_t dim, const char* name, F&& f) {
  const size_t d = x.shape().dim(dim, name);
  const int64_t last = static_cast<int64_t>(x.rank()) - 1;
  if (static_cast<int64_t>(d) == last) return f(x);
  return f(x.transpose(static_cast<int64_t>(d), last)).transpose(static_cast<int64_t>(d), last).contiguous();
}

}  // namespace

Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return reduce(*this, ReduceOp::Sum, resolve_dims(*this, dims, "sum"), keepdim);
}

Tensor Tensor::sum_all() const {
  std::vector<int64_t> all(rank());
  for (size_t i = 0; i < rank(); i++) all[i] = static_cast<int64_t>(i);
  return rank() == 0 ? *this : sum(all, false);
}

Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  core::check_float("mean", *this);
  // One backend op: the sum (accumulated in f32 or wider, so f16 sums past 65504 are fine) is
  // divided before the single rounding to the dtype; a sum rounded first would round twice.
  return reduce(*this, ReduceOp::Mean, resolve_dims(*this, dims, "mean"), keepdim);
}

Tensor Tensor::mean_all() const {
  std::vector<int64_t> all(rank());
  for (size_t i = 0; i < rank(); i++) all[i] = static_cast<int64_t>(i);
  return rank() == 0 ? to_dtype(dtype()) : mean(all, false);
}

Tensor Tensor::max(int64_t dim, bool keepdim) const {
  return reduce(*this, ReduceOp::Max, {shape().dim(dim, "max")}, keepdim);
}
Tensor Tensor::min(int64_t dim, bool keepdim) const {
  return reduce(*this, ReduceOp::Min, {shape().dim(dim, "min")}, keepdim);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim) const {
  return reduce(*this, ReduceOp::ArgMax, {shape().dim(dim, "argmax")}, keepdim);
}
Tensor Tensor::argmin(int64_t dim, bool keepdim) const {
  return reduce(*this, ReduceOp::ArgMin, {shape().dim(dim, "argmin")}, keepdim);
}
Tensor Tensor::max_all() const {
  if (rank() == 0) return *this;
  return flatten_all().max(0);
}
Tensor Tensor::min_all() const {
  if (rank() == 0) return *this;
  return flatten_all().min(0);
}

// ---- composed from the ops above (one implementation for every backend) ----------------------

namespace {

// The dtype f16/bf16 ops compute in before the one rounding back.
DType wide_dtype(DType dt) {
  return dt == DType::F16 || dt == DType::BF16 ? DType::F32 : dt;
}

// Variance in wide_dtype: the mean first, then the squared deviations (two passes, no
// cancellation of sum(x^2) - n mean^2).
Tensor wide_var(const Tensor& t, int64_t dim, bool unbiased, bool keepdim, const char* op) {
  core::check_float(op, t);
  const int64_t n = t.shape()[t.shape().dim(dim, op)];
  if (n == 0) fail(ErrorKind::Shape, op, "cannot reduce an empty dim of shape ", t.shape());
  const Tensor x = t.to_dtype(wide_dtype(t.dtype()));
  return x.sub(x.mean(dim, true))
      .sqr()
      .sum(dim, keepdim)
      .div(static_cast<double>(unbiased ? n - 1 : n));
}

}  // namespace

Tensor Tensor::var(int64_t dim, bool unbiased, bool keepdim) const {
  return wide_var(*this, dim, unbiased, keepdim, "var").to_dtype(dtype());
}

Tensor Tensor::std(int64_t dim, bool unbiased, bool keepdim) const {
  return wide_var(*this, dim, unbiased, keepdim, "std").sqrt().to_dtype(dtype());
}

// Hillis-Steele scan: after the step with shift s, element i holds the sum of the 2s elements
// ending at i, so log2(n) element-wise adds (each one op on any backend) give every prefix.
Tensor Tensor::cumsum(int64_t dim) const {
  const size_t d = shape().dim(dim, "cumsum");
  const auto di = static_cast<int64_t>(d);
  const int64_t n = shape()[d];
  Tensor y = to_dtype(wide_dtype(dtype()));
  for (int64_t s = 1; s < n; s *= 2)
    y = cat({y.narrow(di, 0, s), y.narrow(di, s, n - s).add(y.narrow(di, 0, n - s))}, di);
  return y.to_dtype(dtype()).contiguous();
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest) const {
  const char* name = "topk";
  if (rank() == 0) fail(ErrorKind::Shape, name, "needs rank >= 1, got a scalar");
  const size_t d = shape().dim(dim, name);
  const int64_t n = shape()[d];
  if (k < 0 || k > n)
    fail(ErrorKind::OutOfRange, name, "k = ", k, " outside [0, ", n, "] for dim ", dim,
         " of shape ", shape());
  // The stable arg-sort of the last dim, cut to k, then the values it picks.
  const auto di = static_cast<int64_t>(d), last = static_cast<int64_t>(rank()) - 1;
  const Tensor x = di == last ? *this : transpose(di, last);
  Tensor ids = x.arg_sort_last_dim(!largest).narrow(-1, 0, k);
  Tensor values = x.gather(ids, -1);
  if (di != last) {
    ids = ids.transpose(di, last);
    values = values.transpose(di, last);
  }
  return {values.contiguous(), ids.contiguous()};
}

Tensor Tensor::softmax_last_dim() const {
  return last_dim_op(*this, "softmax_last_dim", &backend::BackendDevice::softmax_last_dim);
}
Tensor Tensor::softmax(int64_t dim) const {
  return along_dim(*this, dim, "softmax", [](const Tensor& t) { return t.softmax_last_dim(); });
}
Tensor Tensor::log_softmax(int64_t dim) const {
  return along_dim(*this, dim, "log_softmax", [](const Tensor& t) {
    return last_dim_op(t, "log_softmax", &backend::BackendDevice::log_softmax_last_dim);
  });
}

static void check_norm_param(const char* op, const Tensor& x, const Tensor& p, const char* what) {
  core::check_same_device(op, x, p);
  core::check_same_dtype(op, x, p);
  if (p.rank() != 1 || p.dim(0) != x.dim(-1))
    fail(ErrorKind::Shape, op, what, " must have shape [", x.dim(-1), "], got ", p.shape(),
         " for input ", x.shape());
}

Tensor Tensor::rms_norm(const Tensor& alpha, double eps) const {
  core::check_float("rms_norm", *this);
  if (rank() == 0) fail(ErrorKind::Shape, "rms_norm", "needs rank >= 1, got a scalar");
  check_norm_param("rms_norm", *this, alpha, "alpha");
  Tensor out = core::empty(shape(), dtype(), device(), "rms_norm");
  if (numel()) device().backend().rms_norm(core::view(*this), core::view(alpha), eps, *out.storage());
  return out;
}

Tensor Tensor::layer_norm(const Tensor& alpha, const Tensor& beta, double eps) const {
  core::check_float("layer_norm", *this);
  if (rank() == 0) fail(ErrorKind::Shape, "layer_norm", "needs rank >= 1, got a scalar");
  check_norm_param("layer_norm", *this, alpha, "alpha");
  check_norm_param("layer_norm", *this, beta, "beta");
  Tensor out = core::empty(shape(), dtype(), device(), "layer_norm");
  if (numel())
    device().backend().layer_norm(core::view(*this), core::view(alpha), core::view(beta), eps,
                                  *out.storage());
  return out;
}

static Tensor rope_impl(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  const char* name = interleaved ? "rope_i" : "rope";
  core::check_float(name, x);
  core::check_same_device(name, x, cos);
  core::check_same_device(name, x, sin);
  core::check_same_dtype(name, x, cos);
  core::check_same_dtype(name, x, sin);
  if (x.rank() != 4) fail(ErrorKind::Shape, name, "x must be (b, h, t, d), got ", x.shape());
  const int64_t b = x.dim(0), t = x.dim(2), d = x.dim(3);
  if (d % 2 != 0) fail(ErrorKind::Shape, name, "last dim must be even, got ", x.shape());
  if (cos.shape() != sin.shape())
    fail(ErrorKind::Shape, name, "cos ", cos.shape(), " and sin ", sin.shape(), " differ");
  const Shape want2{t, d / 2}, want3{b, t, d / 2};
  if (cos.shape() != want2 && cos.shape() != want3)
    fail(ErrorKind::Shape, name, "cos/sin must be ", want2, " or ", want3, " for x ", x.shape(),
         ", got ", cos.shape());
  const Layout lc = core::broadcast_layout(cos.layout(), want3, name);
  const Layout ls = core::broadcast_layout(sin.layout(), want3, name);
  Tensor out = core::empty(x.shape(), x.dtype(), x.device(), name);
  if (x.numel())
    x.device().backend().rope(core::view(x), {*cos.storage(), lc}, {*sin.storage(), ls},
                              interleaved, *out.storage());
  return out;
}

Tensor Tensor::rope(const Tensor& cos, const Tensor& sin) const { return rope_impl(*this, cos, sin, false); }
Tensor Tensor::rope_i(const Tensor& cos, const Tensor& sin) const { return rope_impl(*this, cos, sin, true); }

Tensor Tensor::arg_sort_last_dim(bool ascending) const {
  if (rank() == 0) fail(ErrorKind::Shape, "arg_sort_last_dim", "needs rank >= 1, got a scalar");
  Tensor out = core::empty(shape(), DType::U32, device(), "arg_sort_last_dim");
  if (numel()) device().backend().arg_sort_last_dim(core::view(*this), ascending, *out.storage());
  return out;
}

}  // namespace wick
