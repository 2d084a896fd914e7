// Dims collapsed jointly over several strided layouts of one shape: what every backend's
// element-wise kernels iterate over (the CPU's loops, the GPU kernels' push constants).
//
// Dims that are contiguous with their neighbour in every operand are merged, so a contiguous
// tensor is one dim and a transposed matrix is two; size-1 dims are dropped.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "wick/shape.h"

namespace wick {

// The dims of a plan: inline up to kInline (collapsed layouts rarely have more), on the heap
// beyond, so that planning an op (every GPU dispatch plans one) allocates nothing.
class PlanDims {
 public:
  static constexpr size_t kInline = 8;
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t* data() { return n_ > kInline ? heap_.data() : inline_.data(); }
  const int64_t* data() const { return n_ > kInline ? heap_.data() : inline_.data(); }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + n_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + n_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& back() { return data()[n_ - 1]; }
  int64_t back() const { return data()[n_ - 1]; }
  void push_back(int64_t v) {
    if (n_ == kInline) heap_.assign(inline_.begin(), inline_.end());
    if (n_ >= kInline)
      heap_.push_back(v);
    else
      inline_[n_] = v;
    n_++;
  }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }

 private:
  std::array<int64_t, kInline> inline_;
  std::vector<int64_t> heap_;  // all n_ dims once there are more than kInline
  size_t n_ = 0;
};

template <size_t N>
struct StridedPlan {
  PlanDims shape;                   // collapsed, outermost first; never empty
  std::array<PlanDims, N> strides;  // per operand, same length as shape
  std::array<int64_t, N> offsets;   // start offsets
  int64_t numel = 0;
};

template <size_t N>
StridedPlan<N> make_plan(const Shape& shape, const std::array<const Layout*, N>& layouts) {
  StridedPlan<N> p;
  p.numel = shape.numel();
  for (size_t k = 0; k < N; k++) p.offsets[k] = layouts[k]->start_offset;
  // Walk dims innermost-first, dropping size-1 dims and merging where every operand allows it.
  PlanDims rsh;
  std::array<PlanDims, N> rst;
  for (size_t i = shape.rank(); i-- > 0;) {
    const int64_t n = shape[i];
    if (n == 1) continue;
    bool merge = !rsh.empty();
    for (size_t k = 0; k < N && merge; k++)
      merge = layouts[k]->strides[i] == rst[k].back() * rsh.back();
    if (merge) {
      rsh.back() *= n;
    } else {
      rsh.push_back(n);
      for (size_t k = 0; k < N; k++) rst[k].push_back(layouts[k]->strides[i]);
    }
  }
  if (rsh.empty()) {
    rsh.push_back(1);
    for (size_t k = 0; k < N; k++) rst[k].push_back(1);
  }
  for (size_t i = rsh.size(); i-- > 0;) {
    p.shape.push_back(rsh[i]);
    for (size_t k = 0; k < N; k++) p.strides[k].push_back(rst[k][i]);
  }
  return p;
}

}  // namespace wick
