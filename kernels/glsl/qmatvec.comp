#version 450
#extension GL_EXT_control_flow_attributes : require
// y (m, n_out) = x (m, k) @ W^T for a few x rows (decode), W in a block format (QTYPE, see
// include/quant.glsl) decoded on the fly, so every weight byte is read once per NUM_COLS x rows.
// A workgroup computes NUM_ROWS output rows for NUM_COLS x rows (workgroup z: which NUM_COLS;
// the last group may have fewer): its threads take runs of 8 elements along k in turn
// (consecutive threads, consecutive runs: coalesced), then the partial sums are added across the
// workgroup: subgroupAdd where the device has it (WICK_SUBGROUP_ARITHMETIC), then one
// shared-memory pass over the subgroups' sums (over every thread's without subgroups).
// ACT_Q8: x comes quantized to 8 bits by qact.comp, and each run is the CPU's integer dot product
// (decode8_int in include/quant.glsl) times the two scales; otherwise x is read in f32.
// WICK_INT_DOT: those integer sums in packed dot products of four bytes (decode8_packed, dot8).
// ACT_INLINE (0, 1, 2: qact.comp's PROLOGUE): the workgroup quantizes its NUM_COLS x rows (DT,
// ACT_K elements) itself, as qact.comp would have (include/qact.glsl, qact_value.glsl: the same
// bits), then runs ACT_Q8's loop on them: decode takes one dispatch, not two. The rows after the
// prologue are staged in shared memory first (stage_rows: every invocation's loads in flight at
// once), then quantized there, a block per invocation (ACT_ROW_WORDS words per row). Every
// workgroup quantizes the rows again; loading and reducing them a block at a time cost more
// than the dispatch saved (the H200, session 14).
// ACT_STAGE: ACT_Q8's rows are first copied into shared memory (ACT_ROW_WORDS words per row), where
// the dot loop reads them (NUM_COLS x rows: most of its loads).
// RESIDUAL: y = residual + the product (binding 3, f32; one rounding, as the add kernel's).
// ACT_INLINE 1, 2: the prologue's operand (alpha, or up) follows, at binding 4 or 3.
// ROPE_KV: the product's columns are q (h heads), k and v (kvh heads) of head dim d, one token of
// batch item c per x row c, and they go where rope_kv_cache (rope_kv.comp) would put them: q
// rotated into y (b, h, 1, d), k rotated and v as it is into the caches (KV_DT) at the item's
// position, in its slot. Rotation pairs are adjacent columns (rope_i), so a workgroup's rows
// (even, from an even row) hold whole pairs; each pair's two sums meet in one invocation, which
// rotates them with rope.glsl's arithmetic (the same bits as the unfused ops). No residual.
// Bindings after the prologue's operand (binding 3, bound even when unused): 4 pos, 5 slots,
// 6-9 cos_q, sin_q, cos_k, sin_k (f32), 10 k_cache, 11 v_cache, 12 the op's error record.
// SWIGLU_Q8: the product is [gate | up] (n_out = 2 half columns) and what the kernel leaves is
// h = silu(gate) * up quantized to 8 bits, the rows a down projection's ACT_Q8 reads, as
// qact.comp's PROLOGUE 2 would have quantized them (the same bits): a workgroup's NUM_ROWS rows
// are NUM_ROWS / 2 gate rows and the same up rows, so the invocation that sums a gate row also
// has its up row; y (binding 2, (m, half) f32, coherent) takes h, and the last workgroup to
// finish an ACT_BLOCK block of h (a counter per x row and block: split_rows.glsl's count_part)
// stages the block in shared memory, quantizes it with qact's code (32 invocations a block where
// the workgroup has them, else one) and copies it out: the swiglu quantization needs no dispatch
// of its own. Bindings: 3 the prologue's operand (x again when
// there is none), 4 the quantized rows, 5 the split counters. No residual, no ROPE_KV.
// ARGMAX: no y; each x row's argmax over the n_out columns (the first maximum, NaN the largest:
// reduce.comp's order) goes to ids (binding 2, u32, at r_offset + row * r_row). A workgroup
// folds its rows' sums (the values plain stores would write), leaves its (value, index) in the
// parts (bindings 4, 5), and the last of each ARGMAX workgroups to finish (split_rows.glsl, a
// counter each) merges them into a part of the second level; the last of those merges the
// blocks' and writes the ids. Two levels keep each merge to a round of loads (SmolLM2's lm_head
// has 12288 workgroups). Bindings: 3 the prologue's operand (x again when there is none), 6 the
// split counters (blocks + 1 per z). No residual, no ROPE_KV, no SWIGLU_Q8.
#ifdef WICK_SUBGROUP_ARITHMETIC
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifdef WICK_INT_DOT  // ACT_Q8's integer sums four bytes at a time (include/quant.glsl's dot8)
#extension GL_EXT_spirv_intrinsics : require
#endif
#ifdef ACT_INLINE
#define ACT_Q8 1
#define PROLOGUE ACT_INLINE
#define ACT_SERIAL 1
#endif
#if defined(ACT_STAGE) && !defined(ACT_Q8)
#define ACT_Q8 1
#endif
#ifdef SWIGLU_Q8
#define ACT_SERIAL 1
#if WG_SIZE % 32 == 0  // the tail quantizes with 32 invocations a block (qact.glsl's grouped code)
#define ACT_GROUPED 1
#define ACT_GROUP_VALUE staged_value
#endif
#if defined(RESIDUAL) || defined(ROPE_KV) || !defined(ACT_Q8)
#error "qmatvec: SWIGLU_Q8 takes ACT_Q8 rows, without RESIDUAL or ROPE_KV"
#endif
#endif
#if defined(ARGMAX) && (defined(RESIDUAL) || defined(ROPE_KV) || defined(SWIGLU_Q8))
#error "qmatvec: ARGMAX takes the plain product, without RESIDUAL, ROPE_KV or SWIGLU_Q8"
#endif
#include "include/common.glsl"
#include "include/dtype.glsl"
#ifdef W_STAGE
// W_STAGE (with ACT_INLINE): the workgroup's weight rows (W_ROW_HALVES 16-bit words each, two to
// a shared word, W_WORDS in all) are loaded into registers (W_PRE a thread) before the prologue,
// whose barriers and arithmetic their latency then overlaps, and stored in shared memory after
// it, where the dot loop decodes them (quant.glsl's QUANT_HALF).
#ifndef ACT_INLINE
#error "qmatvec: W_STAGE takes ACT_INLINE"
#endif
shared uint s_w[W_WORDS];
#define QUANT_HALF(i) ((s_w[(i) >> 1] >> (((i)&1u) * 16u)) & 0xffffu)
#endif
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
CT act_inv(uint row) { return CT(0); }  // act_value's; stage_rows computes its own
#if NORM_LANES % WG_SIZE != 0
#error "qmatvec: ACT_INLINE 1 takes WG_SIZE dividing NORM_LANES"
#endif
#define LANES_PER_INVOCATION (NORM_LANES / WG_SIZE)
shared float s_alpha[ACT_K];
shared CT s_sums[NUM_COLS * WG_SIZE];
#endif
// Each invocation's elements of a row: t, t + WG_SIZE, ...
#define ACT_ROUNDS ((ACT_K + WG_SIZE - 1u) / WG_SIZE)
// The rows after the prologue, in f32 (DT's values), row c at c * ACT_K.
shared float s_rows[NUM_COLS * ACT_K];
float staged_value(uint row, uint e) { return s_rows[row * ACT_K + e]; }
#define ACT_SERIAL_VALUE staged_value
#include "include/qact.glsl"

