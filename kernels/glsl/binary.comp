#version 450
// y = a op b for one dtype DT, broadcasting through strides; OP is wick's BinaryOp value.
// DT_KIND: 0 f32/f16/bf16, 1 f64, 2 u8/u32, 3 i64.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/math.glsl"
#if DT_KIND == 1
#include "include/math64.glsl"
#endif

#define N_INPUTS 2
#define OUT_STRIDED 0
#include "include/strided.glsl"

layout(constant_id = 0) const uint OP = 0u;
layout(set = 0, binding = 0) readonly buffer A { STORAGE_T(DT) a[]; };
layout(set = 0, binding = 1) readonly buffer B { STORAGE_T(DT) b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { STORAGE_T(DT) y[]; };
#if DT_KIND >= 2
#define ERROR_BINDING 3
#include "include/errors.glsl"
#endif

#define CT COMPUTE_T(DT)
// wick::backend::BinaryOp
#define ADD 0u
#define SUB 1u
#define MUL 2u
#define DIV 3u
#define MAXIMUM 4u
#define MINIMUM 5u
#define POW 6u
#define DIV_BY_ZERO WICK_ERROR_INT_DIV_BY_ZERO

CT apply(CT u, CT v) {
  if (OP == ADD) return u + v;
  if (OP == SUB) return u - v;
  if (OP == MUL) return u * v;
#if DT_KIND <= 1
  if (OP == DIV) return u / v;
  // NaN-propagating, as PyTorch (and wick's CPU) do.
  if ((OP == MAXIMUM || OP == MINIMUM) && (is_nan(u) || is_nan(v))) return u + v;
#else
  if (OP == DIV) {
#if DT_KIND == 3
    if (v == CT(-1)) return CT(0) - u;  // i64 min / -1 wraps (the division itself would trap)
#endif
    if (v != CT(0)) return u / v;
    report_error(DIV_BY_ZERO, DTYPE_CODE, 0u, 0u);  // refused like the CPU, at the next wait
    return CT(0);
  }
#endif
  if (OP == MAXIMUM) return u >= v ? u : v;
  if (OP == MINIMUM) return u <= v ? u : v;
#if DT_KIND == 0
  if (OP == POW) return pow_c(u, v);
#elif DT_KIND == 1
  if (OP == POW) return pow64(u, v);
#endif
  return u;
}

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint off[N_STRIDED];
  strided_offsets(i, off);
  y[out_offset(i)] = PACK(DT, apply(LOAD(DT, a[off[0]]), LOAD(DT, b[off[1]])));
}
