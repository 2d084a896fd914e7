// The parameter block of every kernel family, defined once for the host (C++), the CUDA kernels
// and the GLSL kernels: each block is a list of fields written through two macros the includer
// supplies, F(type, name) and A(type, name, count). Types are the tokens wick_u32 and
// wick_param_t (an op parameter: float, or double where the dtype or the device needs it), which
// each language maps to its own types. The lists follow std430 order (the C++ and CUDA structs
// built from them have the same layout: u32 fields and arrays, doubles 8-byte aligned).
//
// Strided and row blocks are a header followed by the kernel's own extra fields.
#ifndef WICK_SHARED_PARAMS_H
#define WICK_SHARED_PARAMS_H

#define WICK_MAX_RANK 6    // dims of a strided element-wise kernel after collapsing
#define WICK_GROUP_RANK 4  // dims per group (outer, inner) of a row kernel
#define WICK_BATCH_RANK 3  // batch dims of a matrix kernel
#define WICK_MAX_PARAM_BYTES 128
#define WICK_MAX_BINDINGS 16  // storage buffers one dispatch binds (rope_kv binds 13)

// Element-wise kernels over strided views (include/strided.*): the output's collapsed shape,
// each operand's start offset (inputs, then the output) and strides (N_STRIDED operands: the
// inputs, and the output where it is written through a layout).
#define WICK_PARAMS_STRIDED(F, A, N_OPERANDS, N_STRIDED) \
  F(wick_u32, numel)                                     \
  F(wick_u32, rank)                                      \
  A(wick_u32, shape, WICK_MAX_RANK)                      \
  A(wick_u32, offset, N_OPERANDS)                        \
  A(wick_u32, strides, (N_STRIDED) * WICK_MAX_RANK)

// Extras of strided kernels.
#define WICK_PARAMS_UNARY_EXTRA(F, A) F(wick_param_t, p0) F(wick_param_t, p1)
#define WICK_PARAMS_FILL_EXTRA(F, A) F(wick_u32, lo) F(wick_u32, hi)
#define WICK_PARAMS_INDEX_EXTRA(F, A) F(wick_u32, src_stride) F(wick_u32, dim_size) F(wick_u32, op_code)
#define WICK_PARAMS_SCATTER_EXTRA(F, A)                                                        \
  F(wick_u32, src_stride) F(wick_u32, ids_stride) F(wick_u32, count) F(wick_u32, inner) \
  F(wick_u32, dst_dim) F(wick_u32, op_code)

// Kernels over (outer, inner) index pairs (include/rows.*): reductions and row ops.
#define WICK_PARAMS_ROWS(F, A)               \
  F(wick_u32, n_outer)                       \
  F(wick_u32, n_inner)                       \
  F(wick_u32, outer_rank)                    \
  F(wick_u32, inner_rank)                    \
  A(wick_u32, outer_shape, WICK_GROUP_RANK)  \
  A(wick_u32, outer_strides, WICK_GROUP_RANK) \
  A(wick_u32, inner_shape, WICK_GROUP_RANK)  \
  A(wick_u32, inner_strides, WICK_GROUP_RANK) \
  F(wick_u32, in_offset)                     \
  F(wick_u32, out_offset)
// norm: alpha's and beta's offset and last-dim stride, epsilon.
#define WICK_PARAMS_NORM_EXTRA(F, A) \
  F(wick_u32, a_offset) F(wick_u32, a_stride) F(wick_u32, b_offset) F(wick_u32, b_stride) F(wick_param_t, eps)

// Batched matrix kernels (matmul, gemv): batch dims with a stride per operand.
#define WICK_PARAMS_BATCH(F, A)             \
  F(wick_u32, rows)  /* m, or gemv's output length */ \
  F(wick_u32, cols)  /* n */                \
  F(wick_u32, depth) /* k */                \
  F(wick_u32, batch_rank)                   \
  F(wick_u32, batch_base)                   \
  A(wick_u32, batch_shape, WICK_BATCH_RANK) \
  A(wick_u32, a_batch, WICK_BATCH_RANK)     \
  A(wick_u32, b_batch, WICK_BATCH_RANK)     \
  F(wick_u32, a_offset)                     \
  F(wick_u32, a_row) /* stride between rows of A */ \
  F(wick_u32, a_k)                          \
  F(wick_u32, b_offset)                     \
  F(wick_u32, b_k)                          \
  F(wick_u32, b_col) /* stride between columns of B */