// x rows col0 .. col0 + n_cols - 1 after the prologue into s_rows, as qact.comp computes them;
// invocation t takes elements t, t + WG_SIZE, ... rms_norm: element e is lane e % NORM_LANES of
// norm.comp's workgroup, so invocation t's elements i WG_SIZE + t with i % LANES_PER_INVOCATION
// = q are lane t + q WG_SIZE's, in its order; norm's tree then folds its lanes (first within
// each invocation, then across the workgroup), so the sums are norm's bits. Every invocation
// calls it.
void stage_rows(uint t, uint n_cols) {
#if PROLOGUE == 1
  for (uint i = 0u; i < ACT_ROUNDS; i++) {
    const uint e = t + WG_SIZE * i;
    if (e < ACT_K) s_alpha[e] = LOAD(DT, p[pc.p_offset + e * pc.p_k]);
  }
  for (uint c = 0u; c < n_cols; c++) {
    const uint base = pc.x_offset + act_row(c) * pc.x_row;
    CT ss[LANES_PER_INVOCATION];
    [[unroll]] for (uint q = 0u; q < LANES_PER_INVOCATION; q++) ss[q] = CT(0);
    for (uint i0 = 0u; i0 < ACT_ROUNDS; i0 += LANES_PER_INVOCATION) {
      [[unroll]] for (uint q = 0u; q < LANES_PER_INVOCATION; q++) {
        const uint e = t + WG_SIZE * (i0 + q);
        if (e >= ACT_K) break;
        const CT x = at(base, e);
        s_rows[c * ACT_K + e] = float(x);
        const CT v = x - CT(0);  // as row_inv_rms: (x - mean)^2, mean 0
        ss[q] += v * v;
      }
    }
    // norm's tree steps NORM_LANES / 2 .. WG_SIZE: lanes of this invocation.
    [[unroll]] for (uint step = NORM_LANES / 2u; step >= WG_SIZE; step >>= 1)
      [[unroll]] for (uint q = 0u; q < step / WG_SIZE; q++)
        ss[q] = ss[q] + ss[q + step / WG_SIZE];
    s_sums[c * WG_SIZE + t] = ss[0];
  }
  barrier();
  for (uint step = WG_SIZE / 2u; step > 0u; step >>= 1) {  // the rest of norm's tree
    if (t < step)
      for (uint c = 0u; c < n_cols; c++)
        s_sums[c * WG_SIZE + t] = s_sums[c * WG_SIZE + t] + s_sums[c * WG_SIZE + t + step];
    barrier();
  }
  for (uint c = 0u; c < n_cols; c++) {
    const CT inv = inversesqrt(s_sums[c * WG_SIZE] / CT(pc.k) + CT(pc.eps));
    for (uint e = t; e < ACT_K; e += WG_SIZE) {
      const CT v = row_normalized(CT(s_rows[c * ACT_K + e]), CT(0), inv, CT(s_alpha[e]));
      s_rows[c * ACT_K + e] = LOAD(DT, PACK_W(DT, v));
    }
  }
#else
  for (uint c = 0u; c < n_cols; c++)
    for (uint i = 0u; i < ACT_ROUNDS; i++) {
      const uint e = t + WG_SIZE * i;
      if (e < ACT_K) s_rows[c * ACT_K + e] = act_value(c, e);
    }
#endif
  barrier();
}
#elif defined(ACT_STAGE)
// x quantized by qact.comp (row c at word c * pc.x_row), copied into shared memory first.
layout(set = 0, binding = 1) readonly buffer XQ { uint xq_rows[]; };
shared uint xq[NUM_COLS * ACT_ROW_WORDS];
uint xq_base(uint col0, uint c) { return c * ACT_ROW_WORDS; }
#elif defined(ACT_Q8)
// x quantized by qact.comp: row c at word c * pc.x_row (x_offset and x_k unused).
layout(set = 0, binding = 1) readonly buffer XQ { uint xq[]; };
uint xq_base(uint col0, uint c) { return (col0 + c) * pc.x_row; }
#ifdef SWIGLU_Q8
// SWIGLU_Q8's staging: a block of h per x row, then its quantized words (qact.glsl's layout of a
// one-block row).
#define ACT_K ACT_BLOCK
#define ACT_ROW_WORDS (ACT_BLOCK / 4u + 2u)
shared float s_rows[NUM_COLS * ACT_K];
shared uint s_xq[NUM_COLS * ACT_ROW_WORDS];
float staged_value(uint row, uint e) { return s_rows[row * ACT_K + e]; }
#define ACT_SERIAL_VALUE staged_value
#define ACT_OUT s_xq
#include "include/qact.glsl"
#endif
#else
layout(set = 0, binding = 1) readonly buffer X { STORAGE_T(DT) x[]; };
#endif
#ifdef SWIGLU_Q8
layout(set = 0, binding = 2) coherent buffer Y { float y[]; };
layout(set = 0, binding = 4) writeonly buffer HQ { uint hq[]; };
#define SPLIT_COUNTERS_BINDING 5
#include "include/split_rows.glsl"
#if !(defined(ACT_INLINE) && PROLOGUE == 2)  // qact_value.glsl has it then
#include "include/math.glsl"
#endif
#elif defined(ARGMAX)
layout(set = 0, binding = 2) writeonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 4) coherent buffer PartVal { float part_val[]; };
layout(set = 0, binding = 5) coherent buffer PartIdx { uint part_idx[]; };
#define SPLIT_COUNTERS_BINDING 6
#include "include/split_rows.glsl"
#define ARG_T float
#include "include/arg_order.glsl"
#else
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
#endif
#ifdef RESIDUAL
layout(set = 0, binding = 3) readonly buffer R { float residual[]; };
#endif

