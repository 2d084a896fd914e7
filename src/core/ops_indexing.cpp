// Front end of indexing, concatenation and the in-place ops.
#include "core/tensor_impl.h"

namespace wick {

Tensor Tensor::index_select(const Tensor& ids, int64_t dim) const {
  const char* name = "index_select";
  core::check_same_device(name, *this, ids);
  core::check_index_dtype(name, ids);
  if (ids.rank() != 1) fail(ErrorKind::Shape, name, "ids must be 1-D, got ", core::describe(ids));
  const size_t d = shape().dim(dim, name);
  std::vector<int64_t> od = dims();
  od[d] = ids.dim(0);
  Tensor out = core::empty(Shape(od), dtype(), device(), name);
  if (out.numel()) device().backend().index_select(core::view(*this), core::view(ids), d, *out.storage());
  return out;
}

Tensor Tensor::embedding(const Tensor& ids) const {
  if (rank() != 2) fail(ErrorKind::Shape, "embedding", "table must be (vocab, hidden), got ", shape());
  std::vector<int64_t> od = ids.dims();
  od.push_back(dim(1));
  return index_select(ids.flatten_all(), 0).reshape(Shape(od));
}

Tensor Tensor::gather(const Tensor& ids, int64_t dim) const {
  const char* name = "gather";
  core::check_same_device(name, *this, ids);
  core::check_index_dtype(name, ids);
  const size_t d = shape().dim(dim, name);
  if (ids.rank() != rank())
    fail(ErrorKind::Shape, name, "ids ", ids.shape(), " must have the rank of ", shape());
  for (size_t i = 0; i < rank(); i++)
    if (i != d && ids.shape()[i] != shape()[i])
      fail(ErrorKind::Shape, name, "ids ", ids.shape(), " and source ", shape(),
           " differ outside dim ", dim);
  Tensor out = core::empty(ids.shape(), dtype(), device(), name);
  if (out.numel()) device().backend().gather(core::view(*this), core::view(ids), d, *out.storage());
  return out;
}

Tensor Tensor::scatter_add(const Tensor& ids, const Tensor& src, int64_t dim) const {
  const char* name = "scatter_add";
  core::check_same_device(name, *this, ids);
  core::check_same_device(name, *this, src);
  core::check_same_dtype(name, *this, src);
  core::check_index_dtype(name, ids);
  const size_t d = shape().dim(dim, name);
  if (ids.shape() != src.shape())
    fail(ErrorKind::Shape, name, "ids ", ids.shape(), " and src ", src.shape(), " must match");
  if (src.rank() != rank())
    fail(ErrorKind::Shape, name, "src ", src.shape(), " must have the rank of ", shape());
  for (size_t i = 0; i < rank(); i++)
    if (i != d && src.shape()[i] != shape()[i])
      fail(ErrorKind::Shape, name, "src ", src.shape(), " and self ", shape(), " differ outside dim ", dim);
  Tensor out = copy();
  if (src.numel())
    device().backend().scatter_add(*out.storage(), out.shape(), core::view(ids), core::view(src), d);
  return out;
}

Tensor Tensor::index_add(const Tensor& ids, const Tensor& src, int64_t dim) const {
  const char* name = "index_add";
  core::check_same_device(name, *this, ids);
  core::check_same_device(name, *this, src);
  core::check_same_dtype(name, *this, src);
  core::check_index_dtype(name, ids);
  const size_t d = shape().dim(dim, name);
  if (ids.rank() != 1) fail(ErrorKind::Shape, name, "ids must be 1-D, got ", core::describe(ids));
  if (src.rank() != rank() || src.shape()[d] != ids.dim(0))
    fail(ErrorKind::Shape, name, "src ", src.shape(), " must be self ", shape(), " with dim ", dim,
         " of size ", ids.dim(0));
  for (size_t i = 0; i < rank(); i++)
    if (i != d && src.shape()[i] != shape()[i])
      fail(ErrorKind::Shape, name, "src ", src.shape(), " and self ", shape(), " differ outside dim ", dim);
  Tensor out = copy();
  if (src.numel())
    device().backend().index_add(*out.storage(), out.shape(), core::view(ids), core::view(src), d);
  return out;
}

Tensor Tensor::cat(const std::vector<Tensor>& ts, int64_t dim) {
  const char* name = "cat";
  if (ts.empty()) fail(ErrorKind::Shape, name, "no tensors given");
  const Tensor& first = ts[0];
  const size_t d = first.shape().dim(dim, name);
  int64_t total = 0;
  for (const Tensor& t : ts) {
    core::check_same_device(name, first, t);
    core::check_same_dtype(name, first, t);
    if (t.rank() != first.rank())
      fail(ErrorKind::Shape, name, "ranks differ: ", first.shape(), " and ", t.shape());
    for (size_t i = 0; i < first.rank(); i++)
      if (i != d && t.shape()[i] != first.shape()[i])
        fail(ErrorKind::Shape, name, "shapes ", first.shape(), " and ", t.shape(), " differ outside dim ", dim);
    if (__builtin_add_overflow(total, t.shape()[d], &total))
      fail(ErrorKind::Shape, name, "dim ", dim, " of the result overflows int64 (", ts.size(),
           " tensors like ", first.shape(), ")");
  }
  std::vector<int64_t> od = first.dims();
  od[d] = total;
  Tensor out = core::empty(Shape(od), first.dtype(), first.device(), name);
  int64_t offset = 0;
  for (const Tensor& t : ts) {
    if (t.numel()) out.slice_set(t, static_cast<int64_t>(d), offset);
    offset += t.shape()[d];
  }
  return out;
}

Tensor Tensor::stack(const std::vector<Tensor>& ts, int64_t dim) {
  const char* name = "stack";
  if (ts.empty()) fail(ErrorKind::Shape, name, "no tensors given");
  // The new dim may be any of rank + 1 positions; checked here so errors name stack.
  const auto r = static_cast<int64_t>(ts[0].rank());
  if (dim < -r - 1 || dim > r)
    fail(ErrorKind::OutOfRange, name, "dim ", dim, " out of range for tensors of shape ",
         ts[0].shape());
  std::vector<Tensor> us;
  for (const Tensor& t : ts) {
    core::check_same_device(name, ts[0], t);
    core::check_same_dtype(name, ts[0], t);
    if (t.shape() != ts[0].shape())
      fail(ErrorKind::Shape, name, "shapes differ: ", ts[0].shape(), " and ", t.shape());
    us.push_back(t.unsqueeze(dim));
  }
  return cat(us, dim);
}

void Tensor::slice_set(const Tensor& src, int64_t dim, int64_t offset) const {
  const char* name = "slice_set";
  core::check_same_device(name, *this, src);
  core::check_same_dtype(name, *this, src);
  const size_t d = shape().dim(dim, name);
  if (src.rank() != rank())
    fail(ErrorKind::Shape, name, "src ", src.shape(), " must have the rank of ", shape());
  for (size_t i = 0; i < rank(); i++)
    if (i != d && src.shape()[i] != shape()[i])
      fail(ErrorKind::Shape, name, "src ", src.shape(), " and self ", shape(), " differ outside dim ", dim);
  const int64_t len = src.shape()[d], n = shape()[d];
  if (offset < 0 || offset > n || len > n - offset)
    fail(ErrorKind::OutOfRange, name, "src ", src.shape(), " at offset ", offset, " outside dim ",
         dim, " (size ", n, ") of ", shape());
  if (src.numel() == 0) return;
  const Tensor dst = narrow(static_cast<int64_t>(d), offset, len);
  // Reading and writing the same elements through different layouts would race: copy first.
  const Tensor s = src.shares_storage_with(*this) ? src.copy() : src;
  device().backend().copy_strided(core::view(s), *storage(), dst.layout());
}

void Tensor::zero_set() const { const_set(0.0); }

void Tensor::const_set(double value) const {
  if (numel()) device().backend().fill(*storage(), layout(), value);
}

}  // namespace wick
