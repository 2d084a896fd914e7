#version 450
// y (m, n_out) = x (m, k) @ W^T for a few x rows (decode), W in a block format (QTYPE, see
// include/quant.glsl) decoded on the fly, so every weight byte is read once per NUM_COLS x rows.
// A workgroup computes NUM_ROWS output rows for NUM_COLS x rows (workgroup z: which NUM_COLS;
// the last group may have fewer): its threads take runs of 8 elements along k in turn
// (consecutive threads, consecutive runs: coalesced), then the partial sums are added across the
// workgroup: subgroupAdd where the device has it (WICK_SUBGROUP_ARITHMETIC), then one
// shared-memory pass over the subgroups' sums (over every thread's without subgroups).
#ifdef WICK_SUBGROUP_ARITHMETIC
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "include/common.glsl"
#include "include/dtype.glsl"
#define QUANT_BINDING 0
#include "include/quant.glsl"

#define MAX_COLS 8u
#define MAX_ROWS 8u
layout(constant_id = 0) const uint NUM_COLS = 1u;  // x rows per workgroup, 1 .. MAX_COLS
layout(constant_id = 1) const uint NUM_ROWS = 1u;  // 1 .. MAX_ROWS

layout(set = 0, binding = 1) readonly buffer X { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };

shared float s_part[MAX_ROWS * MAX_COLS * WG_SIZE];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint row0 = group_index() * NUM_ROWS;
  const uint col0 = gl_WorkGroupID.z * NUM_COLS, n_cols = min(NUM_COLS, pc.m - col0);
  float acc[MAX_ROWS][MAX_COLS];
  for (uint r = 0u; r < NUM_ROWS; r++)
    for (uint c = 0u; c < NUM_COLS; c++) acc[r][c] = 0.0;

  for (uint run = t; run < pc.k / 8u; run += WG_SIZE) {
    const uint e = run * 8u;
    float xv[MAX_COLS][8];
    for (uint c = 0u; c < NUM_COLS; c++) {
      const uint base = pc.x_offset + (col0 + c) * pc.x_row + e * pc.x_k;
      for (uint i = 0u; i < 8u; i++) xv[c][i] = c < n_cols ? LOAD(DT, x[base + i * pc.x_k]) : 0.0;
    }
    const uint blk = (e / QK) * BLOCK_BYTES, j = e % QK;
    for (uint r = 0u; r < NUM_ROWS; r++) {
      const uint row = row0 + r;
      if (row >= pc.n_out) break;
      float w[8];
      dequant8(row * pc.row_bytes + blk, j, w);
      for (uint c = 0u; c < NUM_COLS; c++) {
        float s = 0.0;
        for (uint i = 0u; i < 8u; i++) s += w[i] * xv[c][i];
        acc[r][c] += s;
      }
    }
  }

#ifdef WICK_SUBGROUP_ARITHMETIC
  for (uint r = 0u; r < NUM_ROWS; r++)
    for (uint c = 0u; c < NUM_COLS; c++) acc[r][c] = subgroupAdd(acc[r][c]);
  const uint n_part = gl_NumSubgroups, part = gl_SubgroupID;
  const bool writer = subgroupElect();
#else
  const uint n_part = WG_SIZE, part = t;
  const bool writer = true;
#endif
  if (n_part == 1u) {  // one subgroup: its sums are final
    if (writer)
      for (uint r = 0u; r < NUM_ROWS; r++)
        for (uint c = 0u; c < NUM_COLS; c++)
          if (row0 + r < pc.n_out && c < n_cols) y[(col0 + c) * pc.n_out + row0 + r] = acc[r][c];
    return;
  }
  if (writer)
    for (uint r = 0u; r < NUM_ROWS; r++)
      for (uint c = 0u; c < NUM_COLS; c++) s_part[(r * NUM_COLS + c) * n_part + part] = acc[r][c];
  barrier();
  for (uint v = t; v < NUM_ROWS * NUM_COLS; v += WG_SIZE) {
    const uint row = row0 + v / NUM_COLS, c = v % NUM_COLS;
    if (row >= pc.n_out || c >= n_cols) continue;
    float s = 0.0;
    for (uint p = 0u; p < n_part; p++) s += s_part[v * n_part + p];
    y[(col0 + c) * pc.n_out + row] = s;
  }
}