shared float s_part[NUM_ROWS * NUM_COLS * WG_SIZE];

#ifdef ROPE_KV
layout(set = 0, binding = 4) readonly buffer Pos { uint pos[]; };
layout(set = 0, binding = 5) readonly buffer Slots { uint slots[]; };
layout(set = 0, binding = 6) readonly buffer CosQ { float cos_q[]; };
layout(set = 0, binding = 7) readonly buffer SinQ { float sin_q[]; };
layout(set = 0, binding = 8) readonly buffer CosK { float cos_k[]; };
layout(set = 0, binding = 9) readonly buffer SinK { float sin_k[]; };
layout(set = 0, binding = 10) writeonly buffer KCache { STORAGE_T(KV_DT) k_cache[]; };
layout(set = 0, binding = 11) writeonly buffer VCache { STORAGE_T(KV_DT) v_cache[]; };
#define ERROR_BINDING 12
#include "include/errors.glsl"
#ifndef CT  // ACT_INLINE's (qact_value.glsl) is float too: x is f32, f16 or bf16
#define CT float
#endif
#include "include/rope.glsl"

// Output rows `row` (even) and row + 1 of x row c, the sums a and b: rope_kv.comp's stores for
// them. An item at a position past the cache (or in a slot past it) gets nothing written; its
// first pair reports it.
void store_pair(uint c, uint row, float a, float b) {
  const uint d = pc.d, q_cols = pc.h * d, k_cols = pc.kvh * d;
  const uint p = pos[pc.pos_offset + c * pc.pos_stride];
  const uint slot = pc.cache_slots > 0u ? slots[pc.slots_offset + c] : c;
  if (p >= pc.max_seq) {
    if (row == 0u) report_error(WICK_ERROR_CACHE_POSITION, p, 0u, pc.max_seq);
    return;
  }
  if (pc.cache_slots > 0u && slot >= pc.cache_slots) {
    if (row == 0u) report_error(WICK_ERROR_CACHE_SLOT, slot, 0u, pc.cache_slots);
    return;
  }
  const uint part = row < q_cols ? 0u : row < q_cols + k_cols ? 1u : 2u;
  const uint col = part == 0u ? row : part == 1u ? row - q_cols : row - q_cols - k_cols;
  const uint head = col / d, i = col % d;  // i even: the pair (i, i + 1)
  const uint cache_at = ((slot * pc.kvh + head) * pc.max_seq + p) * d + i;
  if (part == 2u) {
    v_cache[pc.vc_offset + cache_at] = PACK(KV_DT, a);
    v_cache[pc.vc_offset + cache_at + 1u] = PACK(KV_DT, b);
    return;
  }
  const uint tab = part * 2u, at = p * pc.table_rows[part] + i / 2u;
  const float cs = part == 0u ? cos_q[pc.table_offsets[0] + at] : cos_k[pc.table_offsets[2] + at];
  const float sn = part == 0u ? sin_q[pc.table_offsets[1] + at] : sin_k[pc.table_offsets[3] + at];
  const float lo = rope_rotate(true, a, b, cs, sn), hi = rope_rotate(false, a, b, cs, sn);
  if (part == 0u) {
    const uint q_at = (c * pc.h + head) * d + i;
    y[q_at] = lo;
    y[q_at + 1u] = hi;
  } else {
    k_cache[pc.kc_offset + cache_at] = PACK(KV_DT, lo);
    k_cache[pc.kc_offset + cache_at + 1u] = PACK(KV_DT, hi);
  }
}
#endif

