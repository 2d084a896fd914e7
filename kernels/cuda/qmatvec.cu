// y (m, n_out) = x (m, k) @ W^T for a few x rows (decode), W in a block format (QTYPE, see
// include/quant.cuh) decoded on the fly, so every weight byte is read once per NUM_COLS x rows.
// A block computes NUM_ROWS output rows for NUM_COLS x rows (blockIdx.z: which NUM_COLS; the
// last group may have fewer). The work is units of 32 consecutive elements of one weight row:
// the block's threads take the (row, unit) pairs in turn, row by row (consecutive threads,
// consecutive units of a row: coalesced, and every thread busy even where a row has fewer units
// than the block has threads), each decoding its unit once for all NUM_COLS x rows. The partial
// sums are added by warp shuffles, then across the block's warps through shared memory.
// ACT_Q8: x comes quantized to 8 bits by qact.cu, and each unit is the CPU's integer dot product
// (unit_dot in include/quant.cuh) times the scales; otherwise x (DT) is read in f32, runs of 8
// dequantized weights at a time.
// ACT_INLINE (0, 1, 2: qact.cu's PROLOGUE): the block quantizes its NUM_COLS x rows itself, as
// qact.cu would have (include/qact.cuh, qact_value.cuh: the same bits), into shared memory
// (ACT_ROW_WORDS words per row), then runs ACT_Q8's loop on them: decode takes one dispatch, not
// two. Every block quantizes the rows again: cheaper than a launch at decode's sizes.
// RESIDUAL: y = residual + the product (one rounding, as the add kernel's).
// Bindings: 0 the weight's blocks, 1 x (ACT_Q8: its quantized rows), 2 y (f32), 3 (RESIDUAL) the
// residual (f32), then (ACT_INLINE 1, 2) the prologue's operand: alpha or up.
// ACT_STAGE (with ACT_Q8): the block first copies its x rows, quantized by qact.cu, into shared
// memory (ACT_ROW_WORDS words per row), where the dot loop reads them.
// ROPE_KV: the product's columns are q (h heads), k and v (kvh heads) of head dim d, one token of
// batch item c per x row c, and they go where rope_kv_cache (rope_kv.cu) would put them: q rotated
// into y (b, h, 1, d), k rotated and v as it is into the caches (KV_DT) at the item's position,
// in its slot. Rotation pairs are adjacent columns (rope_i), so a block's rows (even, from an
// even row) hold whole pairs; each pair's two sums meet in one thread, which rotates them with
// rope.cuh's arithmetic (the same bits as the unfused ops). No residual. Bindings after the
// prologue's operand (binding 3, bound even when unused): 4 pos, 5 slots, 6-9 cos_q, sin_q,
// cos_k, sin_k (f32), 10 k_cache, 11 v_cache, 12 the op's error record.
// MMA (with ACT_Q8, 32-element formats): the products on the tensor cores. A block computes 16
// output rows (NUM_ROWS) for its x rows; its warps split the row's units (warp w: units w,
// w + warps, ...). Per unit each warp runs two 8-bit MMAs of k = 16 (include/mma.cuh), W's 16
// rows as A and the 8 x rows as B, so the unit's integer sums (the CPU's) come out for 16 x 8
// outputs at once, and each thread scales its four by d_w dx (+ m_w sx) as unit_dot does. MMA row
// i < 8 is output row 2 i, i >= 8 row 2 (i - 8) + 1: a thread's two rows are an adjacent pair
// (ROPE_KV's rotation pairs). The warps' sums meet in shared memory; warp 0 stores.
// SWIGLU_Q8 (with ACT_Q8, SIMT): the product is [gate | up] (n_out = 2 half columns) and what the
// kernel leaves is h = silu(gate) * up quantized to 8 bits, the rows a down projection's ACT_Q8
// reads, as qact.cu's PROLOGUE 2 would have quantized them (the same bits): a block's NUM_ROWS
// rows are NUM_ROWS / 2 gate rows and the same up rows, so the thread that sums a gate row also
// has its up row; y (binding 2, (m, half) f32) takes h, and the last block to finish an ACT_BLOCK
// block of h (a counter per x row and block, include/split_rows.cuh's count_part) quantizes it with
// a warp (include/qact.cuh), reading h through L2. Bindings: 3 the prologue's operand (x again
// when there is none), 4 the quantized rows, 5 the split counters. No residual, no ROPE_KV.
// ARGMAX (SIMT): no y; each x row's argmax over the n_out columns (the first maximum, NaN the
// largest: reduce.cu's order) goes to ids (binding 2, u32, at r_offset + row * r_row). A block
// folds its rows' sums (the values plain stores would write), leaves its (value, index) in the
// parts (bindings 4, 5), and the last of each ARGMAX blocks to finish (split_rows.cuh, a counter
// each) merges them into a part of the second level; the last of those merges the blocks' and
// writes the ids. Bindings: 3 the prologue's operand (x again when there is none), 6 the split
// counters (blocks + 1 per blockIdx.z). No residual, no ROPE_KV, no SWIGLU_Q8, no MMA.
// Specialization: WICK_SPEC_0 NUM_COLS (1 .. 8), WICK_SPEC_1 NUM_ROWS (1 .. 8; MMA: 16).
#ifdef ACT_INLINE
#define ACT_Q8 1
#endif
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/quant.cuh"
#include "include/warp.cuh"
#ifdef MMA
#if !defined(ACT_Q8) || defined(ACT_INLINE) || QK != 32 || defined(QUANT_K)
#error "qmatvec.cu: MMA reads x quantized by qact.cu, and 32-element formats"
#endif
#include "include/mma.cuh"
#endif
#ifdef ROPE_KV
#include "include/errors.cuh"
#include "include/rope.cuh"
#endif
#ifdef SWIGLU_Q8
#if defined(RESIDUAL) || defined(ROPE_KV) || !defined(ACT_Q8) || defined(MMA) || defined(ACT_STAGE)
#error "qmatvec.cu: SWIGLU_Q8 takes ACT_Q8 rows on the SIMT path, without RESIDUAL or ROPE_KV"
#endif
#include "include/math.cuh"
#include "include/qact.cuh"
#include "include/split_rows.cuh"
#endif
#ifdef ARGMAX
#if defined(RESIDUAL) || defined(ROPE_KV) || defined(SWIGLU_Q8) || defined(MMA)
#error "qmatvec.cu: ARGMAX takes the plain SIMT product, without RESIDUAL, ROPE_KV or SWIGLU_Q8"
#endif
#include "include/arg_order.cuh"
#include "include/split_rows.cuh"
#endif
#ifdef ACT_INLINE
#include "include/qact.cuh"
#include "include/qact_value.cuh"
#if ACT_INLINE < 0 || ACT_INLINE > 2
#error "qmatvec.cu: ACT_INLINE is 0, 1 or 2"
#endif
#ifdef RESIDUAL
#define P_BINDING 4
#else
#define P_BINDING 3
#endif
#endif

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 1
#endif
#ifndef WICK_SPEC_1
#define WICK_SPEC_1 1
#endif
constexpr uint32_t NUM_COLS = WICK_SPEC_0;  // x rows per block
constexpr uint32_t NUM_ROWS = WICK_SPEC_1;  // output rows per block
#ifdef MMA
static_assert(NUM_COLS >= 1u && NUM_COLS <= 8u && NUM_ROWS == 16u,
              "qmatvec.cu: MMA takes 1 .. 8 x rows and 16 output rows per block");
