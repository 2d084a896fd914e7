// The values the 8-bit quantizer of x (include/qact.glsl) takes: act_value(row, e), element e of
// an x row after the prologue, in DT as the ops it stands for would have stored it. Shared by
// qact.comp and qmatvec.comp (ACT_INLINE), so that both quantize the same bits:
//   PROLOGUE 0  x itself
//   PROLOGUE 1  x.rms_norm(alpha, eps), as norm.comp computes it (include/norm_row.glsl, which
//               this file includes)
//   PROLOGUE 2  silu(x) * up (x: the gate), as unary.comp's silu and binary.comp's mul compute
//               it, each rounded to DT
// The includer declares the buffers `x` and (PROLOGUE 1, 2) `p` (alpha, or up), push constants
// `pc` with WICK_PARAMS_QACT_PROLOGUE's fields, and defines act_row(row), the x row that the
// quantized row `row` is, and (PROLOGUE 1) act_inv(row), its 1 / rms.
#define CT COMPUTE_T(DT)
#if PROLOGUE == 2
#include "include/math.glsl"
#endif

uint act_row(uint row);
float load_x(uint row, uint e) { return LOAD(DT, x[pc.x_offset + row * pc.x_row + e * pc.x_k]); }

#if PROLOGUE == 1
CT at(uint base, uint j) { return LOAD(DT, x[base + j * pc.x_k]); }
#include "include/norm_row.glsl"
CT act_inv(uint row);
float act_value(uint row, uint e) {
  const CT a = LOAD(DT, p[pc.p_offset + e * pc.p_k]);
  const uint base = pc.x_offset + act_row(row) * pc.x_row;
  return LOAD(DT, PACK_W(DT, row_normalized(at(base, e), CT(0), act_inv(row), a)));
}
#elif PROLOGUE == 2
float act_value(uint row, uint e) {
  const uint xr = act_row(row);
  const float up = LOAD(DT, p[pc.p_offset + xr * pc.p_row + e * pc.p_k]);
  const float silu = LOAD(DT, PACK_W(DT, silu_accurate(load_x(xr, e))));
  return LOAD(DT, PACK_W(DT, silu * up));  // binary.comp's MUL
}
#elif PROLOGUE == 0
float act_value(uint row, uint e) { return load_x(act_row(row), e); }
#else
#error "qact_value: PROLOGUE is 0, 1 or 2"
#endif