#ifdef SWIGLU_Q8
#define HALF_ROWS (NUM_ROWS / 2u)
#if NUM_ROWS % 2 != 0
#error "qmatvec: SWIGLU_Q8 takes an even NUM_ROWS"
#endif
// The workgroup's row r: gate rows, then the same up rows (half = n_out / 2 further on).
uint out_row(uint r) {
  return (r < HALF_ROWS ? 0u : pc.n_out / 2u) + group_index() * HALF_ROWS + r % HALF_ROWS;
}
// h of the workgroup's row pair r (gate r, up r + HALF_ROWS) for x row c, into y (m, n_out / 2):
// qact.comp's PROLOGUE 2 value of f32 gate and up, silu rounded, then the product.
void swiglu_store(uint c, uint r, float gate, float up) {
  y[c * (pc.n_out / 2u) + group_index() * HALF_ROWS + r] = silu_accurate(gate) * up;
}
shared bool s_block_last[NUM_COLS];
// Every invocation calls it once the workgroup's h are in y: the blocks of h this workgroup
// completed (their counters' last) are quantized into hq.
void swiglu_quantize(uint t, uint col0, uint n_cols) {
  const uint half_n = pc.n_out / 2u, blocks = half_n / ACT_BLOCK;
  const uint block = group_index() * HALF_ROWS / ACT_BLOCK;
  memoryBarrierBuffer();  // this invocation's h before the workgroup's count
  barrier();
  if (t < n_cols)  // each x row's block counted at once
    s_block_last[t] = count_part((col0 + t) * blocks + block, ACT_BLOCK / HALF_ROWS);
  barrier();
  memoryBarrierBuffer();  // the other workgroups' h after their counts
  // The completed blocks staged by the whole workgroup (one round of loads), quantized (32
  // invocations a block where the workgroup has them, else an invocation a block), copied out.
  for (uint c = 0u; c < n_cols; c++) {
    if (!s_block_last[c]) continue;  // uniform per workgroup
    for (uint i = t; i < ACT_BLOCK; i += WG_SIZE)
      s_rows[c * ACT_K + i] = y[(col0 + c) * half_n + block * ACT_BLOCK + i];
  }
  barrier();
#ifdef ACT_GROUPED
  for (uint c = 0u; c < n_cols; c++)
    if (s_block_last[c])  // uniform; the invocations past 32 only join the barriers
      quantize_act_block(c, 0u, t < 32u, ACT_BLOCK, ACT_ROW_WORDS, pc.ties_away != 0u);
#else
  if (t < n_cols && s_block_last[t])
    quantize_act_block_serial(t, 0u, ACT_BLOCK, ACT_ROW_WORDS, pc.ties_away != 0u);
  barrier();
#endif
  // Down's row of half elements: the q words, then the scales (qact.glsl's layout).
  const uint scales = ACT_BLOCK == 32u ? 2u : 1u, q_words = ACT_BLOCK / 4u;
  for (uint c = 0u; c < n_cols; c++) {
    if (!s_block_last[c]) continue;
    const uint dst_at = (col0 + c) * (half_n / 4u + half_n / ACT_BLOCK * scales);
    for (uint w = t; w < q_words + scales; w += WG_SIZE)
      hq[w < q_words ? dst_at + block * q_words + w
                     : dst_at + half_n / 4u + block * scales + (w - q_words)] =
          ACT_OUT[c * ACT_ROW_WORDS + w];
  }
}
#else
uint out_row(uint r) { return group_index() * NUM_ROWS + r; }
#endif