#else
static_assert(NUM_COLS >= 1u && NUM_COLS <= 8u && NUM_ROWS >= 1u && NUM_ROWS <= 8u,
              "qmatvec.cu: 1 .. 8 x rows and output rows per block");
#endif
constexpr uint32_t UNIT = 32u;

#if defined(ROPE_KV)
WICK_PARAMS_STRUCT(QMatmulParams, WICK_PARAMS_QMATVEC_ROPE(WICK_CU_FIELD, WICK_CU_ARRAY))
#elif defined(ACT_INLINE) || defined(SWIGLU_Q8)
WICK_PARAMS_STRUCT(QMatmulParams, WICK_PARAMS_QMATVEC_ACT(WICK_CU_FIELD, WICK_CU_ARRAY))
#else
WICK_PARAMS_STRUCT(QMatmulParams, WICK_PARAMS_QMATMUL(WICK_CU_FIELD, WICK_CU_ARRAY))
#endif

#if defined(ACT_INLINE) || defined(ACT_STAGE)
// The quantized rows in shared memory: plain loads (__ldg is for global memory).
#define XQ_LOAD(p) (*(p))
#elif defined(ACT_Q8)
#define XQ_LOAD(p) __ldg(p)
#endif
#ifdef ACT_Q8
// x quantized by qact.cu (or by the block itself: ACT_INLINE): x row col0 + c at word c * xq_row
// of x (x_offset and x_k unused).
typedef uint32_t XT;
#else
typedef STORAGE_T(DT) XT;
#endif

// The contribution of unit u of weight row `row` to each x row of the block.
WICK_DEV void unit_products(const QMatmulParams& pc, const uint8_t* w, const XT* x, uint32_t xq_row,
                            uint32_t row, uint32_t u, uint32_t col0, uint32_t n_cols,
                            float (&s)[NUM_COLS]) {
  const uint32_t e = u * UNIT;
  const uint32_t blk = row * pc.row_bytes + (e / QK) * BLOCK_BYTES, j = e % QK;
#ifdef ACT_Q8
  (void)col0;
  const WeightUnit wu = decode_unit(w, blk, j);
  const uint32_t scale_word = act_scale_word(pc.k, e);
#pragma unroll
  for (uint32_t c = 0u; c < NUM_COLS; c++) {
    s[c] = 0.0f;
    if (c >= n_cols) continue;
    const uint32_t base = c * xq_row;
    uint32_t xv[8];
    if (xq_row % 4u == 0u) {  // rows 16-byte aligned: two vector loads
      const uint4* p = reinterpret_cast<const uint4*>(x + base + e / 4u);
      const uint4 lo = XQ_LOAD(p), hi = XQ_LOAD(p + 1);
      xv[0] = lo.x, xv[1] = lo.y, xv[2] = lo.z, xv[3] = lo.w;
      xv[4] = hi.x, xv[5] = hi.y, xv[6] = hi.z, xv[7] = hi.w;
    } else {
#pragma unroll
      for (uint32_t i = 0u; i < 8u; i++) xv[i] = XQ_LOAD(x + base + e / 4u + i);
    }
    const float dx = __uint_as_float(XQ_LOAD(x + base + scale_word));
#if defined(QUANT_MIN) && !defined(QUANT_K)
    const float sx = __uint_as_float(XQ_LOAD(x + base + scale_word + 1u));
#else
    const float sx = 0.0f;
#endif
    s[c] = unit_dot(wu, xv, dx, sx);
  }
#else
  (void)xq_row;
#pragma unroll
  for (uint32_t c = 0u; c < NUM_COLS; c++) s[c] = 0.0f;
#pragma unroll
  for (uint32_t run = 0u; run < UNIT / 8u; run++) {
    float wv[8];
    dequant8(w, blk, j + 8u * run, wv);
#pragma unroll
    for (uint32_t c = 0u; c < NUM_COLS; c++) {
      if (c >= n_cols) continue;
      const XT* xr = x + pc.x_offset + (col0 + c) * pc.x_row + (e + 8u * run) * pc.x_k;
      float sum = 0.0f;
#pragma unroll
      for (uint32_t i = 0u; i < 8u; i++) sum += wv[i] * float(LOAD(DT, xr[i * pc.x_k]));
      s[c] += sum;
    }
  }
#endif
}

