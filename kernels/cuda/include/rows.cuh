// Kernels that walk a tensor as (outer, inner) index pairs: reductions (outer = kept dims, inner
// = reduced dims) and row ops (outer = rows, inner = the last dim). The host collapses each group
// of dims to at most WICK_GROUP_RANK dims and passes shapes and strides (WICK_PARAMS_ROWS, first
// in the kernel's parameter block; a kernel may append its own fields).
#pragma once

#include "include/common.cuh"

WICK_PARAMS_STRUCT(RowsParams, WICK_PARAMS_ROWS(WICK_CU_FIELD, WICK_CU_ARRAY))

// Element offset of outer index i in the input (the input's start offset included).
template <typename P>
WICK_DEV uint32_t outer_offset(const P& p, uint32_t i) {
  uint32_t off = p.in_offset;
  for (int d = int(p.outer_rank) - 1; d >= 0; d--) {
    off += (i % p.outer_shape[d]) * p.outer_strides[d];
    i /= p.outer_shape[d];
  }
  return off;
}

// Element offset of inner index j relative to its outer index's offset.
template <typename P>
WICK_DEV uint32_t inner_offset(const P& p, uint32_t j) {
  if (p.inner_rank == 1u) return j * p.inner_strides[0];
  uint32_t off = 0u;
  for (int d = int(p.inner_rank) - 1; d >= 0; d--) {
    off += (j % p.inner_shape[d]) * p.inner_strides[d];
    j /= p.inner_shape[d];
  }
  return off;
}