#ifdef W_STAGE
// 16-bit word h of the workgroup's rows (local row h / W_ROW_HALVES); 0 past the matrix.
uint w_half(uint h) {
  const uint r = h / W_ROW_HALVES, row = out_row(r);
  return r < NUM_ROWS && row < pc.n_out ? uint(wq[row * W_ROW_HALVES + h % W_ROW_HALVES]) : 0u;
}
uint w_word(uint word) { return w_half(2u * word) | (w_half(2u * word + 1u) << 16); }
// Where local row r's blocks start: in s_w, or in wq (global row `row`).
#define W_ROW_START(r, row) ((r) * (W_ROW_HALVES * 2u))
#else
#define W_ROW_START(r, row) ((row) * pc.row_bytes)
#endif

#ifdef ARGMAX
#define ARG_NONE 0xffffffffu
shared float s_val[NUM_ROWS * NUM_COLS];  // the workgroup's sums: (r, c) at r * NUM_COLS + c
shared float s_fold_val[WG_SIZE];
shared uint s_fold_idx[WG_SIZE];

// (v, j) folded into (acc, idx); idx ARG_NONE: nothing yet, j ARG_NONE: nothing to fold.
void arg_fold(inout float acc, inout uint idx, float v, uint j) {
  if (j == ARG_NONE) return;
  if (idx == ARG_NONE || arg_replaces(is_nan(v), v, j, is_nan(acc), acc, idx, true)) {
    acc = v;
    idx = j;
  }
}

