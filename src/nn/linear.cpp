#include "nn/linear.h"

namespace wick::nn {

Tensor Linear::forward(const Tensor& x) const {
  if (qmatmul_) return qmatmul_->forward(x);
  if (x.dtype() == weight_.dtype()) return x.matmul(weight_.t());
  // f16/bf16 weights kept as stored: x rounded to their dtype (as llama.cpp does), f32 sums.
  return x.to_dtype(weight_.dtype()).matmul(weight_.t()).to_dtype(x.dtype());
}

Tensor Linear::forward_rms_norm(const Tensor& x, const Tensor& alpha, double eps) const {
  if (qmatmul_) return qmatmul_->forward_rms_norm(x, alpha, eps);
  return forward(x.rms_norm(alpha, eps));
}

Tensor Linear::forward_swiglu(const Tensor& gate, const Tensor& up) const {
  if (qmatmul_) return qmatmul_->forward_swiglu(gate, up);
  return forward(gate.silu() * up);
}

Tensor Linear::forward(const Tensor& x, const Tensor& residual) const {
  if (qmatmul_) return qmatmul_->forward(x, residual);
  return residual + forward(x);
}

Tensor Linear::forward_swiglu(const Tensor& gate, const Tensor& up, const Tensor& residual) const {
  if (qmatmul_) return qmatmul_->forward_swiglu(gate, up, residual);
  return residual + forward_swiglu(gate, up);
}

int64_t Linear::out_features() const {
  return qmatmul_ ? qmatmul_->out_features() : weight_.dim(0);
}

int64_t Embedding::vocab() const {
  return qtable_.defined() ? qtable_.shape()[0] : table_.dim(0);
}

Tensor Embedding::forward(const std::vector<uint32_t>& ids, const Device& dev) const {
  const int64_t v = vocab();
  for (uint32_t id : ids)
    if (static_cast<int64_t>(id) >= v)
      fail(ErrorKind::OutOfRange, "embedding", "token id ", id, " >= vocab size ", v);
  const auto n = static_cast<int64_t>(ids.size());
  if (!qtable_.defined()) {
    const Tensor idx = Tensor::from_vec(ids, {n}, table_.device());
    return table_.index_select(idx, 0).to_dtype(DType::F32).to_device(dev);
  }
  // Dequantize only the rows asked for: the table stays in its compact format.
  const int64_t hidden = qtable_.shape()[1];
  std::vector<float> rows(static_cast<size_t>(n * hidden));
  for (int64_t i = 0; i < n; i++)
    dequantize_row(qtable_.type(), qtable_.data() + ids[i] * qtable_.row_bytes(),
                   rows.data() + i * hidden, hidden);
  return Tensor::from_vec(rows, {n, hidden}, dev);
}

}  // namespace wick::nn