// rope: x (b, h, t, d) and cos/sin (b, t, d/2), each with its strides and offset.
#define WICK_PARAMS_ROPE(F, A) \
  F(wick_u32, numel)           \
  A(wick_u32, shape, 4)        \
  A(wick_u32, x_strides, 4)    \
  F(wick_u32, x_offset)        \
  A(wick_u32, c_strides, 3)    \
  F(wick_u32, c_offset)        \
  A(wick_u32, s_strides, 3)    \
  F(wick_u32, s_offset)

// rope_kv (one kernel of rope_kv_cache): q (b, h, t, d), k and v (b, kvh, t, d), each with its
// strides and offset; the caches (slots, kvh, max_seq, d) contiguous from their offsets; the
// tables cos_q, sin_q, cos_k, sin_k (rows, d/2), unit stride along d/2, by offset, with one row
// stride for the q pair and one for the k pair (the host copies a table with other strides:
// the block holds at most 32 words). Item bi is at pos[pos_offset + bi] (pos[pos_offset] for
// all when the kernel's constant 1, PER_ITEM_POS, is 0) in cache slot slots[slots_offset + bi]
// when cache_slots > 0 (the caches' slot count), else in slot bi.
#define WICK_PARAMS_ROPE_KV(F, A) \
  F(wick_u32, b)                  \
  F(wick_u32, h)                  \
  F(wick_u32, kvh)                \
  F(wick_u32, t)                  \
  F(wick_u32, d)                  \
  F(wick_u32, max_seq)            \
  A(wick_u32, q_strides, 4)       \
  F(wick_u32, q_offset)           \
  A(wick_u32, k_strides, 4)       \
  F(wick_u32, k_offset)           \
  A(wick_u32, v_strides, 4)       \
  F(wick_u32, v_offset)           \
  F(wick_u32, kc_offset)          \
  F(wick_u32, vc_offset)          \
  A(wick_u32, table_offsets, 4)   \
  A(wick_u32, table_rows, 2)      \
  F(wick_u32, pos_offset)         \
  F(wick_u32, slots_offset)       \
  F(wick_u32, cache_slots)

// attention (attention_cached's kernels): q (b, h, t, d) with strides and offset, the caches
// (slots, kvh, max_seq, d) contiguous from their offsets, the positions and slots as in
// WICK_PARAMS_ROPE_KV but with pos_stride (1: a position per item, 0: one) for its constant;
// softcap_bits: the score cap as f32 bits (0: none), window: the rows a query sees (0: all); the keys of each query row are split into n_splits ranges of `span` keys
// (a multiple of the kernel's chunk).
#define WICK_PARAMS_ATTENTION(F, A) \
  F(wick_u32, b)                    \
  F(wick_u32, h)                    \
  F(wick_u32, kvh)                  \
  F(wick_u32, t)                    \
  F(wick_u32, d)                    \
  F(wick_u32, max_seq)              \
  A(wick_u32, q_strides, 4)         \
  F(wick_u32, q_offset)             \
  F(wick_u32, kc_offset)            \
  F(wick_u32, vc_offset)            \
  F(wick_u32, pos_offset)           \
  F(wick_u32, n_splits)             \
  F(wick_u32, span)                 \
  F(wick_u32, pos_stride)           \
  F(wick_u32, slots_offset)         \
  F(wick_u32, cache_slots)          \
  F(wick_u32, softcap_bits)         \
  F(wick_u32, window)               \
  F(wick_u32, key_limit) /* 0: none; else the keys a query may attend to (max_keys) */

// rand: Philox counters base .. base + numel under a 64-bit seed (lo, hi words).
#define WICK_PARAMS_RAND(F, A) \
  F(wick_u32, numel)           \
  F(wick_u32, out_offset)      \
  A(wick_u32, seed, 2)         \
  A(wick_u32, base, 2)         \
  F(wick_param_t, p0) /* lo or mean */ \
  F(wick_param_t, p1) /* hi or std */

