#version 450
// Sum / max / min / argmax / argmin / mean (OP: wick's ReduceOp) over the inner index for every
// outer index. A mean divides the compute-type sum before its one rounding to DT. PER_GROUP 1: a workgroup per output (long reductions); 0: a thread per output.
// Max/min propagate NaN; arg ops return the first index of the extreme value.
// SPLIT_ROWS (max/min and the arg ops, PER_GROUP 1): each row is split over workgroups of SPAN
// elements, each writes its partial (value, index), and the row's last workgroup to finish
// (include/split_rows.glsl) merges them in order: exact, as those ops are in any order (the
// twin of reduce.cu). Bindings then: 0 x, 1 the partials' values, 2 their indices (NO_INDEX:
// none), 3 the split counters, 4 y.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/rows.glsl"

layout(constant_id = 0) const uint OP = 0u;
layout(constant_id = 1) const uint PER_GROUP = 0u;
#define SUM 0u
#define MAX 1u
#define MIN 2u
#define ARGMAX 3u
#define ARGMIN 4u
#define MEAN 5u

#ifndef SPLIT_ROWS
#define SPLIT_ROWS 0
#endif
#define CT COMPUTE_T(DT)
layout(set = 0, binding = 0) readonly buffer In { STORAGE_T(DT) x[]; };
#if SPLIT_ROWS
#define Y_BINDING 4
#define NO_INDEX 0xffffffffu
layout(set = 0, binding = 1) coherent buffer PartAcc { CT part_acc[]; };
layout(set = 0, binding = 2) coherent buffer PartIdx { uint part_idx[]; };
#define SPLIT_COUNTERS_BINDING 3
#include "include/split_rows.glsl"
#else
#define Y_BINDING 1
#endif
#if OUT_INDEX
layout(set = 0, binding = Y_BINDING) writeonly buffer Out { uint y[]; };
#else
layout(set = 0, binding = Y_BINDING) writeonly buffer Out { STORAGE_T(DT) y[]; };
#endif
#if DT_KIND <= 1
#define IS_NAN(v) is_nan(v)
#else
#define IS_NAN(v) false
#endif

// Whether (v, j) replaces (acc, idx) for max (GREATER) or min (include/arg_order.glsl).
#define ARG_T CT
#include "include/arg_order.glsl"
bool replaces(CT v, uint j, CT acc, uint idx, bool greater) {
  return arg_replaces(IS_NAN(v), v, j, IS_NAN(acc), acc, idx, greater);
}

// Folds (v, j) into (acc, idx); `has` says whether acc holds a value yet.
void fold(inout CT acc, inout uint idx, inout bool has, CT v, uint j) {
  if (!has) {
    acc = v;
    idx = j;
    has = true;
  } else if (OP == SUM || OP == MEAN) {
    acc += v;
  } else if (replaces(v, j, acc, idx, OP == MAX || OP == ARGMAX)) {
    acc = v;
    idx = j;
  }
}

shared CT s_acc[WG_SIZE];
shared uint s_idx[WG_SIZE];
shared bool s_has[WG_SIZE];

// Every invocation's (acc, idx, has) folded over the workgroup into s_acc[0], s_idx[0],
// s_has[0]. Every invocation calls it.
void group_fold(uint t, CT acc, uint idx, bool has) {
  barrier();  // a previous call's results have been read
  s_acc[t] = acc;
  s_idx[t] = idx;
  s_has[t] = has;
  barrier();
  for (uint step = WG_SIZE / 2u; step > 0u; step >>= 1) {
    if (t < step && s_has[t + step]) {
      CT a = s_acc[t];
      uint i = s_idx[t];
      bool h = s_has[t];
      fold(a, i, h, s_acc[t + step], s_idx[t + step]);
      s_acc[t] = a;
      s_idx[t] = i;
      s_has[t] = h;
    }
    barrier();
  }
}

void store(uint o, CT acc, uint idx, bool has) {
#if OUT_INDEX
  y[pc.out_offset + o] = idx;
#else
  if (OP == MEAN) acc /= CT(pc.n_inner);
  y[pc.out_offset + o] = has ? PACK(DT, acc) : PACK(DT, CT(0));
#endif
}

void main() {
  CT acc = CT(0);
  uint idx = 0u;
  bool has = false;
  if (PER_GROUP == 0u) {
    const uint o = global_index();
    if (o >= pc.n_outer) return;
    const uint base = outer_offset(o);
    for (uint j = 0u; j < pc.n_inner; j++) fold(acc, idx, has, LOAD(DT, x[base + inner_offset(j)]), j);
    store(o, acc, idx, has);
    return;
  }
  // Loads UNROLL strides ahead before folding them (in the same order): one load at a time left a
  // long row waiting on memory once per element (the twin of reduce.cu).
  const uint UNROLL = 8u;
#if SPLIT_ROWS
  const uint SPAN = UNROLL * WG_SIZE;  // a workgroup's elements: one round of loads
  const uint parts = (pc.n_inner + SPAN - 1u) / SPAN;
  const uint o = group_index() / parts, j0 = group_index() % parts * SPAN;
  const uint j_end = min(pc.n_inner, j0 + SPAN);
#else
  const uint o = group_index(), j0 = 0u, j_end = pc.n_inner;
#endif
  if (o >= pc.n_outer) return;  // uniform per workgroup
  const uint t = gl_LocalInvocationID.x;
  const uint base = outer_offset(o);
  uint j = j0 + t;
  for (; j + (UNROLL - 1u) * WG_SIZE < j_end; j += UNROLL * WG_SIZE) {
    CT v[UNROLL];
    for (uint u = 0u; u < UNROLL; u++) v[u] = LOAD(DT, x[base + inner_offset(j + u * WG_SIZE)]);
    for (uint u = 0u; u < UNROLL; u++) fold(acc, idx, has, v[u], j + u * WG_SIZE);
  }
  for (; j < j_end; j += WG_SIZE) fold(acc, idx, has, LOAD(DT, x[base + inner_offset(j)]), j);
  group_fold(t, acc, idx, has);
#if SPLIT_ROWS
  if (t == 0u) {
    part_acc[group_index()] = s_acc[0];
    part_idx[group_index()] = s_has[0] ? s_idx[0] : NO_INDEX;
  }
  // The row's last workgroup merges the partials: a part per invocation, then the workgroup's
  // tree (one invocation folding them in turn waited on memory once per part: ~20 us for the
  // 24 parts of decode's argmax on the H200).
  if (!last_of_row(o, parts)) return;
  acc = CT(0);
  idx = 0u;
  has = false;
  for (uint q = o * parts + t; q < o * parts + parts; q += WG_SIZE)
    if (part_idx[q] != NO_INDEX) fold(acc, idx, has, part_acc[q], part_idx[q]);
  group_fold(t, acc, idx, has);
#endif
  if (t == 0u) store(o, s_acc[0], s_idx[0], s_has[0]);
}