// Every invocation's (acc, idx) folded over the workgroup into s_fold_val[0], s_fold_idx[0].
// Every invocation calls it.
void group_fold(uint t, float acc, uint idx) {
  barrier();  // a previous call's results have been read
  s_fold_val[t] = acc;
  s_fold_idx[t] = idx;
  barrier();
  for (uint step = WG_SIZE / 2u; step > 0u; step >>= 1) {
    if (t < step) {
      float a = s_fold_val[t];
      uint i = s_fold_idx[t];
      arg_fold(a, i, s_fold_val[t + step], s_fold_idx[t + step]);
      s_fold_val[t] = a;
      s_fold_idx[t] = i;
    }
    barrier();
  }
}

// The n parts at `at` folded over the workgroup into s_fold_val[0], s_fold_idx[0] (a load or two
// an invocation). Every invocation calls it.
void fold_parts(uint t, uint at, uint n) {
  float acc = 0.0;
  uint idx = ARG_NONE;
  for (uint q = t; q < n; q += WG_SIZE) arg_fold(acc, idx, part_val[at + q], part_idx[at + q]);
  group_fold(t, acc, idx);
}

// Every invocation calls it once s_val holds the workgroup's sums: the argmax's two levels of
// parts and counts (above), the last workgroup writing the ids of its x rows.
void argmax_tail(uint t, uint row0, uint col0, uint n_cols) {
  const uint groups = (pc.n_out + NUM_ROWS - 1u) / NUM_ROWS, g = group_index();
  if (g >= groups) return;  // uniform per workgroup: a grid rounded up has no rows there
  const uint blocks = (groups + ARGMAX - 1u) / ARGMAX, b = g / ARGMAX;
  const uint in_block = min(uint(ARGMAX), groups - b * ARGMAX);
  const uint counters = gl_WorkGroupID.z * (blocks + 1u), second = pc.m * groups;
  barrier();  // s_val written
  if (t < n_cols) {  // the workgroup's rows in order, an invocation per x row
    float acc = 0.0;
    uint idx = ARG_NONE;
    for (uint r = 0u; r < NUM_ROWS && row0 + r < pc.n_out; r++)
      arg_fold(acc, idx, s_val[r * NUM_COLS + t], row0 + r);
    part_val[(col0 + t) * groups + g] = acc;
    part_idx[(col0 + t) * groups + g] = idx;
  }
  if (!last_of_row(counters + b, in_block)) return;
  for (uint c = 0u; c < n_cols; c++) {  // the block's parts
    fold_parts(t, (col0 + c) * groups + b * ARGMAX, in_block);
    if (t == 0u) {
      part_val[second + (col0 + c) * blocks + b] = s_fold_val[0];
      part_idx[second + (col0 + c) * blocks + b] = s_fold_idx[0];
    }
  }
  if (!last_of_row(counters + blocks, blocks)) return;
  for (uint c = 0u; c < n_cols; c++) {  // the blocks' parts
    fold_parts(t, second + (col0 + c) * blocks, blocks);
    if (t == 0u) ids[pc.r_offset + (col0 + c) * pc.r_row] = s_fold_idx[0];
  }
}