#ifdef SWIGLU_Q8
static_assert(NUM_ROWS % 2u == 0u, "qmatvec.cu: SWIGLU_Q8 takes gate and up rows in pairs");
constexpr uint32_t HALF_ROWS = NUM_ROWS / 2u;
static_assert(ACT_BLOCK % HALF_ROWS == 0u, "qmatvec.cu: a block's h lie in one block of h");
// The block's row r: gate rows, then the same up rows (half = n_out / 2 further on).
WICK_DEV uint32_t out_row(const QMatmulParams& pc, uint32_t r) {
  return (r < HALF_ROWS ? 0u : pc.n_out / 2u) + group_index() * HALF_ROWS + r % HALF_ROWS;
}
// h of the block's row pair r (gate r, up r + HALF_ROWS) for x row c, as qact.cu's PROLOGUE 2
// computes it from f32 gate and up: silu rounded, then the product.
WICK_DEV void swiglu_store(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t c,
                           uint32_t r, float gate, float up) {
  const uint32_t half = pc.n_out / 2u;
  buffer_at<float>(args, 2)[c * half + group_index() * HALF_ROWS + r] = __fmul_rn(silu_c(gate), up);
}
// Every thread calls it once the block's h are stored: the x rows whose block of h this block
// completed (their counters' last) quantize it, a warp each.
WICK_DEV void swiglu_quantize(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t col0,
                              uint32_t n_cols) {
  __shared__ bool s_last[NUM_COLS];
  const uint32_t half = pc.n_out / 2u, blocks = half / ACT_BLOCK;
  const uint32_t block = group_index() * HALF_ROWS / ACT_BLOCK, t = threadIdx.x;
  __threadfence();  // this thread's h before the block's count
  __syncthreads();
  if (t < n_cols)  // each x row's block counted at once
    s_last[t] = count_part(buffer_at<uint32_t>(args, 5) + (col0 + t) * blocks + block,
                           ACT_BLOCK / HALF_ROWS);
  __syncthreads();
  const uint32_t scales = ACT_BLOCK == 32u ? 2u : 1u;
  const uint32_t row_words = half / 4u + half / ACT_BLOCK * scales;
  for (uint32_t c = t / 32u; c < n_cols; c += WICK_WARPS) {
    if (!s_last[c]) continue;  // uniform per warp
    __threadfence();
    const float* h = buffer_at<const float>(args, 2) + (col0 + c) * half;
    quantize_act_block([h](uint32_t e) { return __ldcg(h + e); }, buffer_at<uint32_t>(args, 4),
                       col0 + c, block, half, row_words, pc.ties_away != 0u, t % 32u);
  }
}
#else
WICK_DEV uint32_t out_row(const QMatmulParams&, uint32_t r) {
  return group_index() * NUM_ROWS + r;
}
#endif

#ifdef ARGMAX
constexpr uint32_t ARG_NONE = 0xffffffffu;
__shared__ float s_val[NUM_ROWS * NUM_COLS];  // the block's sums: (r, c) at r * NUM_COLS + c

// (v, j) folded into (acc, idx); idx ARG_NONE: nothing yet, j ARG_NONE: nothing to fold.
WICK_DEV void arg_fold(float& acc, uint32_t& idx, float v, uint32_t j) {
  if (j == ARG_NONE) return;
  if (idx == ARG_NONE || arg_replaces(is_nan(v), v, j, is_nan(acc), acc, idx, true)) {
    acc = v;
    idx = j;
  }
}

// (acc, idx) folded over the block, the result in thread 0 (the fold's order is total, so any
// grouping gives it). Every thread calls it.
WICK_DEV void block_fold(float& acc, uint32_t& idx) {
  __shared__ float s_v[WICK_WARPS];
  __shared__ uint32_t s_i[WICK_WARPS];
#pragma unroll
  for (int lanes = 16; lanes > 0; lanes >>= 1) {
    const float v = __shfl_xor_sync(WICK_FULL_MASK, acc, lanes);
    const uint32_t j = __shfl_xor_sync(WICK_FULL_MASK, idx, lanes);
    arg_fold(acc, idx, v, j);
  }
  if (WICK_WARPS == 1) return;
  __syncthreads();  // a previous call's s_v, s_i read
  if (threadIdx.x % 32u == 0u) {
    s_v[threadIdx.x / 32u] = acc;
    s_i[threadIdx.x / 32u] = idx;
  }
  __syncthreads();
  if (threadIdx.x == 0u)
    for (uint32_t w = 1u; w < WICK_WARPS; w++) arg_fold(acc, idx, s_v[w], s_i[w]);
}

// The n parts at `at` folded over the block (a load or two a thread, through L2: other blocks
// wrote them), the result in thread 0. Every thread calls it.
WICK_DEV void fold_parts(const float* part_val, const uint32_t* part_idx, uint32_t at, uint32_t n,
                         float& acc, uint32_t& idx) {
  acc = 0.0f;
  idx = ARG_NONE;
  for (uint32_t q = threadIdx.x; q < n; q += WG_SIZE)
    arg_fold(acc, idx, __ldcg(part_val + at + q), __ldcg(part_idx + at + q));
  block_fold(acc, idx);
}

