// Sum / max / min / argmax / argmin / mean (OP: wick's ReduceOp) over the inner index for every
// outer index; a mean divides the compute-type sum before its one rounding to DT. PER_GROUP 1: a
// block per output (long reductions); 0: a thread per output. Max/min propagate NaN; arg ops return
// the first index of the extreme value. Integer sums wrap. Bindings: 0 x, 1 y (u32 indices when
// OUT_INDEX). Specialization: WICK_SPEC_0 OP, _1 PER_GROUP.
// SPLIT_ROWS (max/min and the arg ops, PER_GROUP 1): each row is split over blocks of SPAN
// elements, each block writes its partial (value, index), and the row's last block to finish
// (include/split_rows.cuh) merges them in order: exact, as those ops are in any order. A
// few long rows (decode's argmax over the vocabulary) otherwise left one block per row reading
// ~200 KB alone (15 us on the H200). Bindings then: 0 x, 1 the partials' values (CT), 2 their
// indices (u32, NO_INDEX: none), 3 the split counters, 4 y.
#include "include/accumulate.cuh"
#include "include/arg_order.cuh"
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/rows.cuh"
#include "include/split_rows.cuh"
#include "include/warp.cuh"

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 0
#endif
#ifndef WICK_SPEC_1
#define WICK_SPEC_1 0
#endif
constexpr uint32_t OP = WICK_SPEC_0;
constexpr uint32_t PER_GROUP = WICK_SPEC_1;
constexpr uint32_t SUM = 0u, MAX = 1u, ARGMAX = 3u, MEAN = 5u;
#ifndef SPLIT_ROWS
#define SPLIT_ROWS 0
#endif
#if SPLIT_ROWS
constexpr uint32_t NO_INDEX = 0xffffffffu;
#endif

typedef STORAGE_T(DT) ST;
typedef COMPUTE_T(DT) CT;
#if OUT_INDEX
typedef uint32_t OutT;
#else
typedef ST OutT;
#endif

WICK_DEV bool value_is_nan(CT v) {
#if DT_KIND <= 1
  return is_nan(v);
#else
  return false;
#endif
}

// A partial reduction: the value so far, its index (arg ops), and whether it holds a value yet.
struct Partial {
  CT acc;
  uint32_t idx;
  bool has;
};

// Whether (v, j) replaces (acc, idx) for max (greater) or min (include/arg_order.cuh).
WICK_DEV bool replaces(CT v, uint32_t j, CT acc, uint32_t idx, bool greater) {
  return arg_replaces(value_is_nan(v), v, j, value_is_nan(acc), acc, idx, greater);
}

// Folds (v, j) into p.
WICK_DEV void fold(Partial& p, CT v, uint32_t j) {
  if (!p.has) {
    p.acc = v;
    p.idx = j;
    p.has = true;
  } else if (OP == SUM || OP == MEAN) {
    p.acc = add_wrap(p.acc, v);
  } else if (replaces(v, j, p.acc, p.idx, OP == MAX || OP == ARGMAX)) {
    p.acc = v;
    p.idx = j;
  }
}

WICK_DEV void merge(Partial& p, const Partial& q) {
  if (q.has) fold(p, q.acc, q.idx);
}

WICK_DEV void store(OutT* y, const RowsParams& pc, uint32_t o, const Partial& p) {
#if OUT_INDEX
  y[pc.out_offset + o] = p.idx;
#else
  CT acc = p.acc;
  if (OP == MEAN) acc = acc / static_cast<CT>(pc.n_inner);
  y[pc.out_offset + o] = p.has ? PACK(DT, acc) : PACK(DT, CT(0));
#endif
}

// p merged over the warp, every lane getting the result (merge is symmetric: sums commute, the
// arg order is total).
WICK_DEV Partial warp_merge(Partial p) {
#pragma unroll
  for (int lanes = 16; lanes > 0; lanes >>= 1) {
    Partial q;
    q.acc = __shfl_xor_sync(WICK_FULL_MASK, p.acc, lanes);
    q.idx = __shfl_xor_sync(WICK_FULL_MASK, p.idx, lanes);
    q.has = __shfl_xor_sync(WICK_FULL_MASK, int(p.has), lanes) != 0;
    merge(p, q);
  }
  return p;
}

