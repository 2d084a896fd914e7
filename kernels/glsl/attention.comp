#version 450
// attention_cached: causal softmax(q k^T) v of q (b, h, t, d) over the caches (slots, kvh,
// max_seq, d), query row (bi, hi, ti) attending to cache rows 0 ..= pos + ti (the last `window`
// of them when window > 0) of kv head hi / (h / kvh) in item bi's slot (slots[bi], or bi), pos
// the item's position; scores soft-capped when softcap_bits is not 0.
// Flash-decoding in one dispatch: a workgroup per (query row, split); split s takes the keys
// [s span, (s + 1) span) of its row, CHUNK (= WG_SIZE) at a time with a running maximum m, sum l
// and accumulator acc (the online softmax). The row's used splits are those up to its last key
// (pos is read on the device; the splits past it return at once). With one the workgroup writes
// the row's output acc / l itself; with more each writes (m, l, acc[d]) to its scratch slot, and
// the row's last workgroup to finish (include/split_rows.glsl) combines them:
// out = sum acc_s e^(m_s - M) / sum l_s e^(m_s - M), M = max m_s (one split's combine would
// give the same bits: e^0 = 1).
// The caches are KV_DT: DT, or f16/bf16 under f32 (each element converted as it is loaded).
// Sums, the softmax and the scratch are in ACC_T: f32 (f64 for f64). Nothing has a size set by
// the sequence: shared arrays hold one chunk; element e of the accumulator belongs to thread
// e % WG_SIZE, in its registers for d <= ACC_REGS WG_SIZE (every head size models use), else in
// the scratch slot (the registers saved a read-modify-write of global memory per chunk). When
// pos + t > max_seq the keys are clamped to the cache (nothing is read out of bounds) and the op's
// error record gets the position; an item whose slot is beyond the caches gets nothing computed
// (the record gets the slot).
#include "include/common.glsl"
#if defined(WICK_SUBGROUP_ARITHMETIC) && DT_KIND != 1  // f32 sums only: f64 keeps the tree
#extension GL_KHR_shader_subgroup_arithmetic : require
#define GROUP_REDUCE_SUBGROUPS 1
#endif
#include "include/dtype.glsl"
#include "include/math.glsl"
#if DT_KIND == 1
#include "include/math64.glsl"
#define ACC_T double
#define EXP exp64
#define NEG_INF (-inf64())
#else
#define ACC_T float
#define EXP exp_accurate
#define NEG_INF (-inf_f32())
#endif

#include "include/params.glsl"
layout(push_constant) uniform Push {
  WICK_PARAMS_ATTENTION(WICK_FIELD, WICK_ARRAY)
} pc;

// The vector form when not 0: rows of d = LANES * KV_VEC elements, read 16 bytes at a time
// through a second view of the caches (the host checks the alignment).
layout(constant_id = 0) const uint LANES = 0u;
#define KV_VEC (16u / KV_BYTES)
layout(set = 0, binding = 0) readonly buffer Q { STORAGE_T(DT) q[]; };
layout(set = 0, binding = 1) readonly buffer KCache { STORAGE_T(KV_DT) k_cache[]; };
layout(set = 0, binding = 2) readonly buffer VCache { STORAGE_T(KV_DT) v_cache[]; };
layout(set = 0, binding = 1) readonly buffer KCacheVec { uvec4 k_vec[]; };
layout(set = 0, binding = 2) readonly buffer VCacheVec { uvec4 v_vec[]; };
layout(set = 0, binding = 3) readonly buffer Pos { uint pos[]; };
// Coherent: a row's last workgroup reads the slots the others wrote.
layout(set = 0, binding = 4) coherent buffer Scratch { ACC_T scratch[]; };
layout(set = 0, binding = 5) writeonly buffer Out { STORAGE_T(DT) y[]; };
#define ERROR_BINDING 6
#include "include/errors.glsl"
layout(set = 0, binding = 7) readonly buffer Slots { uint slots[]; };
#define SPLIT_COUNTERS_BINDING 8
#include "include/split_rows.glsl"

#define CHUNK WG_SIZE
#define ACC_REGS 4u
shared ACC_T s_q[WG_SIZE];    // the query row (when d <= WG_SIZE)
shared ACC_T s_p[CHUNK];      // the chunk's weights e^(s - m)
shared ACC_T s_red[WG_SIZE];  // reductions, partial sums
// The vector form's arrays: sized 1 for the scalar form, which never touches them.
#define VEC_ARRAYS (LANES > 0u ? 1u : 0u)
shared ACC_T s_qv[VEC_ARRAYS * 32u * KV_VEC + 1u];       // its query row (d <= 32 KV_VEC)
shared ACC_T s_acc[VEC_ARRAYS * WG_SIZE * KV_VEC + 1u];  // its key groups' value sums