// The sum of x row c, output row `row`: kept in s_val for argmax_tail.
void store(uint c, uint row, float v) {
  s_val[(row - out_row(0u)) * NUM_COLS + c - gl_WorkGroupID.z * NUM_COLS] = v;
}
#else
// y's element (x row c, output row `row`).
void store(uint c, uint row, float v) {
#ifdef RESIDUAL
  v = residual[pc.r_offset + c * pc.r_row + row * pc.r_col] + v;
#endif
  y[c * pc.n_out + row] = v;
}
#endif

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint row0 = out_row(0u);  // ROPE_KV's pairs and the stores: rows row0 ..
  const uint col0 = gl_WorkGroupID.z * NUM_COLS, n_cols = min(NUM_COLS, pc.m - col0);
  float acc[MAX_ROWS][MAX_COLS];
  for (uint r = 0u; r < NUM_ROWS; r++)
    for (uint c = 0u; c < NUM_COLS; c++) acc[r][c] = 0.0;

#ifdef W_STAGE
  uint w_pre[W_PRE];
  for (uint i = 0u; i < W_PRE; i++) {
    const uint word = t + i * WG_SIZE;
    w_pre[i] = word < W_WORDS ? w_word(word) : 0u;
  }
#endif
#ifdef ACT_INLINE
  g_col0 = col0;
  stage_rows(t, n_cols);  // n_cols: uniform per workgroup
  for (uint item = t; item < n_cols * (ACT_K / ACT_BLOCK); item += WG_SIZE)
    quantize_act_block_serial(item / (ACT_K / ACT_BLOCK), item % (ACT_K / ACT_BLOCK), ACT_K,
                              ACT_ROW_WORDS, pc.ties_away != 0u);
#ifdef W_STAGE
  for (uint i = 0u; i < W_PRE; i++) {
    const uint word = t + i * WG_SIZE;
    if (word < W_WORDS) s_w[word] = w_pre[i];
  }
#endif
  barrier();
#elif defined(ACT_STAGE)
  for (uint i = t; i < n_cols * pc.x_row; i += WG_SIZE) {
    const uint c = i / pc.x_row, w = i - c * pc.x_row;
    xq[c * ACT_ROW_WORDS + w] = xq_rows[(col0 + c) * pc.x_row + w];
  }
  barrier();