// qact: x (m, k) quantized to 8 bits per block into rows of row_words words.
#define WICK_PARAMS_QACT(F, A) \
  F(wick_u32, m)               \
  F(wick_u32, k)               \
  F(wick_u32, x_offset)        \
  F(wick_u32, x_row)           \
  F(wick_u32, x_k)             \
  F(wick_u32, row_words)       \
  F(wick_u32, ties_away)
// qact with a prologue (PROLOGUE 1 rms_norm, 2 swiglu): the qact block, then the prologue's
// operand (alpha, or up) as offset, row stride (0 for alpha) and stride along k, and rms_norm's
// epsilon.
#define WICK_PARAMS_QACT_PROLOGUE(F, A) \
  WICK_PARAMS_QACT(F, A)                \
  F(wick_u32, p_offset)                 \
  F(wick_u32, p_row)                    \
  F(wick_u32, p_k)                      \
  F(wick_param_t, eps)

// qmatvec / qmatmul: y (m, n_out) = x (m, k) W^T, W's rows row_bytes apart; qmatvec with RESIDUAL
// adds the residual (m, n_out) at r_offset + row * r_row + col * r_col.
#define WICK_PARAMS_QMATMUL(F, A) \
  F(wick_u32, m)                  \
  F(wick_u32, n_out)              \
  F(wick_u32, k)                  \
  F(wick_u32, row_bytes)          \
  F(wick_u32, x_offset)           \
  F(wick_u32, x_row)              \
  F(wick_u32, x_k)                \
  F(wick_u32, r_offset)           \
  F(wick_u32, r_row)              \
  F(wick_u32, r_col)
// qmatvec quantizing its own x (ACT_INLINE): the qmatmul block (x through its strides), then
// qact's rounding and prologue fields.
#define WICK_PARAMS_QMATVEC_ACT(F, A) \
  WICK_PARAMS_QMATMUL(F, A)           \
  F(wick_u32, ties_away)              \
  F(wick_u32, p_offset)               \
  F(wick_u32, p_row)                  \
  F(wick_u32, p_k)                    \
  F(wick_param_t, eps)
// qmatvec whose product goes to rope_kv_cache (ROPE_KV: decode's fused q/k/v projection): the
// ACT block, then rope_kv's fields for one new token per x row (x row i is batch item i): heads,
// the position and slot of each item, the caches' and tables' offsets (tables with a unit stride
// along d/2 and one row stride per pair: q's, k's).
#define WICK_PARAMS_QMATVEC_ROPE(F, A) \
  WICK_PARAMS_QMATVEC_ACT(F, A)        \
  F(wick_u32, h)                       \
  F(wick_u32, kvh)                     \
  F(wick_u32, d)                       \
  F(wick_u32, max_seq)                 \
  F(wick_u32, pos_offset)              \
  F(wick_u32, pos_stride)              \
  F(wick_u32, slots_offset)            \
  F(wick_u32, cache_slots)             \
  F(wick_u32, kc_offset)               \
  F(wick_u32, vc_offset)               \
  A(wick_u32, table_offsets, 4)        \
  A(wick_u32, table_rows, 2)

// What a kernel reports in its op's error record, four words {code, a low, a high, b}: the first
// error wins (compare-and-swap on the code).
#define WICK_ERROR_INDEX_SELECT 1u  // a: the index (64-bit), b: the dim size
#define WICK_ERROR_GATHER 2u
#define WICK_ERROR_SCATTER_ADD 3u
#define WICK_ERROR_INDEX_ADD 4u
#define WICK_ERROR_INT_DIV_BY_ZERO 5u  // a: the DType
#define WICK_ERROR_CACHE_POSITION 6u   // a: pos, b: max_seq (pos + t > max_seq)
#define WICK_ERROR_CACHE_SLOT 7u       // a: the slot, b: the caches' slots
#define WICK_ERROR_KEY_LIMIT 8u        // a: a query's keys, b: the op's max_keys

#endif
