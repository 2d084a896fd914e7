// rope_kv_cache in one kernel, a thread per element: of q (b, h, t, d), rotated into q_out
// (contiguous); of k (b, kvh, t, d), rotated into k_cache (slots, kvh, max_seq, d) at row pos + ti
// of the item's slot; of v, copied as stored into v_cache likewise. The caches are KV_DT: DT, or
// f16/bf16 under f32 (k and v rounded to it once). Each item's position (and slot) is read from
// its buffer; when pos + t > max_seq (or the slot is beyond the caches) nothing of that item is
// written and the op's error record gets the position (slot). The rotation is rope.cu's
// (include/rope.cuh), with row pos + ti of the (rows, d/2) tables.
// Bindings: 0 q, 1 k, 2 v, 3 cos_q, 4 sin_q, 5 cos_k, 6 sin_k, 7 pos, 8 q_out, 9 k_cache,
// 10 v_cache, 11 the error record, 12 slots. Specialization: WICK_SPEC_0 INTERLEAVED,
// WICK_SPEC_1 PER_ITEM_POS (a position per batch item, else one for all).
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/errors.cuh"
#include "include/rope.cuh"

#if DT_KIND != 0 && DT_KIND != 1
#error "rope_kv.cu: DT is a float dtype"
#endif

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 0
#endif
#ifndef WICK_SPEC_1
#define WICK_SPEC_1 0
#endif
constexpr uint32_t INTERLEAVED = WICK_SPEC_0;
constexpr uint32_t PER_ITEM_POS = WICK_SPEC_1;

WICK_PARAMS_STRUCT(RopeKvParams, WICK_PARAMS_ROPE_KV(WICK_CU_FIELD, WICK_CU_ARRAY))

typedef STORAGE_T(DT) ST;
typedef COMPUTE_T(DT) CT;
typedef STORAGE_T(KV_DT) KT;

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const RopeKvParams& pc = PARAMS(RopeKvParams, args);
  const ST* q = buffer_at<const ST>(args, 0);
  const ST* k = buffer_at<const ST>(args, 1);
  const ST* v = buffer_at<const ST>(args, 2);
  const uint32_t* pos = buffer_at<const uint32_t>(args, 7);
  const uint32_t* slots = buffer_at<const uint32_t>(args, 12);
  ST* q_out = buffer_at<ST>(args, 8);
  KT* k_cache = buffer_at<KT>(args, 9);
  KT* v_cache = buffer_at<KT>(args, 10);
  uint32_t* err = buffer_at<uint32_t>(args, 11);

  const uint32_t e = global_index();
  const uint32_t d = pc.d, t = pc.t;
  const uint32_t nq = pc.b * pc.h * t * d, nkv = pc.b * pc.kvh * t * d;
  if (e >= nq + 2u * nkv) return;
  // Which tensor, and the element's (bi, hi, ti, i) in it.
  const uint32_t part = e < nq ? 0u : e < nq + nkv ? 1u : 2u;
  uint32_t r = part == 0u ? e : part == 1u ? e - nq : e - nq - nkv;
  const uint32_t heads = part == 0u ? pc.h : pc.kvh;
  const uint32_t i = r % d;
  r /= d;
  const uint32_t ti = r % t;
  r /= t;
  const uint32_t hi = r % heads;
  const uint32_t bi = r / heads;
  const uint32_t p = pos[pc.pos_offset + bi * PER_ITEM_POS];
  const uint32_t slot = pc.cache_slots > 0u ? slots[pc.slots_offset + bi] : bi;
  const bool first = part == 0u && hi == 0u && ti == 0u && i == 0u;  // reports the item's error
  if (p > pc.max_seq || t > pc.max_seq - p) {
    if (first) report_error(err, WICK_ERROR_CACHE_POSITION, p, pc.max_seq);
    return;
  }
  if (pc.cache_slots > 0u && slot >= pc.cache_slots) {
    if (first) report_error(err, WICK_ERROR_CACHE_SLOT, slot, pc.cache_slots);
    return;
  }
  const uint32_t cache_at = ((slot * pc.kvh + hi) * pc.max_seq + p + ti) * d + i;
  if (part == 2u) {
    const uint32_t at = pc.v_offset + bi * pc.v_strides[0] + hi * pc.v_strides[1] +
                        ti * pc.v_strides[2] + i * pc.v_strides[3];
#ifdef KV_SAME
    v_cache[pc.vc_offset + cache_at] = v[at];
#else
    v_cache[pc.vc_offset + cache_at] = PACK(KV_DT, LOAD(DT, v[at]));
#endif
    return;
  }
  uint32_t pair, lo, hi_pos;
  rope_pair(i, d, INTERLEAVED == 1u, pair, lo, hi_pos);
  const uint32_t tab = part * 2u;  // bindings 3 + tab, 4 + tab: cos_q, sin_q / cos_k, sin_k
  const ST* cs = buffer_at<const ST>(args, 3 + int(tab));
  const ST* sn = buffer_at<const ST>(args, 4 + int(tab));
  const uint32_t tab_row = (p + ti) * pc.table_rows[part];  // one row stride per pair
  const CT c = LOAD(DT, cs[pc.table_offsets[tab] + tab_row + pair]);
  const CT s = LOAD(DT, sn[pc.table_offsets[tab + 1u] + tab_row + pair]);
  const ST* x = part == 0u ? q : k;
  const uint32_t* xs = part == 0u ? pc.q_strides : pc.k_strides;  // the block's arrays
  const uint32_t row =
      (part == 0u ? pc.q_offset : pc.k_offset) + bi * xs[0] + hi * xs[1] + ti * xs[2];
  const CT a = LOAD(DT, x[row + lo * xs[3]]);
  const CT b = LOAD(DT, x[row + hi_pos * xs[3]]);
  const CT y = rope_rotate(i == lo, a, b, c, s);
  if (part == 0u)
    q_out[e] = PACK(DT, y);
  else
    k_cache[pc.kc_offset + cache_at] = PACK(KV_DT, y);
}
