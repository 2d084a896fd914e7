// Front end of matmul: shape rules and batch broadcasting. Backends receive both operands with
// the same (broadcast) batch shape and arbitrary strides.
#include <optional>

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
    fail(ErrorKind::Shape, name, "inner dims differ: ", core::describe(*this), " x ",
         core::describe(o));
  const Shape ba(std::vector<int64_t>(dims().begin(), dims().end() - 2));
  const Shape bb(std::vector<int64_t>(o.dims().begin(), o.dims().end() - 2));
  const Shape batch = ba == bb ? ba : broadcast_shapes(ba, bb, name);
  // (batch..., rows, cols)
  const auto batched = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> d;
    d.reserve(batch.rank() + 2);
    d.insert(d.end(), batch.dims().begin(), batch.dims().end());
    d.push_back(rows);
    d.push_back(cols);
    return Shape(std::move(d));
  };
  // An operand whose batch dims already have the broadcast shape is passed as it is: the
  // common unbatched or same-batch product then builds no layouts (small matmuls notice).
  std::optional<Layout> la_bc, lb_bc;
  if (ba != batch) la_bc = core::broadcast_layout(layout(), batched(m, k), name);
  if (bb != batch) lb_bc = core::broadcast_layout(o.layout(), batched(k, n), name);
  const Layout& la = la_bc ? *la_bc : layout();
  const Layout& lb = lb_bc ? *lb_bc : o.layout();
  Tensor out = core::empty(batched(m, n), dtype(), device(), name);
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
