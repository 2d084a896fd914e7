// Joint iteration over several strided layouts of one shape, as the CPU kernels need it.
//
// Dims that are contiguous with their neighbour in every operand are merged first, so a
// contiguous tensor is one row and a transposed matrix is rows of the inner dim. Work is then
// cut into element ranges and spread over threads; each range is visited row by row as
// f(offsets, n, inner_strides): n elements, operand i at offsets[i] + j * inner_strides[i].
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "cpu/parallel.h"
#include "wick/shape.h"

namespace wick::cpu {

// Minimum elements per thread before a loop is split (below it, threads cost more than they save).
inline constexpr int64_t kParallelGrain = 1 << 15;

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

// Visits elements [begin, end) of the plan row by row.
template <size_t N, typename F>
void visit_range(const StridedPlan<N>& p, int64_t begin, int64_t end, F&& f) {
  const size_t r = p.shape.size();
  const int64_t inner = p.shape[r - 1];
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; k++) inner_st[k] = p.strides[k][r - 1];
  // Multi-index of `begin` (outer dims) and the position inside the first row.
  std::vector<int64_t> idx(r, 0);
  int64_t rem = begin;
  for (size_t i = r; i-- > 0;) {
    idx[i] = rem % p.shape[i];
    rem /= p.shape[i];
  }
  std::array<int64_t, N> base;
  for (size_t k = 0; k < N; k++) {
    base[k] = p.offsets[k];
    for (size_t i = 0; i < r; i++) base[k] += idx[i] * p.strides[k][i];
  }
  int64_t e = begin;
  while (e < end) {
    const int64_t n = std::min(inner - idx[r - 1], end - e);
    f(base, n, inner_st);
    e += n;
    if (e >= end) break;
    // Advance to the start of the next row.
    for (size_t k = 0; k < N; k++) base[k] += (n - 1) * inner_st[k] + inner_st[k];
    idx[r - 1] += n;
    for (size_t i = r - 1; i > 0 && idx[i] == p.shape[i]; i--) {
      idx[i] = 0;
      idx[i - 1]++;
      for (size_t k = 0; k < N; k++) base[k] += p.strides[k][i - 1] - p.shape[i] * p.strides[k][i];
    }
  }
}

// Visits every element of the plan, in parallel when large.
template <size_t N, typename F>
void visit(const StridedPlan<N>& p, F&& f, int64_t grain = kParallelGrain) {
  parallel_for(p.numel, grain, [&](int64_t b, int64_t e) { visit_range(p, b, e, f); });
}

}  // namespace wick::cpu