// Every thread calls it once s_val holds the block's sums: the argmax's two levels of parts and
// counts (above), the last block writing the ids of its x rows.
WICK_DEV void argmax_tail(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t row0,
                          uint32_t col0, uint32_t n_cols) {
  const uint32_t groups = (pc.n_out + NUM_ROWS - 1u) / NUM_ROWS, g = group_index();
  if (g >= groups) return;  // uniform per block: a grid rounded up has no rows there
  const uint32_t blocks = (groups + ARGMAX - 1u) / ARGMAX, b = g / ARGMAX;
  const uint32_t in_block = min(uint32_t(ARGMAX), groups - b * ARGMAX);
  const uint32_t second = pc.m * groups, t = threadIdx.x;
  float* part_val = buffer_at<float>(args, 4);
  uint32_t* part_idx = buffer_at<uint32_t>(args, 5);
  uint32_t* counters = buffer_at<uint32_t>(args, 6) + blockIdx.z * (blocks + 1u);
  __syncthreads();   // s_val written
  if (t < n_cols) {  // the block's rows in order, a thread per x row
    float acc = 0.0f;
    uint32_t idx = ARG_NONE;
    for (uint32_t r = 0u; r < NUM_ROWS && row0 + r < pc.n_out; r++)
      arg_fold(acc, idx, s_val[r * NUM_COLS + t], row0 + r);
    part_val[(col0 + t) * groups + g] = acc;
    part_idx[(col0 + t) * groups + g] = idx;
  }
  if (!last_of_row(counters + b, in_block)) return;
  for (uint32_t c = 0u; c < n_cols; c++) {  // the block's parts
    float acc;
    uint32_t idx;
    fold_parts(part_val, part_idx, (col0 + c) * groups + b * ARGMAX, in_block, acc, idx);
    if (t == 0u) {
      part_val[second + (col0 + c) * blocks + b] = acc;
      part_idx[second + (col0 + c) * blocks + b] = idx;
    }
  }
  if (!last_of_row(counters + blocks, blocks)) return;
  for (uint32_t c = 0u; c < n_cols; c++) {  // the blocks' parts
    float acc;
    uint32_t idx;
    fold_parts(part_val, part_idx, second + (col0 + c) * blocks, blocks, acc, idx);
    if (t == 0u) buffer_at<uint32_t>(args, 2)[pc.r_offset + (col0 + c) * pc.r_row] = idx;
  }
}

// The sum of x row c, output row `row`: kept in s_val for argmax_tail.
WICK_DEV void store(const QMatmulParams& pc, const wick::KernelArgs&, uint32_t c, uint32_t row,
                    float v) {
  s_val[(row - out_row(pc, 0u)) * NUM_COLS + c - blockIdx.z * NUM_COLS] = v;
}
#else
// y's element (x row c, output row `row`).
WICK_DEV void store(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t c, uint32_t row,
                    float v) {
#ifdef RESIDUAL
  v = buffer_at<const float>(args, 3)[pc.r_offset + c * pc.r_row + row * pc.r_col] + v;
#endif
  buffer_at<float>(args, 2)[c * pc.n_out + row] = v;
}
#endif

#ifdef ROPE_KV
static_assert(NUM_ROWS % 2u == 0u, "qmatvec.cu: ROPE_KV takes whole rotation pairs");
typedef STORAGE_T(KV_DT) KT;
// Output rows `row` (even) and row + 1 of x row c, the sums a and b: rope_kv.cu's stores for
// them. An item at a position past the cache (or in a slot past it) gets nothing written; its
// first pair reports it.
WICK_DEV void store_pair(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t c,
                         uint32_t row, float a, float b) {
  const uint32_t d = pc.d, q_cols = pc.h * d, k_cols = pc.kvh * d;
  const uint32_t p = buffer_at<const uint32_t>(args, 4)[pc.pos_offset + c * pc.pos_stride];
  const uint32_t slot =
      pc.cache_slots > 0u ? buffer_at<const uint32_t>(args, 5)[pc.slots_offset + c] : c;
  uint32_t* err = buffer_at<uint32_t>(args, 12);
  if (p >= pc.max_seq) {
    if (row == 0u) report_error(err, WICK_ERROR_CACHE_POSITION, p, pc.max_seq);
    return;
  }
  if (pc.cache_slots > 0u && slot >= pc.cache_slots) {
    if (row == 0u) report_error(err, WICK_ERROR_CACHE_SLOT, slot, pc.cache_slots);
    return;
  }
  const uint32_t part = row < q_cols ? 0u : row < q_cols + k_cols ? 1u : 2u;
  const uint32_t col = part == 0u ? row : part == 1u ? row - q_cols : row - q_cols - k_cols;
  const uint32_t head = col / d, i = col % d;  // i even: the pair (i, i + 1)
  const uint32_t cache_at = ((slot * pc.kvh + head) * pc.max_seq + p) * d + i;
  if (part == 2u) {
    KT* v_cache = buffer_at<KT>(args, 11) + pc.vc_offset + cache_at;
    v_cache[0] = PACK(KV_DT, a);
    v_cache[1] = PACK(KV_DT, b);
    return;
  }
  const uint32_t at = p * pc.table_rows[part] + i / 2u;  // bindings 6 + 2 part, 7 + 2 part
  const float* cos_t = buffer_at<const float>(args, 6 + 2 * int(part));
  const float* sin_t = buffer_at<const float>(args, 7 + 2 * int(part));
  const float cs = cos_t[pc.table_offsets[2u * part] + at];
  const float sn = sin_t[pc.table_offsets[2u * part + 1u] + at];
  const float lo = rope_rotate(true, a, b, cs, sn), hi = rope_rotate(false, a, b, cs, sn);
  if (part == 0u) {
    float* q = buffer_at<float>(args, 2) + (c * pc.h + head) * d + i;
    q[0] = lo;
    q[1] = hi;
  } else {
    KT* k_cache = buffer_at<KT>(args, 10) + pc.kc_offset + cache_at;
    k_cache[0] = PACK(KV_DT, lo);
    k_cache[1] = PACK(KV_DT, hi);
  }
}
#endif

