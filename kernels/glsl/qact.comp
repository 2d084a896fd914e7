#version 450
// Quantizes x (m, k) to 8 bits per block as the CPU's QMatMul does before its integer dot
// products (include/qact.glsl), so that qmatvec.comp and qmatmul.comp (ACT_Q8) compute the CPU's
// math. PROLOGUE says what x is first, in DT as the ops it stands for would have stored it (so the
// 8-bit rows are those of the unfused ops, bit for bit; include/qact_value.glsl, which
// qmatvec.comp's ACT_INLINE shares):
//   0  x itself: 32 invocations per block.
//   1  x.rms_norm(alpha, eps), as norm.comp computes it (include/norm_row.glsl): workgroups of
//      WG_SIZE (norm.comp's) per row each reduce it, then quantize WG_SIZE / 32 of the row's
//      blocks, 32 invocations per block.
//   2  silu(x) * up (x: the gate), as unary.comp's silu and binary.comp's mul compute it, each
//      rounded to DT: 32 invocations per block.
// Bindings: 0 x, then (PROLOGUE 1, 2) 1 alpha or up, then xq.
#include "include/common.glsl"
#include "include/dtype.glsl"
#ifndef PROLOGUE
#define PROLOGUE 0
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

#include "include/qact_value.glsl"
uint act_row(uint row) { return row; }
#if PROLOGUE == 1
CT g_inv;  // the invocation's row's 1 / rms
CT act_inv(uint row) { return g_inv; }
#endif
#include "include/qact.glsl"

void main() {
  const uint blocks_per_row = pc.k / ACT_BLOCK;
#if PROLOGUE == 1
  // Workgroups of a row: each reduces the whole row, then quantizes WG_SIZE / 32 of its blocks.
  const uint slots = WG_SIZE / 32u, parts = (blocks_per_row + slots - 1u) / slots;
  const uint row = group_index() / parts;
  const uint b = group_index() % parts * slots + gl_LocalInvocationID.x / 32u;
  if (row >= pc.m) return;  // uniform per workgroup
  g_inv = row_inv_rms(pc.x_offset + row * pc.x_row, pc.k, CT(0), CT(pc.eps));
  quantize_act_block(row, b, b < blocks_per_row, pc.k, pc.row_words, pc.ties_away != 0u);
#else
  const uint id = global_index() / 32u;
  const bool live = id < pc.m * blocks_per_row;  // the rest only join the barriers
  quantize_act_block(live ? id / blocks_per_row : 0u, live ? id % blocks_per_row : 0u, live,
                     pc.k, pc.row_words, pc.ties_away != 0u);
#endif
}
