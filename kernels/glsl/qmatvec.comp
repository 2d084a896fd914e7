#version 450
// y (m, n_out) = x (m, k) @ W^T for a few x rows (decode), W in a block format (QTYPE, see
// include/quant.glsl) decoded on the fly, so every weight byte is read once per NUM_COLS x rows.
// A workgroup computes NUM_ROWS output rows for NUM_COLS x rows (workgroup z: which NUM_COLS;
// the last group may have fewer): its threads take runs of 8 elements along k in turn
// (consecutive threads, consecutive runs: coalesced), then the partial sums are added across the
// workgroup: subgroupAdd where the device has it (WICK_SUBGROUP_ARITHMETIC), then one
// shared-memory pass over the subgroups' sums (over every thread's without subgroups).
// ACT_Q8: x comes quantized to 8 bits by qact.comp, and each run is the CPU's integer dot product
// (decode8_int in include/quant.glsl) times the two scales; otherwise x is read in f32.
// ACT_INLINE (0, 1, 2: qact.comp's PROLOGUE): the workgroup quantizes its NUM_COLS x rows (DT)
// itself, as qact.comp would have (include/qact.glsl, qact_value.glsl: the same bits), into
// shared memory (ACT_ROW_WORDS words per row; a block per invocation), then runs ACT_Q8's loop on
// them: decode takes one dispatch, not two. Every workgroup quantizes the rows again: cheaper
// than a dispatch at decode's sizes.
// RESIDUAL: y = residual + the product (binding 3, f32; one rounding, as the add kernel's).
// ACT_INLINE 1, 2: the prologue's operand (alpha, or up) follows, at binding 4 or 3.
#ifdef WICK_SUBGROUP_ARITHMETIC
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifdef ACT_INLINE
#define ACT_Q8 1
#define PROLOGUE ACT_INLINE
#define ACT_SERIAL 1
#endif
#include "include/common.glsl"
#include "include/dtype.glsl"
#define QUANT_BINDING 0
#include "include/quant.glsl"

#define MAX_COLS 8u
#define MAX_ROWS 8u
layout(constant_id = 0) const uint NUM_COLS = 1u;  // x rows per workgroup, 1 .. MAX_COLS
layout(constant_id = 1) const uint NUM_ROWS = 1u;  // 1 .. MAX_ROWS

#ifdef ACT_INLINE
layout(set = 0, binding = 1) readonly buffer X { STORAGE_T(DT) x[]; };
#if PROLOGUE != 0
#ifdef RESIDUAL
layout(set = 0, binding = 4) readonly buffer P { STORAGE_T(DT) p[]; };  // alpha, or up
#else
layout(set = 0, binding = 3) readonly buffer P { STORAGE_T(DT) p[]; };
#endif
#endif
// The workgroup's x rows quantized: row c at word c * ACT_ROW_WORDS.
shared uint xq[NUM_COLS * ACT_ROW_WORDS];
uint xq_base(uint col0, uint c) { return c * ACT_ROW_WORDS; }
uint g_col0;  // the workgroup's first x row
uint act_row(uint row) { return g_col0 + row; }
#include "include/qact_value.glsl"
#if PROLOGUE == 1
CT g_inv[MAX_COLS];
CT act_inv(uint row) { return g_inv[row]; }
#endif
#include "include/qact.glsl"
#elif defined(ACT_Q8)
// x quantized by qact.comp: row c at word c * pc.x_row (x_offset and x_k unused).
layout(set = 0, binding = 1) readonly buffer XQ { uint xq[]; };
uint xq_base(uint col0, uint c) { return (col0 + c) * pc.x_row; }
#else
layout(set = 0, binding = 1) readonly buffer X { STORAGE_T(DT) x[]; };
#endif
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
#ifdef RESIDUAL
layout(set = 0, binding = 3) readonly buffer R { float residual[]; };
#endif

shared float s_part[MAX_ROWS * MAX_COLS * WG_SIZE];