// The block's weight rows: constant while the previous kernel runs (common.cuh, prefetch_l2).
WICK_DEV void prefetch_weights(const wick::KernelArgs& args) {
  const QMatmulParams& pc = PARAMS(QMatmulParams, args);
  const uint32_t row0 = out_row(pc, 0u);
  if (row0 >= pc.n_out || blockIdx.z != 0u) return;  // the first x group's blocks fetch them
#ifdef SWIGLU_Q8
  for (uint32_t part = 0u; part < 2u; part++)  // the gate rows, then the up rows
    prefetch_l2(
        buffer_at<const uint8_t>(args, 0) + uint64_t(out_row(pc, part * HALF_ROWS)) * pc.row_bytes,
        uint64_t(HALF_ROWS) * pc.row_bytes);
#else
  prefetch_l2(buffer_at<const uint8_t>(args, 0) + uint64_t(row0) * pc.row_bytes,
              uint64_t(min(NUM_ROWS, pc.n_out - row0)) * pc.row_bytes);
#endif
}

#if defined(ACT_INLINE) && ACT_BLOCK == 32 && NORM_LANES % WG_SIZE == 0
// x rows col0 .. col0 + n_cols - 1 quantized into xq (ACT_ROW_WORDS words apart), as qact.cu
// would have written them. Thread t holds a row's elements t, t + WG_SIZE, ... (its "rounds"), so
// a warp holds one 32-element block per round; ACT_CHUNK rounds are loaded at once, every load in
// flight together (a block per warp and round trip cost ~4 us a product at k = 576, more than the
// launch it saved). rms_norm: element e belongs to lane e % NORM_LANES of norm.cu's block, so
// thread t's rounds i with i % (NORM_LANES / WG_SIZE) = q are lane t + q WG_SIZE's elements, in
// norm's order; their sums go through norm's warp and block reductions. Every thread calls it.
constexpr uint32_t ACT_ROUNDS = (ACT_K + WG_SIZE - 1) / WG_SIZE;
constexpr uint32_t ACT_CHUNK = 8u;
WICK_DEV void quantize_x(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t col0,
                         uint32_t n_cols, uint32_t* xq) {
  const ActST* x = buffer_at<const ActST>(args, 1) + pc.x_offset + col0 * pc.x_row;
  const uint32_t t = threadIdx.x, lane = t % 32u;
  const bool ties_away = pc.ties_away != 0u;
#if ACT_INLINE == 1
  constexpr uint32_t LANES_PER_THREAD = NORM_LANES / WG_SIZE;
  static_assert(ACT_CHUNK % LANES_PER_THREAD == 0u, "qmatvec.cu: a chunk holds whole lanes");
  __shared__ ActCT s_red[NUM_COLS][NORM_LANES / 32u];
#pragma unroll
  for (uint32_t c = 0u; c < NUM_COLS; c++) {
    if (c >= n_cols) break;  // uniform per block
    const ActAt at{x + c * pc.x_row, pc.x_k};
    ActCT ss[LANES_PER_THREAD];
#pragma unroll
    for (uint32_t q = 0u; q < LANES_PER_THREAD; q++) ss[q] = ActCT(0);
    for (uint32_t i0 = 0u; i0 < ACT_ROUNDS; i0 += ACT_CHUNK) {
      ActCT v[ACT_CHUNK];
#pragma unroll
      for (uint32_t j = 0u; j < ACT_CHUNK; j++) {
        const uint32_t e = t + WG_SIZE * (i0 + j);
        v[j] = e < ACT_K ? at(e) : ActCT(0);
      }
#pragma unroll
      for (uint32_t j = 0u; j < ACT_CHUNK; j++) {
        if (t + WG_SIZE * (i0 + j) >= ACT_K) continue;
        const ActCT d = v[j] - ActCT(0);  // as row_inv_rms: (x - mean)^2, mean 0
        ss[j % LANES_PER_THREAD] += d * d;
      }
    }
#pragma unroll
    for (uint32_t q = 0u; q < LANES_PER_THREAD; q++) {
      const ActCT s = warp_allreduce(ss[q], SumOp());
      if (lane == 0u) s_red[c][t / 32u + q * WICK_WARPS] = s;
    }
  }
  __syncthreads();
  ActCT inv[NUM_COLS];
#pragma unroll
  for (uint32_t c = 0u; c < NUM_COLS; c++) {
    ActCT r = s_red[c][0];
#pragma unroll
    for (uint32_t w = 1u; w < NORM_LANES / 32u; w++) r = SumOp()(r, s_red[c][w]);
    inv[c] = c < n_cols ? ActCT(1) / sqrt(r / ActCT(pc.k) + ActCT(pc.eps)) : ActCT(0);
  }
  const ActST* alpha = buffer_at<const ActST>(args, P_BINDING) + pc.p_offset;
#elif ACT_INLINE == 2
  const ActST* up = buffer_at<const ActST>(args, P_BINDING) + pc.p_offset + col0 * pc.p_row;
#endif
#pragma unroll
  for (uint32_t c = 0u; c < NUM_COLS; c++) {
    if (c >= n_cols) break;
    const ActAt at{x + c * pc.x_row, pc.x_k};
#if ACT_INLINE == 2
    const ActAt up_at{up + c * pc.p_row, pc.p_k};
#endif
    for (uint32_t i0 = 0u; i0 < ACT_ROUNDS; i0 += ACT_CHUNK) {
      float v[ACT_CHUNK];
#pragma unroll
      for (uint32_t j = 0u; j < ACT_CHUNK; j++) {
        const uint32_t e = t + WG_SIZE * (i0 + j);
        if (e >= ACT_K) continue;
#if ACT_INLINE == 0
        v[j] = float(at(e));
#elif ACT_INLINE == 1
        v[j] = act_rms_value(at(e), ActCT(LOAD(DT, alpha[e * pc.p_k])), inv[c]);
#else
        v[j] = act_swiglu_value(at(e), up_at(e));
#endif
      }
#pragma unroll
      for (uint32_t j = 0u; j < ACT_CHUNK; j++) {
        const uint32_t e = t + WG_SIZE * (i0 + j);
        if (e < ACT_K)  // uniform per warp (k and WG_SIZE are multiples of 32)
          quantize_act_block(ActGiven{v[j]}, xq, c, e / 32u, ACT_K, ACT_ROW_WORDS, ties_away, lane);
      }
    }
  }
  __syncthreads();
}
#elif defined(ACT_INLINE)
// 256-element blocks (or a block size not dividing norm's): the warps take the (row, block)
// pairs in turn, each loading its block when it quantizes it. Every thread calls it.
WICK_DEV void quantize_x(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t col0,
                         uint32_t n_cols, uint32_t* xq) {
  const ActST* x = buffer_at<const ActST>(args, 1) + pc.x_offset + col0 * pc.x_row;
  const uint32_t blocks_per_row = pc.k / ACT_BLOCK, lane = threadIdx.x % 32u;
  const bool ties_away = pc.ties_away != 0u;
#if ACT_INLINE == 1
  // Each row's 1 / rms with the sums of norm.cu's block of NORM_LANES threads.
  __shared__ ActCT s_red[NORM_LANES / 32];
  ActCT inv[NUM_COLS];
#pragma unroll
  for (uint32_t c = 0u; c < NUM_COLS; c++) {
    inv[c] = ActCT(0);
    if (c < n_cols)  // uniform per block
      inv[c] = row_inv_rms_as<NORM_LANES>(ActAt{x + c * pc.x_row, pc.x_k}, pc.k, ActCT(0),
                                          ActCT(pc.eps), s_red);
  }
  const ActST* alpha = buffer_at<const ActST>(args, P_BINDING) + pc.p_offset;
#elif ACT_INLINE == 2
  const ActST* up = buffer_at<const ActST>(args, P_BINDING) + pc.p_offset + col0 * pc.p_row;
#endif
  for (uint32_t item = threadIdx.x / 32u; item < n_cols * blocks_per_row; item += WICK_WARPS) {
    const uint32_t c = item / blocks_per_row, b = item - c * blocks_per_row;
    const ActAt at{x + c * pc.x_row, pc.x_k};
#if ACT_INLINE == 0
    const ActX value{at};
#elif ACT_INLINE == 1
    ActCT inv_c = inv[0];
#pragma unroll
    for (uint32_t cc = 1u; cc < NUM_COLS; cc++)  // selects in registers, not a local array
      if (cc == c) inv_c = inv[cc];
    const ActRms value{at, alpha, pc.p_k, inv_c};
#else
    const ActSwiglu value{at, {up + c * pc.p_row, pc.p_k}};
#endif
    quantize_act_block(value, xq, c, b, pc.k, ACT_ROW_WORDS, ties_away, lane);
  }
  __syncthreads();
}
#endif