#endif
#ifdef ACT_Q8
  // The CPU's integer dot products, 8 elements at a time: per run, (d_w d_x) * sum(v q) with the
  // group's integer scale, minus (d_x dmin) * min * sum(q) for the K formats with a min; the
  // 32-element formats with a min add m_w * s_x once per block (the thread at its start).
  for (uint run = t; run < pc.k / 8u; run += WG_SIZE) {
    const uint e = run * 8u;
#ifdef WICK_INT_DOT
    uvec2 xw[MAX_COLS];
#else
    int xi[MAX_COLS][8];
#endif
    float dx[MAX_COLS];
#ifdef QUANT_MIN
    float sx[MAX_COLS];
    int xsum[MAX_COLS];
#endif
    for (uint c = 0u; c < NUM_COLS; c++) {
      const uint base = xq_base(col0, c);
      const uvec2 words = c < n_cols ? uvec2(xq[base + e / 4u], xq[base + e / 4u + 1u]) : uvec2(0u);
#ifdef WICK_INT_DOT
      xw[c] = words;
#else
      for (uint i = 0u; i < 8u; i++)
        xi[c][i] = bitfieldExtract(int(i < 4u ? words.x : words.y), int(8u * (i & 3u)), 8);
#endif
      const uint sw = base + act_scale_word(pc.k, e);
      dx[c] = c < n_cols ? uintBitsToFloat(xq[sw]) : 0.0;
#ifdef QUANT_MIN
#ifndef QUANT_K
      sx[c] = c < n_cols && e % 32u == 0u ? uintBitsToFloat(xq[sw + 1u]) : 0.0;
#elif defined(WICK_INT_DOT)
      xsum[c] = dot8(uvec2(0x01010101u), words);
#else
      xsum[c] = 0;
      for (uint i = 0u; i < 8u; i++) xsum[c] += xi[c][i];
#endif
#endif
    }
    const uint blk = (e / QK) * BLOCK_BYTES, j = e % QK;
    for (uint r = 0u; r < NUM_ROWS; r++) {
      const uint row = out_row(r);
      if (row >= pc.n_out) break;
      float dw, mw;
      int sc, mn;
#ifdef WICK_INT_DOT
      uvec2 v;
      decode8_packed(W_ROW_START(r, row) + blk, j, v, dw, mw, sc, mn);
#else
      int v[8];
      decode8_int(W_ROW_START(r, row) + blk, j, v, dw, mw, sc, mn);
#endif
      for (uint c = 0u; c < NUM_COLS; c++) {
#ifdef WICK_INT_DOT
        const int isum = dot8(v, xw[c]);
#else
        int isum = 0;
        for (uint i = 0u; i < 8u; i++) isum += v[i] * xi[c][i];
#endif
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
      const uint row = out_row(r);
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
#ifdef SWIGLU_Q8
    if (writer)
      for (uint r = 0u; r < HALF_ROWS; r++)
        for (uint c = 0u; c < n_cols; c++)
          swiglu_store(col0 + c, r, acc[r][c], acc[r + HALF_ROWS][c]);
    swiglu_quantize(t, col0, n_cols);
#elif defined(ROPE_KV)
    if (writer)
      for (uint r = 0u; r + 1u < NUM_ROWS; r += 2u)
        for (uint c = 0u; c < NUM_COLS; c++)
          if (row0 + r < pc.n_out && c < n_cols)
            store_pair(col0 + c, row0 + r, acc[r][c], acc[r + 1u][c]);
#else
    if (writer)
      for (uint r = 0u; r < NUM_ROWS; r++)
        for (uint c = 0u; c < NUM_COLS; c++)
          if (row0 + r < pc.n_out && c < n_cols) store(col0 + c, row0 + r, acc[r][c]);
#ifdef ARGMAX
    argmax_tail(t, row0, col0, n_cols);
#endif
#endif
    return;
  }
  if (writer)
    for (uint r = 0u; r < NUM_ROWS; r++)
      for (uint c = 0u; c < NUM_COLS; c++) s_part[(r * NUM_COLS + c) * n_part + part] = acc[r][c];
  barrier();
#ifdef SWIGLU_Q8
  // A gate row and its up row per invocation: v = (r, c), gate and up summed as the plain stores
  // sum them (the same bits).
  for (uint v = t; v < HALF_ROWS * NUM_COLS; v += WG_SIZE) {
    const uint c = v % NUM_COLS, vu = v + HALF_ROWS * NUM_COLS;  // vu: the up row's
    if (c >= n_cols) continue;
    float g = 0.0, u = 0.0;
    for (uint p = 0u; p < n_part; p++) {
      g += s_part[v * n_part + p];
      u += s_part[vu * n_part + p];
    }
    swiglu_store(col0 + c, v / NUM_COLS, g, u);
  }
  swiglu_quantize(t, col0, n_cols);
#elif defined(ROPE_KV)
  // A pair of rows per invocation: v = (pair, c).
  for (uint v = t; v < NUM_ROWS / 2u * NUM_COLS; v += WG_SIZE) {
    const uint r = 2u * (v / NUM_COLS), c = v % NUM_COLS;
    if (row0 + r >= pc.n_out || c >= n_cols) continue;
    const uint v0 = r * NUM_COLS + c, v1 = v0 + NUM_COLS;
    float a = 0.0, b = 0.0;
    for (uint p = 0u; p < n_part; p++) {
      a += s_part[v0 * n_part + p];
      b += s_part[v1 * n_part + p];
    }
    store_pair(col0 + c, row0 + r, a, b);
  }
#else
  for (uint v = t; v < NUM_ROWS * NUM_COLS; v += WG_SIZE) {
    const uint row = row0 + v / NUM_COLS, c = v % NUM_COLS;
    if (row >= pc.n_out || c >= n_cols) continue;
    float s = 0.0;
    for (uint p = 0u; p < n_part; p++) s += s_part[v * n_part + p];
    store(col0 + c, row, s);
  }
#ifdef ARGMAX
  argmax_tail(t, row0, col0, n_cols);
#endif
#endif
}
