#version 450
// y (u8) = a cmp b ? 1 : 0 for one dtype DT, broadcasting through strides; OP is wick's CmpOp.
#include "include/common.glsl"
#include "include/dtype.glsl"

#define N_INPUTS 2
#define OUT_STRIDED 0
#include "include/strided.glsl"

layout(constant_id = 0) const uint OP = 0u;
layout(set = 0, binding = 0) readonly buffer A { STORAGE_T(DT) a[]; };
layout(set = 0, binding = 1) readonly buffer B { STORAGE_T(DT) b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { uint8_t y[]; };

#define CT COMPUTE_T(DT)
// wick::backend::CmpOp
#define EQ 0u
#define NE 1u
#define LT 2u
#define LE 3u
#define GT 4u
#define GE 5u

bool apply(CT u, CT v) {
  if (OP == EQ) return u == v;
  if (OP == NE) return u != v;
  if (OP == LT) return u < v;
  if (OP == LE) return u <= v;
  if (OP == GT) return u > v;
  return u >= v;
}

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint off[N_STRIDED];
  strided_offsets(i, off);
  y[out_offset(i)] = uint8_t(apply(LOAD(DT, a[off[0]]), LOAD(DT, b[off[1]])) ? 1u : 0u);
}