#ifdef ACT_STAGE
// The block's quantized x rows (qact.cu's, pc.x_row words apart) copied into xq (ACT_ROW_WORDS
// apart), 16 bytes a load where the rows are 16-byte aligned: the dot loop then reads each x
// word from shared memory once per weight row instead of from L1 (NUM_COLS x rows: most of its
// loads). Every thread calls it.
WICK_DEV void stage_x(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t col0,
                      uint32_t n_cols, uint32_t* xq) {
  const uint32_t* src = buffer_at<const uint32_t>(args, 1) + col0 * pc.x_row;
  if (pc.x_row % 4u == 0u && ACT_ROW_WORDS % 4u == 0u) {
    const uint32_t vecs = pc.x_row / 4u;
    for (uint32_t i = threadIdx.x; i < n_cols * vecs; i += WG_SIZE) {
      const uint32_t c = i / vecs, v = i - c * vecs;
      reinterpret_cast<uint4*>(xq + c * ACT_ROW_WORDS)[v] =
          __ldg(reinterpret_cast<const uint4*>(src + c * pc.x_row) + v);
    }
  } else {
    for (uint32_t i = threadIdx.x; i < n_cols * pc.x_row; i += WG_SIZE) {
      const uint32_t c = i / pc.x_row, v = i - c * pc.x_row;
      xq[c * ACT_ROW_WORDS + v] = __ldg(src + c * pc.x_row + v);
    }
  }
  __syncthreads();
}
#endif