// p merged over the block; the result in thread 0. Every thread calls it.
WICK_DEV Partial block_merge(Partial p) {
  __shared__ CT s_acc[WICK_WARPS];
  __shared__ uint32_t s_idx[WICK_WARPS];
  __shared__ bool s_has[WICK_WARPS];
  p = warp_merge(p);
  const uint32_t t = threadIdx.x, warp = t / 32u;
  __syncthreads();  // a previous call's reads are done
  if (t % 32u == 0u) {
    s_acc[warp] = p.acc;
    s_idx[warp] = p.idx;
    s_has[warp] = p.has;
  }
  __syncthreads();
  if (t == 0u)
    for (uint32_t w = 1u; w < WICK_WARPS; w++) merge(p, Partial{s_acc[w], s_idx[w], s_has[w]});
  return p;
}

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const RowsParams& pc = PARAMS(RowsParams, args);
  const ST* x = buffer_at<const ST>(args, 0);
#if SPLIT_ROWS
  static_assert(OP != SUM && OP != MEAN, "reduce.cu: sums are not split (their order is fixed)");
  CT* part_acc = buffer_at<CT>(args, 1);
  uint32_t* part_idx = buffer_at<uint32_t>(args, 2);
  uint32_t* counters = buffer_at<uint32_t>(args, 3);
  OutT* y = buffer_at<OutT>(args, 4);
#else
  OutT* y = buffer_at<OutT>(args, 1);
#endif
  Partial p = {CT(0), 0u, false};
  if (PER_GROUP == 0u) {
    const uint32_t o = global_index();
    if (o >= pc.n_outer) return;
    const uint32_t base = outer_offset(pc, o);
    for (uint32_t j = 0u; j < pc.n_inner; j++) fold(p, LOAD(DT, x[base + inner_offset(pc, j)]), j);
    store(y, pc, o, p);
    return;
  }
  // Loads UNROLL strides ahead before folding them (in the same order): one load at a time left a
  // long row waiting on memory once per element (argmax of 49152 logits: 54 us on the H200).
  constexpr uint32_t UNROLL = 8u;
#if SPLIT_ROWS
  constexpr uint32_t SPAN = UNROLL * WG_SIZE;  // a block's elements: one round of loads
  const uint32_t parts = (pc.n_inner + SPAN - 1u) / SPAN;
  const uint32_t o = group_index() / parts, j0 = group_index() % parts * SPAN;
  const uint32_t j_end = min(pc.n_inner, j0 + SPAN);
#else
  const uint32_t o = group_index(), j0 = 0u, j_end = pc.n_inner;
#endif
  if (o >= pc.n_outer) return;  // uniform per block
  const uint32_t t = threadIdx.x;
  const uint32_t base = outer_offset(pc, o);
  uint32_t j = j0 + t;
  for (; j + (UNROLL - 1u) * WG_SIZE < j_end; j += UNROLL * WG_SIZE) {
    CT v[UNROLL];
#pragma unroll
    for (uint32_t u = 0u; u < UNROLL; u++)
      v[u] = LOAD(DT, x[base + inner_offset(pc, j + u * WG_SIZE)]);
#pragma unroll
    for (uint32_t u = 0u; u < UNROLL; u++) fold(p, v[u], j + u * WG_SIZE);
  }
  for (; j < j_end; j += WG_SIZE) fold(p, LOAD(DT, x[base + inner_offset(pc, j)]), j);
  if (WICK_WARPS == 1 && !SPLIT_ROWS) {
    p = warp_merge(p);
    if (t == 0u) store(y, pc, o, p);
    return;
  }
  p = block_merge(p);
#if SPLIT_ROWS
  if (t == 0u) {
    part_acc[group_index()] = p.acc;
    part_idx[group_index()] = p.has ? p.idx : NO_INDEX;
  }
  // The row's last block merges the partials, read from L2 (other blocks wrote them): a part
  // per thread, then the block's merge (one thread folding them in turn waited on L2 once per
  // part: ~20 us for the 24 parts of decode's argmax).
  if (!last_of_row(counters + o, parts)) return;
  p = {CT(0), 0u, false};
  for (uint32_t q = o * parts + t; q < o * parts + parts; q += WG_SIZE) {
    const uint32_t idx = __ldcg(part_idx + q);
    if (idx != NO_INDEX) fold(p, __ldcg(part_acc + q), idx);
  }
  p = block_merge(p);
#endif
  if (t == 0u) store(y, pc, o, p);
}