// Sum (or max) over the workgroup; every invocation gets the result. With subgroup arithmetic:
// each subgroup's, then the subgroups' in order (two barriers, not one per halving).
ACC_T group_reduce(ACC_T v, bool take_max) {
#ifdef GROUP_REDUCE_SUBGROUPS
  const ACC_T part = take_max ? subgroupMax(v) : subgroupAdd(v);
  if (subgroupElect()) s_red[gl_SubgroupID] = part;
  barrier();
  ACC_T r = s_red[0];
  for (uint i = 1u; i < gl_NumSubgroups; i++) r = take_max ? max(r, s_red[i]) : r + s_red[i];
#else
  const uint t = gl_LocalInvocationID.x;
  s_red[t] = v;
  barrier();
  for (uint step = WG_SIZE / 2u; step > 0u; step >>= 1) {
    if (t < step) s_red[t] = take_max ? max(s_red[t], s_red[t + step]) : s_red[t] + s_red[t + step];
    barrier();
  }
  const ACC_T r = s_red[0];
#endif
  barrier();
  return r;
}

// Query row `row`'s item: its position and cache slot, read from their buffers.
struct Item {
  uint pos, slot;
  bool slot_ok;
};
Item item_of(uint row) {
  const uint bi = row / (pc.t * pc.h);
  Item it;
  it.pos = pos[pc.pos_offset + bi * pc.pos_stride];
  it.slot = pc.cache_slots > 0u ? slots[pc.slots_offset + bi] : bi;
  it.slot_ok = pc.cache_slots == 0u || it.slot < pc.cache_slots;
  return it;
}

// The keys query ti of an item attends to: pos + ti + 1, clamped to the cache, then to the op's
// key_limit (the splits cover no more); none for a slot beyond the caches. `report`: this is the
// item's reporting invocation (first head, first split, invocation 0), which records the cache's
// errors from query 0 and a key_limit exceeded from the last query (the item's most keys).
uint key_count(Item it, uint ti, bool report) {
  if (!it.slot_ok) {
    if (report && ti == 0u) report_error(WICK_ERROR_CACHE_SLOT, it.slot, 0u, pc.cache_slots);
    return 0u;
  }
  const uint p = it.pos;
  uint n = p + ti + 1u;
  if (p > pc.max_seq || pc.t > pc.max_seq - p) {
    if (report && ti == 0u) report_error(WICK_ERROR_CACHE_POSITION, p, 0u, pc.max_seq);
    n = p >= pc.max_seq ? pc.max_seq : min(p + ti + 1u, pc.max_seq);
  }
  if (pc.key_limit > 0u && n > pc.key_limit) {
    if (report && ti + 1u == pc.t) report_error(WICK_ERROR_KEY_LIMIT, n, 0u, pc.key_limit);
    n = pc.key_limit;
  }
  return n;
}

// sum_j s_p[j] v_cache[column + j d] over the keys j = first, first + step, ... < len: V_LOADS
// independent sums, so that many loads of value rows are in flight at once.
#define V_LOADS 8u
ACC_T weighted_values(uint column, uint first, uint step, uint len, uint d) {
  ACC_T sums[V_LOADS];
  for (uint u = 0u; u < V_LOADS; u++) sums[u] = ACC_T(0);
  uint j = first;
  for (; j + (V_LOADS - 1u) * step < len; j += V_LOADS * step)
    for (uint u = 0u; u < V_LOADS; u++)
      sums[u] += s_p[j + u * step] * ACC_T(LOAD(KV_DT, v_cache[column + (j + u * step) * d]));
  for (; j < len; j += step) sums[0] += s_p[j] * ACC_T(LOAD(KV_DT, v_cache[column + j * d]));
  ACC_T total = ACC_T(0);
  for (uint u = 0u; u < V_LOADS; u++) total += sums[u];
  return total;
}

ACC_T query_at(bool q_shared, uint q_row, uint e) {
  return q_shared ? s_q[e] : ACC_T(LOAD(DT, q[q_row + e * pc.q_strides[3]]));
}

// The first key of a row of n_keys: within the sliding window, if any.
uint first_key(uint n_keys) {
  return pc.window > 0u && n_keys > pc.window ? n_keys - pc.window : 0u;
}