#ifdef MMA
// Word i of q (a runtime index) by selects: an indexed register array would go to local memory.
WICK_DEV uint32_t pick_word(const uint32_t (&q)[8], uint32_t i) {
  uint32_t v = q[0];
#pragma unroll
  for (uint32_t j = 1u; j < 8u; j++) v = i == j ? q[j] : v;
  return v;
}

// The block's 16 output rows for its x rows (see the top of the file). Every thread calls it.
WICK_DEV void mma_products(const QMatmulParams& pc, const wick::KernelArgs& args, const uint8_t* w,
                           const XT* x, uint32_t xq_row, uint32_t row0, uint32_t col0,
                           uint32_t n_cols) {
  const uint32_t lane = threadIdx.x % 32u, warp = threadIdx.x / 32u;
  const uint32_t g = lane / 4u, t = lane % 4u;
  // A's rows g and g + 8: output rows r0 and r0 + 1 (the last row read again past n_out, its
  // sums unused); B's column g: x row g (zeros past n_cols); C's columns 2t, 2t + 1.
  const uint32_t r0 = row0 + 2u * g;
  const uint32_t rows[2] = {min(r0, pc.n_out - 1u), min(r0 + 1u, pc.n_out - 1u)};
  const bool has_x = g < n_cols;
  const uint32_t units = pc.k / UNIT;
  float acc[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};  // [row r0 + i][column 2t + j]
#pragma unroll 2
  for (uint32_t u = warp; u < units; u += WICK_WARPS) {
    const uint32_t e = u * UNIT;
    WeightUnit wu[2];
#pragma unroll
    for (uint32_t i = 0u; i < 2u; i++)
      wu[i] = decode_unit(w, rows[i] * pc.row_bytes + u * BLOCK_BYTES, 0u);
    const uint32_t a_lo[2] = {pick_word(wu[0].q, t), pick_word(wu[1].q, t)};
    const uint32_t a_hi[2] = {pick_word(wu[0].q, 4u + t), pick_word(wu[1].q, 4u + t)};
    const XT* xg = x + g * xq_row + e / 4u;
    const uint32_t b_lo = has_x ? XQ_LOAD(xg + t) : 0u, b_hi = has_x ? XQ_LOAD(xg + 4u + t) : 0u;
    int c[4] = {0, 0, 0, 0};
    mma_m16n8k16_s8(c, a_lo, b_lo);  // elements 0 .. 15 of the unit
    mma_m16n8k16_s8(c, a_hi, b_hi);  // 16 .. 31
    const uint32_t scale_word = act_scale_word(pc.k, e);
#pragma unroll
    for (uint32_t j = 0u; j < 2u; j++) {
      const uint32_t col = 2u * t + j;
      if (col >= n_cols) continue;
      const float dx = __uint_as_float(XQ_LOAD(x + col * xq_row + scale_word));
#ifdef QUANT_MIN
      const float sx = __uint_as_float(XQ_LOAD(x + col * xq_row + scale_word + 1u));
#endif
#pragma unroll
      for (uint32_t i = 0u; i < 2u; i++) {
        float s = wu[i].d * dx * float(c[2u * i + j]);
#ifdef QUANT_MIN
        s += wu[i].m * sx;
#endif
        acc[i][j] += s;
      }
    }
  }
  // The warps' sums, added in warp order by warp 0.
  if (WICK_WARPS > 1) {
    __shared__ float s_acc[WICK_WARPS][4][32];
#pragma unroll
    for (uint32_t v = 0u; v < 4u; v++) s_acc[warp][v][lane] = acc[v / 2u][v % 2u];
    __syncthreads();
    if (warp != 0u) return;
#pragma unroll
    for (uint32_t v = 0u; v < 4u; v++) {
      float sum = s_acc[0][v][lane];
#pragma unroll
      for (uint32_t p = 1u; p < WICK_WARPS; p++) sum += s_acc[p][v][lane];
      acc[v / 2u][v % 2u] = sum;
    }
  }
#pragma unroll
  for (uint32_t j = 0u; j < 2u; j++) {
    const uint32_t col = 2u * t + j;
    if (col >= n_cols || r0 >= pc.n_out) continue;
#ifdef ROPE_KV
    store_pair(pc, args, col0 + col, r0, acc[0][j], acc[1][j]);
#else
    store(pc, args, col0 + col, r0, acc[0][j]);
    if (r0 + 1u < pc.n_out) store(pc, args, col0 + col, r0 + 1u, acc[1][j]);
#endif
  }
}
#endif

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  prefetch_weights(args);
  wick_kernel_begin();
  const QMatmulParams& pc = PARAMS(QMatmulParams, args);
  const uint8_t* w = buffer_at<const uint8_t>(args, 0);
  const uint32_t row0 = out_row(pc, 0u);
  const uint32_t col0 = blockIdx.z * NUM_COLS, n_cols = min(NUM_COLS, pc.m - col0);
#ifdef ACT_INLINE
  __shared__ __align__(16) uint32_t s_xq[NUM_COLS * ACT_ROW_WORDS];
  quantize_x(pc, args, col0, n_cols, s_xq);
  const XT* x = s_xq;
  const uint32_t xq_row = ACT_ROW_WORDS;
#elif defined(ACT_STAGE)
  __shared__ __align__(16) uint32_t s_xq[NUM_COLS * ACT_ROW_WORDS];
  stage_x(pc, args, col0, n_cols, s_xq);
  const XT* x = s_xq;
  const uint32_t xq_row = ACT_ROW_WORDS;
#elif defined(ACT_Q8)
  const uint32_t xq_row = pc.x_row;
  const XT* x = buffer_at<const XT>(args, 1) + col0 * xq_row;
