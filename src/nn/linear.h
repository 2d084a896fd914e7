// Building blocks of the models: a linear layer over dense or block-quantized weights, and an
// embedding table that may be quantized.
#pragma once

#include <optional>

#include "wick/quantized.h"
#include "wick/tensor.h"

namespace wick::nn {

// y = x @ W^T for W of shape (out, in).
class Linear {
 public:
  Linear() = default;
  // A plain weight (out, in) of any float dtype: an f16/bf16 one stays so, and forward rounds x to
  // it and returns x's dtype (the product is rounded to the weight's dtype on the way).
  explicit Linear(Tensor weight) : weight_(std::move(weight)) {}
  explicit Linear(QMatMul q) : qmatmul_(std::move(q)) {}
  Tensor forward(const Tensor& x) const;
  // forward(x.rms_norm(alpha, eps)) and forward(gate.silu() * up): fused into the quantized
  // matmul's input where it can be (QMatMul::forward_rms_norm, forward_swiglu).
  Tensor forward_rms_norm(const Tensor& x, const Tensor& alpha, double eps) const;
  Tensor forward_swiglu(const Tensor& gate, const Tensor& up) const;
  // residual + forward(x) / forward_swiglu(gate, up): the add joins the quantized matmul's stores
  // where it can (QMatMul::forward(x, residual)).
  Tensor forward(const Tensor& x, const Tensor& residual) const;
  Tensor forward_swiglu(const Tensor& gate, const Tensor& up, const Tensor& residual) const;
  int64_t out_features() const;
  // The quantized matrix, or null for a plain weight.
  const QMatMul* quantized() const { return qmatmul_ ? &*qmatmul_ : nullptr; }

 private:
  Tensor weight_;
  std::optional<QMatMul> qmatmul_;
};

// Rows of a (vocab, hidden) table, dense or quantized.
class Embedding {
 public:
  Embedding() = default;
  explicit Embedding(Tensor table) : table_(std::move(table)) {}
  explicit Embedding(QTensor table) : qtable_(std::move(table)) {}
  // ids -> (n, hidden) f32 on `dev`. Throws OutOfRange for an id >= vocab.
  Tensor forward(const std::vector<uint32_t>& ids, const Device& dev) const;
  int64_t vocab() const;
  const QTensor& qtable() const { return qtable_; }
  const Tensor& table() const { return table_; }

 private:
  Tensor table_;
  QTensor qtable_;
};

}  // namespace wick::nn