// A score, soft-capped when the op asks: cap tanh(s / cap), tanh as 1 - 2 / (e^2x + 1) with the
// kernel's accurate exp (GLSL has no double tanh, and its float one is loosely specified).
ACC_T cap_score(ACC_T s) {
  if (pc.softcap_bits == 0u) return s;
  const ACC_T cap = ACC_T(uintBitsToFloat(pc.softcap_bits));
  return cap * (ACC_T(1) - ACC_T(2) / (EXP(ACC_T(2) * (s / cap)) + ACC_T(1)));
}

// What a workgroup (query row, split) works on, for both forms: the keys [k0, k_end) of
// its row in its split, q's row, and the element of cache row 0 of its kv head in its item's
// slot; `used`, the splits up to the row's last key (those that take part: a split past it
// returns at once, and a row of one used split is written by that workgroup, with no combine).
struct RowWork {
  uint row, split, used, k0, k_end, q_row, first;
};
// False when the workgroup has nothing to do (a split outside the row's keys: uniform).
bool row_work(uint g, uint tid, out RowWork w) {
  w.row = g / pc.n_splits;
  const uint split = g % pc.n_splits;
  const uint ti = w.row % pc.t, hi = w.row / pc.t % pc.h, bi = w.row / (pc.t * pc.h);
  const Item it = item_of(w.row);
  const uint n_keys = key_count(it, ti, split == 0u && hi == 0u && tid == 0u);
  w.split = split;
  w.used = max(1u, (n_keys + pc.span - 1u) / pc.span);
  w.k0 = max(split * pc.span, first_key(n_keys));
  w.k_end = min(split * pc.span + pc.span, n_keys);
  w.q_row = pc.q_offset + bi * pc.q_strides[0] + hi * pc.q_strides[1] + ti * pc.q_strides[2];
  w.first = (it.slot * pc.kvh + hi / (pc.h / pc.kvh)) * pc.max_seq * pc.d;
  return w.k0 < w.k_end;
}

void partial_phase(uint g, uint tid, RowWork w) {
  const uint row = w.row, k0 = w.k0, k_end = w.k_end, q_row = w.q_row, first = w.first;
  const uint d = pc.d;
  const uint slot = g * (d + 2u);  // (m, l, acc[d])
  const bool q_shared = d <= WG_SIZE;
  if (q_shared && tid < d) s_q[tid] = ACC_T(LOAD(DT, q[q_row + tid * pc.q_strides[3]]));
  const bool regs = d <= ACC_REGS * WG_SIZE;
  ACC_T acc[ACC_REGS];  // element tid + i WG_SIZE (regs)
  for (uint i = 0u; i < ACC_REGS; i++) acc[i] = ACC_T(0);
  if (!regs)
    for (uint e = tid; e < d; e += WG_SIZE) scratch[slot + 2u + e] = ACC_T(0);
  barrier();
  ACC_T m = NEG_INF, l = ACC_T(0);
  for (uint c0 = k0; c0 < k_end; c0 += CHUNK) {
    const uint len = min(CHUNK, k_end - c0);
    // Scores: a key per thread.
    ACC_T s = NEG_INF;
    if (tid < len) {
      const uint k_row = pc.kc_offset + first + (c0 + tid) * d;
      ACC_T dot0 = ACC_T(0), dot1 = ACC_T(0);  // independent sums: two loads in flight
      uint e = 0u;
      for (; e + 1u < d; e += 2u) {
        dot0 += query_at(q_shared, q_row, e) * ACC_T(LOAD(KV_DT, k_cache[k_row + e]));
        dot1 += query_at(q_shared, q_row, e + 1u) * ACC_T(LOAD(KV_DT, k_cache[k_row + e + 1u]));
      }
      if (e < d) dot0 += query_at(q_shared, q_row, e) * ACC_T(LOAD(KV_DT, k_cache[k_row + e]));
      s = cap_score(dot0 + dot1);
    }
    const ACC_T m_new = max(m, group_reduce(s, true));
    const ACC_T w = tid < len ? EXP(s - m_new) : ACC_T(0);
    s_p[tid] = w;
    const ACC_T alpha = m == NEG_INF ? ACC_T(0) : EXP(m - m_new);  // rescales the earlier chunks
    l = l * alpha + group_reduce(w, false);  // its barriers publish s_p too
    m = m_new;
    // acc = acc alpha + sum_j w_j v_j.
    if (d < WG_SIZE) {  // WG_SIZE / d threads per element, each over every G-th key, then summed
      const uint groups = WG_SIZE / d, part = tid / d, e = tid % d;
      s_red[tid] = part < groups
                       ? weighted_values(pc.vc_offset + first + c0 * d + e, part, groups, len, d)
                       : ACC_T(0);
      barrier();
      if (tid < d) {
        ACC_T total = ACC_T(0);
        for (uint k = 0u; k < groups; k++) total += s_red[tid + k * d];
        acc[0] = acc[0] * alpha + total;
      }
    } else if (regs) {
      for (uint i = 0u; i < ACC_REGS; i++) {
        const uint e = tid + i * WG_SIZE;
        if (e >= d) break;
        acc[i] = acc[i] * alpha + weighted_values(pc.vc_offset + first + c0 * d + e, 0u, 1u, len, d);
      }
    } else {
      for (uint e = tid; e < d; e += WG_SIZE)
        scratch[slot + 2u + e] = scratch[slot + 2u + e] * alpha +
                                 weighted_values(pc.vc_offset + first + c0 * d + e, 0u, 1u, len, d);
    }
    barrier();  // s_p and s_red are refilled by the next chunk
  }
  if (regs) {
    for (uint i = 0u; i < ACC_REGS; i++) {
      const uint e = tid + i * WG_SIZE;
      if (e >= d) break;
      if (w.used == 1u)
        y[row * d + e] = PACK(DT, acc[i] / l);
      else
        scratch[slot + 2u + e] = acc[i];
    }
  } else if (w.used == 1u) {
    for (uint e = tid; e < d; e += WG_SIZE) y[row * d + e] = PACK(DT, scratch[slot + 2u + e] / l);
  }
  if (w.used > 1u && tid == 0u) {
    scratch[slot] = m;
    scratch[slot + 1u] = l;
  }
}