// y's element (x row c, output row `row`).
void store(uint c, uint row, float v) {
#ifdef RESIDUAL
  v = residual[pc.r_offset + c * pc.r_row + row * pc.r_col] + v;
#endif
  y[c * pc.n_out + row] = v;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint row0 = group_index() * NUM_ROWS;
  const uint col0 = gl_WorkGroupID.z * NUM_COLS, n_cols = min(NUM_COLS, pc.m - col0);
  float acc[MAX_ROWS][MAX_COLS];
  for (uint r = 0u; r < NUM_ROWS; r++)
    for (uint c = 0u; c < NUM_COLS; c++) acc[r][c] = 0.0;

#ifdef ACT_INLINE
  g_col0 = col0;
#if PROLOGUE == 1
  for (uint c = 0u; c < NUM_COLS; c++)  // n_cols: uniform per workgroup
    g_inv[c] = c < n_cols ? row_inv_rms_as(pc.x_offset + (col0 + c) * pc.x_row, pc.k, CT(0),
                                           CT(pc.eps))
                          : CT(0);
#endif
  for (uint item = t; item < n_cols * (pc.k / ACT_BLOCK); item += WG_SIZE)
    quantize_act_block_serial(item / (pc.k / ACT_BLOCK), item % (pc.k / ACT_BLOCK), pc.k,
                              ACT_ROW_WORDS, pc.ties_away != 0u);
  barrier();
#endif
#ifdef ACT_Q8
  // The CPU's integer dot products, 8 elements at a time: per run, (d_w d_x) * sum(v q) with the
  // group's integer scale, minus (d_x dmin) * min * sum(q) for the K formats with a min; the
  // 32-element formats with a min add m_w * s_x once per block (the thread at its start).
  for (uint run = t; run < pc.k / 8u; run += WG_SIZE) {
    const uint e = run * 8u;
    int xi[MAX_COLS][8];
    float dx[MAX_COLS];
#ifdef QUANT_MIN
    float sx[MAX_COLS];
    int xsum[MAX_COLS];
#endif
    for (uint c = 0u; c < NUM_COLS; c++) {
      const uint base = xq_base(col0, c);
      const uvec2 words = c < n_cols ? uvec2(xq[base + e / 4u], xq[base + e / 4u + 1u]) : uvec2(0u);
      for (uint i = 0u; i < 8u; i++)
        xi[c][i] = bitfieldExtract(int(i < 4u ? words.x : words.y), int(8u * (i & 3u)), 8);
      const uint sw = base + act_scale_word(pc.k, e);
      dx[c] = c < n_cols ? uintBitsToFloat(xq[sw]) : 0.0;
#ifdef QUANT_MIN
#ifndef QUANT_K
      sx[c] = c < n_cols && e % 32u == 0u ? uintBitsToFloat(xq[sw + 1u]) : 0.0;
#else
      xsum[c] = 0;
      for (uint i = 0u; i < 8u; i++) xsum[c] += xi[c][i];
#endif
#endif
    }
    const uint blk = (e / QK) * BLOCK_BYTES, j = e % QK;
    for (uint r = 0u; r < NUM_ROWS; r++) {
      const uint row = row0 + r;
      if (row >= pc.n_out) break;
      int v[8];
      float dw, mw;
      int sc, mn;
      decode8_int(row * pc.row_bytes + blk, j, v, dw, mw, sc, mn);
      for (uint c = 0u; c < NUM_COLS; c++) {
        int isum = 0;
        for (uint i = 0u; i < 8u; i++) isum += v[i] * xi[c][i];
#ifndef QUANT_K
        float s = dw * dx[c] * float(isum);
#ifdef QUANT_MIN
        s += mw * sx[c];
#endif
#else
        float s = dx[c] * dw * float(sc * isum);
#ifdef QUANT_MIN
        s -= dx[c] * mw * float(mn * xsum[c]);
#endif
#endif
        acc[r][c] += s;
      }
    }
  }
#else
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

#endif

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
          if (row0 + r < pc.n_out && c < n_cols) store(col0 + c, row0 + r, acc[r][c]);
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
    store(col0 + c, row, s);
  }
}
