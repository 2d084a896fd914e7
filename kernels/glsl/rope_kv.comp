#version 450
// rope_kv_cache in one kernel, a thread per element: of q (b, h, t, d), rotated into q_out
// (contiguous); of k (b, kvh, t, d), rotated into k_cache (slots, kvh, max_seq, d) at row pos + ti
// of the item's slot; of v, copied as stored into v_cache likewise. The caches are KV_DT: DT, or
// f16/bf16 under f32 (k and v rounded to it once). Each item's position (and slot) is read from
// its buffer; when pos + t > max_seq (or the slot is beyond the caches) nothing of that item is
// written and the op's error record gets the position (slot). The rotation is rope.comp's
// (include/rope.glsl), with row pos + ti of the (rows, d/2) tables.
#include "include/common.glsl"
#include "include/dtype.glsl"

#include "include/params.glsl"
layout(push_constant) uniform Push {
  WICK_PARAMS_ROPE_KV(WICK_FIELD, WICK_ARRAY)
} pc;

layout(constant_id = 0) const uint INTERLEAVED = 0u;
layout(constant_id = 1) const uint PER_ITEM_POS = 0u;  // a position per batch item, else one
layout(set = 0, binding = 0) readonly buffer Q { STORAGE_T(DT) q[]; };
layout(set = 0, binding = 1) readonly buffer K { STORAGE_T(DT) k[]; };
layout(set = 0, binding = 2) readonly buffer V { STORAGE_T(DT) v[]; };
layout(set = 0, binding = 3) readonly buffer CosQ { STORAGE_T(DT) cos_q[]; };
layout(set = 0, binding = 4) readonly buffer SinQ { STORAGE_T(DT) sin_q[]; };
layout(set = 0, binding = 5) readonly buffer CosK { STORAGE_T(DT) cos_k[]; };
layout(set = 0, binding = 6) readonly buffer SinK { STORAGE_T(DT) sin_k[]; };
layout(set = 0, binding = 7) readonly buffer Pos { uint pos[]; };
layout(set = 0, binding = 8) writeonly buffer QOut { STORAGE_T(DT) q_out[]; };
layout(set = 0, binding = 9) writeonly buffer KCache { STORAGE_T(KV_DT) k_cache[]; };
layout(set = 0, binding = 10) writeonly buffer VCache { STORAGE_T(KV_DT) v_cache[]; };
#define ERROR_BINDING 11
#include "include/errors.glsl"
layout(set = 0, binding = 12) readonly buffer Slots { uint slots[]; };

#define CT COMPUTE_T(DT)
#include "include/rope.glsl"

void main() {
  const uint e = global_index();
  const uint d = pc.d, t = pc.t;
  const uint nq = pc.b * pc.h * t * d, nkv = pc.b * pc.kvh * t * d;
  if (e >= nq + 2u * nkv) return;
  // Which tensor, and the element's (bi, hi, ti, i) in it.
  const uint part = e < nq ? 0u : e < nq + nkv ? 1u : 2u;
  uint r = part == 0u ? e : part == 1u ? e - nq : e - nq - nkv;
  const uint heads = part == 0u ? pc.h : pc.kvh;
  const uint i = r % d;
  r /= d;
  const uint ti = r % t;
  r /= t;
  const uint hi = r % heads;
  const uint bi = r / heads;
  const uint p = pos[pc.pos_offset + bi * PER_ITEM_POS];
  const uint slot = pc.cache_slots > 0u ? slots[pc.slots_offset + bi] : bi;
  const bool first = part == 0u && hi == 0u && ti == 0u && i == 0u;  // reports the item's error
  if (p > pc.max_seq || t > pc.max_seq - p) {
    if (first) report_error(WICK_ERROR_CACHE_POSITION, p, 0u, pc.max_seq);
    return;
  }
  if (pc.cache_slots > 0u && slot >= pc.cache_slots) {
    if (first) report_error(WICK_ERROR_CACHE_SLOT, slot, 0u, pc.cache_slots);
    return;
  }
  const uint cache_at = ((slot * pc.kvh + hi) * pc.max_seq + p + ti) * d + i;
  if (part == 2u) {
    const uint at =
        pc.v_offset + bi * pc.v_strides[0] + hi * pc.v_strides[1] + ti * pc.v_strides[2] + i * pc.v_strides[3];
#ifdef KV_SAME
    v_cache[pc.vc_offset + cache_at] = v[at];
#else
    v_cache[pc.vc_offset + cache_at] = PACK(KV_DT, LOAD(DT, v[at]));
#endif
    return;
  }
  uint pair, lo, hi_pos;
  rope_pair(i, d, INTERLEAVED == 1u, pair, lo, hi_pos);
  const uint tab = part * 2u;  // cos_q, sin_q / cos_k, sin_k
  const uint tab_row = (p + ti) * pc.table_rows[part];  // one row stride per pair
  const uint c_at = pc.table_offsets[tab] + tab_row + pair;
  const uint s_at = pc.table_offsets[tab + 1u] + tab_row + pair;
  if (part == 0u) {
    const uint row = pc.q_offset + bi * pc.q_strides[0] + hi * pc.q_strides[1] + ti * pc.q_strides[2];
    const CT a = LOAD(DT, q[row + lo * pc.q_strides[3]]);
    const CT b = LOAD(DT, q[row + hi_pos * pc.q_strides[3]]);
    q_out[e] = PACK(DT, rope_rotate(i == lo, a, b, LOAD(DT, cos_q[c_at]), LOAD(DT, sin_q[s_at])));
  } else {
    const uint row = pc.k_offset + bi * pc.k_strides[0] + hi * pc.k_strides[1] + ti * pc.k_strides[2];
    const CT a = LOAD(DT, k[row + lo * pc.k_strides[3]]);
    const CT b = LOAD(DT, k[row + hi_pos * pc.k_strides[3]]);
    k_cache[pc.kc_offset + cache_at] =
        PACK(KV_DT, rope_rotate(i == lo, a, b, LOAD(DT, cos_k[c_at]), LOAD(DT, sin_k[s_at])));
  }
}