// Element i of 16 bytes of a cache row.
ACC_T kv_elem(uvec4 v, uint i) {
#if KV_BYTES == 2
  const uint w = v[i / 2u];
  return ACC_T(LOAD(KV_DT, (i % 2u) == 0u ? (w & 0xffffu) : (w >> 16)));
#elif KV_BYTES == 4
  return ACC_T(uintBitsToFloat(v[i]));
#else
  return ACC_T(packDouble2x32(uvec2(v[2u * i], v[2u * i + 1u])));
#endif
}

// The vector form (LANES > 0, d == LANES * KV_VEC): a key per thread as in partial_phase,
// its row read as LANES independent 16-byte loads; the value sums take KV_VEC elements per
// thread, WG_SIZE / LANES keys at a time, and add the key groups' sums once at the end. A chunk's
// loads are all issued at its start (its key row, up to PRE_K pieces, and up to PRE_V of its
// value rows, in registers), before the query's barrier and the softmax's reductions, so their
// latency overlaps them instead of following them.
#define PRE_K 8u
#define PRE_V 8u
void partial_phase_vec(uint g, uint tid, RowWork w) {
  const uint lanes = max(LANES, 1u);  // not 0 here; a constant expression would divide by it
  const uint GROUPS = WG_SIZE / lanes, D = lanes * KV_VEC;
  const uint row = w.row, k0 = w.k0, k_end = w.k_end, q_row = w.q_row, first = w.first;
  const uint k_first = (pc.kc_offset + first) / KV_VEC, v_first = (pc.vc_offset + first) / KV_VEC;
  const uint slot = g * (D + 2u);  // (m, l, acc[d])
  for (uint e = tid; e < D; e += WG_SIZE) s_qv[e] = ACC_T(LOAD(DT, q[q_row + e * pc.q_strides[3]]));
  const uint group = tid / lanes, col = tid % lanes;
  ACC_T acc[KV_VEC];
  for (uint i = 0u; i < KV_VEC; i++) acc[i] = ACC_T(0);
  ACC_T m = NEG_INF, l = ACC_T(0);
  for (uint c0 = k0; c0 < k_end; c0 += CHUNK) {
    const uint len = min(CHUNK, k_end - c0);
    const uint k_row = k_first + (c0 + tid) * lanes;
    uvec4 kr[PRE_K], vr[PRE_V];
    for (uint c = 0u; c < PRE_K; c++)
      kr[c] = c < lanes && tid < len ? k_vec[k_row + c] : uvec4(0u);
    for (uint i = 0u; i < PRE_V; i++) {
      const uint j = group + i * GROUPS;
      vr[i] = j < len ? v_vec[v_first + (c0 + j) * lanes + col] : uvec4(0u);
    }
    if (c0 == k0) barrier();  // s_qv (uniform)
    ACC_T s = NEG_INF;
    if (tid < len) {
      ACC_T dot0 = ACC_T(0), dot1 = ACC_T(0);
      for (uint c = 0u; c < lanes; c += 2u) {
        const uvec4 a = c < PRE_K ? kr[c] : k_vec[k_row + c];
        const uvec4 b = c + 1u >= lanes ? uvec4(0u) : c + 1u < PRE_K ? kr[c + 1u] : k_vec[k_row + c + 1u];
        for (uint i = 0u; i < KV_VEC; i++) {
          dot0 += s_qv[c * KV_VEC + i] * kv_elem(a, i);
          if (c + 1u < lanes) dot1 += s_qv[(c + 1u) * KV_VEC + i] * kv_elem(b, i);
        }
      }
      s = cap_score(dot0 + dot1);
    }
    const ACC_T m_new = max(m, group_reduce(s, true));
    const ACC_T w = tid < len ? EXP(s - m_new) : ACC_T(0);
    s_p[tid] = w;
    const ACC_T alpha = m == NEG_INF ? ACC_T(0) : EXP(m - m_new);  // rescales the earlier chunks
    l = l * alpha + group_reduce(w, false);  // its barriers publish s_p too
    m = m_new;
    for (uint i = 0u; i < KV_VEC; i++) acc[i] *= alpha;
    for (uint u = 0u; u < PRE_V; u++) {
      const uint j = group + u * GROUPS;
      if (j >= len) break;
      const ACC_T wj = s_p[j];
      for (uint i = 0u; i < KV_VEC; i++) acc[i] += wj * kv_elem(vr[u], i);
    }
    for (uint j = group + PRE_V * GROUPS; j < len; j += GROUPS) {  // rows past the prefetched
      const uvec4 a = v_vec[v_first + (c0 + j) * lanes + col];
      const ACC_T wj = s_p[j];
      for (uint i = 0u; i < KV_VEC; i++) acc[i] += wj * kv_elem(a, i);
    }
    if (c0 + CHUNK < k_end) barrier();  // s_p and s_red are refilled by the next chunk
  }
  for (uint i = 0u; i < KV_VEC; i++) s_acc[group * D + col * KV_VEC + i] = acc[i];
  barrier();
  for (uint e = tid; e < D; e += WG_SIZE) {
    ACC_T total = ACC_T(0);
    for (uint k = 0u; k < GROUPS; k++) total += s_acc[k * D + e];
    if (w.used == 1u)
      y[row * D + e] = PACK(DT, total / l);
    else
      scratch[slot + 2u + e] = total;
  }
  if (w.used > 1u && tid == 0u) {
    scratch[slot] = m;
    scratch[slot + 1u] = l;
  }
}

