// Kernels that walk a tensor as (outer, inner) index pairs: reductions (outer = kept dims,
// inner = reduced dims) and row ops (outer = rows, inner = the last dim). The host collapses
// each group of dims to at most GROUP_RANK dims and passes shapes and strides.
#include "include/params.glsl"
#define GROUP_RANK WICK_GROUP_RANK

layout(push_constant) uniform Push {
  WICK_PARAMS_ROWS(WICK_FIELD, WICK_ARRAY)
#ifdef PUSH_EXTRA
  PUSH_EXTRA
#endif
} pc;

uint outer_offset(uint i) {
  uint off = pc.in_offset;
  for (int d = int(pc.outer_rank) - 1; d >= 0; d--) {
    off += (i % pc.outer_shape[d]) * pc.outer_strides[d];
    i /= pc.outer_shape[d];
  }
  return off;
}

uint inner_offset(uint j) {
  if (pc.inner_rank == 1u) return j * pc.inner_strides[0];
  uint off = 0u;
  for (int d = int(pc.inner_rank) - 1; d >= 0; d--) {
    off += (j % pc.inner_shape[d]) * pc.inner_strides[d];
    j /= pc.inner_shape[d];
  }
  return off;
}