#else
  const XT* x = buffer_at<const XT>(args, 1);
  const uint32_t xq_row = 0u;
#endif
#ifdef MMA
  mma_products(pc, args, w, x, xq_row, row0, col0, n_cols);
#else
  const uint32_t t = threadIdx.x;
  float acc[NUM_ROWS][NUM_COLS];
#pragma unroll
  for (uint32_t r = 0u; r < NUM_ROWS; r++)
#pragma unroll
    for (uint32_t c = 0u; c < NUM_COLS; c++) acc[r][c] = 0.0f;

  const uint32_t units = pc.k / UNIT;
  for (uint32_t item = t; item < NUM_ROWS * units; item += WG_SIZE) {
    const uint32_t r = item / units, u = item - r * units;
    const uint32_t row = out_row(pc, r);
    if (row >= pc.n_out) break;  // the rows past n_out come last
    float s[NUM_COLS];
    unit_products(pc, w, x, xq_row, row, u, col0, n_cols, s);
#pragma unroll
    for (uint32_t rr = 0u; rr < NUM_ROWS; rr++)
      if (rr == r)
#pragma unroll
        for (uint32_t c = 0u; c < NUM_COLS; c++) acc[rr][c] += s[c];
  }

#pragma unroll
  for (uint32_t r = 0u; r < NUM_ROWS; r++)
#pragma unroll
    for (uint32_t c = 0u; c < NUM_COLS; c++) acc[r][c] = warp_sum(acc[r][c]);
  const uint32_t lane = t % 32u, warp = t / 32u;
  // One warp: its sums are final; lane (r / 2) * NUM_COLS + c writes a pair (ROPE_KV), else lane
  // r * NUM_COLS + c writes one.
  if (WICK_WARPS == 1) {
#ifdef SWIGLU_Q8
    (void)row0;
#pragma unroll
    for (uint32_t r = 0u; r < HALF_ROWS; r++)
#pragma unroll
      for (uint32_t c = 0u; c < NUM_COLS; c++)
        if (lane == (r * NUM_COLS + c) % 32u && c < n_cols)
          swiglu_store(pc, args, col0 + c, r, acc[r][c], acc[r + HALF_ROWS][c]);
    swiglu_quantize(pc, args, col0, n_cols);
#elif defined(ROPE_KV)
#pragma unroll
    for (uint32_t r = 0u; r < NUM_ROWS; r += 2u)
#pragma unroll
      for (uint32_t c = 0u; c < NUM_COLS; c++)
        if (lane == (r / 2u * NUM_COLS + c) % 32u && row0 + r < pc.n_out && c < n_cols)
          store_pair(pc, args, col0 + c, row0 + r, acc[r][c], acc[r + 1u][c]);
#else
#pragma unroll
    for (uint32_t r = 0u; r < NUM_ROWS; r++)
#pragma unroll
      for (uint32_t c = 0u; c < NUM_COLS; c++)
        if (lane == (r * NUM_COLS + c) % 32u && row0 + r < pc.n_out && c < n_cols)
          store(pc, args, col0 + c, row0 + r, acc[r][c]);
#ifdef ARGMAX
    argmax_tail(pc, args, row0, col0, n_cols);
#endif
#endif
    return;
  }
  __shared__ float s_part[NUM_ROWS * NUM_COLS][WICK_WARPS];
  if (lane == 0u)
#pragma unroll
    for (uint32_t r = 0u; r < NUM_ROWS; r++)
#pragma unroll
      for (uint32_t c = 0u; c < NUM_COLS; c++) s_part[r * NUM_COLS + c][warp] = acc[r][c];
  __syncthreads();
#ifdef SWIGLU_Q8
  for (uint32_t v = t; v < HALF_ROWS * NUM_COLS; v += WG_SIZE) {  // v = (r, c): gate r's sums
    const uint32_t c = v % NUM_COLS;
    if (c >= n_cols) continue;
    float gate = 0.0f, up = 0.0f;
#pragma unroll
    for (uint32_t p = 0u; p < WICK_WARPS; p++) {
      gate += s_part[v][p];
      up += s_part[v + HALF_ROWS * NUM_COLS][p];
    }
    swiglu_store(pc, args, col0 + c, v / NUM_COLS, gate, up);
  }
  swiglu_quantize(pc, args, col0, n_cols);
#elif defined(ROPE_KV)
  for (uint32_t v = t; v < NUM_ROWS / 2u * NUM_COLS; v += WG_SIZE) {  // v = (pair, c)
    const uint32_t r = 2u * (v / NUM_COLS), c = v % NUM_COLS;
    if (row0 + r >= pc.n_out || c >= n_cols) continue;
    const uint32_t v0 = r * NUM_COLS + c, v1 = v0 + NUM_COLS;
    float a = 0.0f, b = 0.0f;
#pragma unroll
    for (uint32_t p = 0u; p < WICK_WARPS; p++) {
      a += s_part[v0][p];
      b += s_part[v1][p];
    }
    store_pair(pc, args, col0 + c, row0 + r, a, b);
  }
#else
  for (uint32_t v = t; v < NUM_ROWS * NUM_COLS; v += WG_SIZE) {
    const uint32_t row = row0 + v / NUM_COLS, c = v % NUM_COLS;
    if (row >= pc.n_out || c >= n_cols) continue;
    float sum = 0.0f;
#pragma unroll
    for (uint32_t p = 0u; p < WICK_WARPS; p++) sum += s_part[v][p];
    store(pc, args, col0 + c, row, sum);
  }
#ifdef ARGMAX
  argmax_tail(pc, args, row0, col0, n_cols);
#endif
#endif
#endif  // MMA
}