void combine_splits(uint row, uint tid) {
  const uint ti = row % pc.t, d = pc.d;
  // The splits that wrote slots: those holding keys [first_key, n_keys).
  const uint n_keys = key_count(item_of(row), ti, false);
  const uint s0 = first_key(n_keys) / pc.span, used = (n_keys + pc.span - 1u) / pc.span;
  const uint first = row * pc.n_splits * (d + 2u);
  ACC_T big = NEG_INF;
  for (uint s = s0; s < used; s++) big = max(big, scratch[first + s * (d + 2u)]);
  ACC_T l = ACC_T(0);
  for (uint s = s0; s < used; s++) {
    const uint slot = first + s * (d + 2u);
    l += scratch[slot + 1u] * EXP(scratch[slot] - big);
  }
  for (uint e = tid; e < d; e += WG_SIZE) {
    ACC_T acc = ACC_T(0);
    for (uint s = s0; s < used; s++) {
      const uint slot = first + s * (d + 2u);
      acc += scratch[slot + 2u + e] * EXP(scratch[slot] - big);
    }
    y[row * d + e] = PACK(DT, acc / l);
  }
}

void main() {
  const uint g = group_index(), tid = gl_LocalInvocationID.x;
  if (g >= pc.b * pc.h * pc.t * pc.n_splits) return;  // uniform per workgroup
  RowWork w;
  const bool work = row_work(g, tid, w);  // uniform per workgroup
  if (w.split >= w.used) return;  // past the row's keys (a decode step sized for max_seq)
  if (work) {
    if (LANES > 0u)
      partial_phase_vec(g, tid, w);
    else
      partial_phase(g, tid, w);
  }
  if (w.used > 1u && last_of_row(w.row, w.used)) combine_splits(w.row, tid);
}
