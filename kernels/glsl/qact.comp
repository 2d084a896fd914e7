#version 450
// Quantizes x (m, k) to 8 bits per block as the CPU's QMatMul does before its integer dot
// products (include/qact.glsl), so that qmatvec.comp and qmatmul.comp (ACT_Q8) compute the CPU's
// math. PROLOGUE says what x is first, in DT as the ops it stands for would have stored it (so the
// 8-bit rows are those of the unfused ops, bit for bit):
//   0  x itself: 32 invocations per block.
//   1  x.rms_norm(alpha, eps), as norm.comp computes it (include/norm_row.glsl): a workgroup of
//      WG_SIZE (norm.comp's) per row reduces it, then quantizes the row's blocks, 32 invocations
//      per block.
//   2  silu(x) * up (x: the gate), as unary.comp's silu and binary.comp's mul compute it, each
//      rounded to DT: 32 invocations per block.
// Bindings: 0 x, then (PROLOGUE 1, 2) 1 alpha or up, then xq.
#include "include/common.glsl"
#include "include/dtype.glsl"
#ifndef PROLOGUE
#define PROLOGUE 0
#endif
#if PROLOGUE == 2
#include "include/math.glsl"
#endif

layout(set = 0, binding = 0) readonly buffer X { STORAGE_T(DT) x[]; };
#if PROLOGUE == 0
layout(set = 0, binding = 1) writeonly buffer XQ { uint xq[]; };
#else
layout(set = 0, binding = 1) readonly buffer P { STORAGE_T(DT) p[]; };  // alpha, or up
layout(set = 0, binding = 2) writeonly buffer XQ { uint xq[]; };
#endif

#include "include/params.glsl"
layout(push_constant) uniform QActPush {
#if PROLOGUE == 0
  WICK_PARAMS_QACT(WICK_FIELD, WICK_ARRAY)
#else
  WICK_PARAMS_QACT_PROLOGUE(WICK_FIELD, WICK_ARRAY)
#endif
} pc;

#define CT COMPUTE_T(DT)
float load_x(uint row, uint e) { return LOAD(DT, x[pc.x_offset + row * pc.x_row + e * pc.x_k]); }

#if PROLOGUE == 1
CT at(uint base, uint j) { return LOAD(DT, x[base + j * pc.x_k]); }
#include "include/norm_row.glsl"
uint g_base;  // the row's first element and its 1 / rms (the invocation's own)
CT g_inv;
float act_value(uint row, uint e) {
  const CT a = LOAD(DT, p[pc.p_offset + e * pc.p_k]);
  return LOAD(DT, PACK_W(DT, row_normalized(at(g_base, e), CT(0), g_inv, a)));
}
#elif PROLOGUE == 2
float act_value(uint row, uint e) {
  const float up = LOAD(DT, p[pc.p_offset + row * pc.p_row + e * pc.p_k]);
  const float silu = LOAD(DT, PACK_W(DT, silu_accurate(load_x(row, e))));
  return LOAD(DT, PACK_W(DT, silu * up));  // binary.comp's MUL
}
#else
float act_value(uint row, uint e) { return load_x(row, e); }
#endif
#include "include/qact.glsl"

void main() {
  const uint blocks_per_row = pc.k / ACT_BLOCK;
#if PROLOGUE == 1
  const uint row = group_index();
  if (row >= pc.m) return;  // uniform per workgroup
  g_base = pc.x_offset + row * pc.x_row;
  g_inv = row_inv_rms(g_base, pc.k, CT(0), CT(pc.eps));
  const uint slots = WG_SIZE / 32u, slot = gl_LocalInvocationID.x / 32u;
  for (uint b0 = 0u; b0 < blocks_per_row; b0 += slots)  // the same trip count everywhere
    quantize_act_block(row, b0 + slot, b0 + slot < blocks_per_row, pc.k, pc.row_words,
                       pc.ties_away != 0u);
#else
  const uint id = global_index() / 32u;
  const bool live = id < pc.m * blocks_per_row;  // the rest only join the barriers
  quantize_act_block(live ? id / blocks_per_row : 0u, live ? id % blocks_per_row : 0u, live,
                     pc.k, pc.row_words, pc.ties_away != 0u);
#endif
}
