// Front end of matmul: shape rules and batch broadcasting. Backends receive both operands with
// the same (broadcast) batch shape and arbitrary strides.
#include "core/tensor_impl.h"

namespace wick {

Tensor Tensor::matmul(const Tensor& o) const {
  const char* name = "matmul";
  core::check_same_device(name, *this, o);
  core::check_same_dtype(name, *this, o);
  if (rank() < 2 || o.rank() < 2)
    fail(ErrorKind::Shape, name, "operands need rank >= 2, got ", shape(), " and ", o.shape());
  const int64_t m = dim(-2), k = dim(-1), k2 = o.dim(-2), n = o.dim(-1);
  if (k != k2)
    fail(ErrorKind::Shape, name, "inner dims differ: ", core::describe(*this), " x ", core::describe(o));
  const Shape ba(std::vector<int64_t>(dims().begin(), dims().end() - 2));
  const Shape bb(std::vector<int64_t>(o.dims().begin(), o.dims().end() - 2));
  const Shape batch = broadcast_shapes(ba, bb, name);
  std::vector<int64_t> da = batch.dims(), db = batch.dims(), dout = batch.dims();
  da.insert(da.end(), {m, k});
  db.insert(db.end(), {k, n});
  dout.insert(dout.end(), {m, n});
  const Layout la = core::broadcast_layout(layout(), Shape(da), name);
  const Layout lb = core::broadcast_layout(o.layout(), Shape(db), name);
  Tensor out = core::empty(Shape(dout), dtype(), device());
  if (out.numel() == 0) return out;
  if (k == 0) {
    device().backend().fill(*out.storage(), out.layout(), 0.0);
    return out;
  }
  const backend::MatmulDims d{batch.numel(), m, n, k};
  device().backend().matmul({*storage(), la}, {*o.storage(), lb}, d, *out.storage());
  return out;
}

}  // namespace wick
