// Joint iteration over several strided layouts of one shape, as the CPU kernels need it.
//
// The layouts are collapsed together first (make_plan, core/strided_plan.h), so a contiguous
// tensor is one row and a transposed matrix is rows of the inner dim. Work is then cut into
// element ranges and spread over threads; each range is visited row by row as
// f(offsets, n, inner_strides): n elements, operand i at offsets[i] + j * inner_strides[i].
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/strided_plan.h"
#include "cpu/parallel.h"
#include "wick/shape.h"

namespace wick::cpu {

// Minimum elements per thread before a loop is split (below it, threads cost more than they save).
inline constexpr int64_t kParallelGrain = 1 << 15;

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
