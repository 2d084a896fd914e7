#version 450
// Quantizes x (m, k) to 8 bits per block as the CPU's QMatMul does (include/qact.glsl), so that
// qmatvec.comp and qmatmul.comp (ACT_Q8) compute the CPU's math. One invocation per block of x;
// output row r of xq starts at word r * pc.row_words.
#include "include/common.glsl"
#include "include/dtype.glsl"

layout(set = 0, binding = 0) readonly buffer X { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 1) writeonly buffer XQ { uint xq[]; };

layout(push_constant) uniform QActPush {
  uint m;
  uint k;
  uint x_offset;
  uint x_row;
  uint x_k;
  uint row_words;
  uint ties_away;
} pc;

float qact_load(uint row, uint e) { return LOAD(DT, x[pc.x_offset + row * pc.x_row + e * pc.x_k]); }
void qact_store(uint row, uint word, uint v) { xq[row * pc.row_words + word] = v; }
#include "include/qact.glsl"

void main() {
  const uint blocks_per_row = pc.k / ACT_BLOCK;
  const uint id = global_index();
  if (id >= pc.m * blocks_per_row) return;
  quantize_act_block(id / blocks_per_row, id % blocks_per_row, pc.k, pc.ties_away != 0u);
}
