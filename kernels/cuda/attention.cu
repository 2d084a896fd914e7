// attention_cached: causal softmax(q k^T) v of q (b, h, t, d) over the caches (slots, kvh,
// max_seq, d), query row (bi, hi, ti) attending to cache rows 0 ..= pos + ti (the last `window`
// of them when window > 0) of kv head hi / (h / kvh) in item bi's slot (slots[bi], or bi), pos
// the item's position; scores soft-capped when softcap_bits is not 0.
// Flash-decoding in one dispatch: a block per (query row, split); split s takes the keys
// [s span, (s + 1) span) of its row, CHUNK (= WG_SIZE) at a time with a running maximum m, sum l
// and accumulator acc (the online softmax). The row's used splits are those up to its last key
// (pos is read on the device; the splits past it return at once). With one the block writes the
// row's output acc / l itself; with more each writes (m, l, acc[d]) to its scratch slot, and the
// row's last block to finish (include/split_rows.cuh) combines them: out =
// sum acc_s e^(m_s - M) / sum l_s e^(m_s - M), M = max m_s (one split's combine would give the
// same bits: e^0 = 1). (A second dispatch for the combine cost more than the combine itself in
// a decode step.)
// The caches are KV_DT: DT, or f16/bf16 under f32 (each element converted as it is loaded).
// Sums, the softmax and the scratch are in ACC_T: f32 (f64 for f64). Nothing has a size set by
// the sequence: shared arrays hold one chunk; element e of the accumulator belongs to thread
// e % WG_SIZE, in its registers for d <= ACC_REGS WG_SIZE (every head size models use), else in
// the scratch slot (the registers saved a read-modify-write of global memory per chunk). When pos +
// t > max_seq the keys are clamped to the cache (nothing is read out of bounds) and the op's error
// record gets the position; an item whose slot is beyond the caches gets nothing computed (the
// record gets the slot). Bindings: 0 q, 1 k_cache, 2 v_cache, 3 pos, 4 scratch, 5 y, 6 the error
// record, 7 slots, 8 the split counters (a u32 per query row, zero between ops).
// LANES (WICK_SPEC_0, 0 = off) picks the vector form for rows of d = LANES * KV_VEC elements
// (KV_VEC of them in 16 bytes; the host checks alignment): LANES lanes share a key, each loading
// 16 bytes of it, so a warp reads 32 / LANES whole rows per load and every thread's loads are
// independent. The scalar form (a thread per key, one element per load) left decode attention
// latency bound: ~40% of a SmolLM2 decode step on the H200.
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/errors.cuh"
#include "include/math.cuh"
#include "include/split_rows.cuh"
#include "include/warp.cuh"

#if DT_KIND != 0 && DT_KIND != 1
#error "attention.cu: DT is a float dtype"
#endif

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 0
#endif
constexpr uint32_t LANES = WICK_SPEC_0;
constexpr uint32_t CHUNK = WG_SIZE;
constexpr uint32_t ACC_REGS = 4u;

WICK_PARAMS_STRUCT(AttentionParams, WICK_PARAMS_ATTENTION(WICK_CU_FIELD, WICK_CU_ARRAY))

typedef STORAGE_T(DT) ST;
typedef STORAGE_T(KV_DT) KT;  // the caches: DT, or f16/bf16 under f32
#if DT_KIND == 1
typedef double ACC_T;
#else
typedef float ACC_T;
#endif

// Query row `row`'s item: its position and cache slot, read from their buffers.
struct Item {
  uint32_t pos, slot;
  bool slot_ok;
};
WICK_DEV Item item_of(const AttentionParams& pc, const uint32_t* pos, const uint32_t* slots,
                      uint32_t row) {
  const uint32_t bi = row / (pc.t * pc.h);
  Item it;
  it.pos = pos[pc.pos_offset + bi * pc.pos_stride];
  it.slot = pc.cache_slots > 0u ? slots[pc.slots_offset + bi] : bi;
  it.slot_ok = pc.cache_slots == 0u || it.slot < pc.cache_slots;
  return it;
}

// The keys query ti of an item attends to: pos + ti + 1, clamped to the cache, then to the op's
// key_limit (the splits cover no more); none for a slot beyond the caches. `report`: this is the
// item's reporting thread (its first head's first split, thread 0), which records the cache's
// errors from query 0 and a key_limit exceeded from the last query (the item's most keys).
WICK_DEV uint32_t key_count(const AttentionParams& pc, const Item& it, uint32_t ti, uint32_t* err,
                            bool report) {
  if (!it.slot_ok) {
    if (report && ti == 0u) report_error(err, WICK_ERROR_CACHE_SLOT, it.slot, pc.cache_slots);
    return 0u;
  }
  const uint32_t p = it.pos;
  uint32_t n = p + ti + 1u;
  if (p > pc.max_seq || pc.t > pc.max_seq - p) {
    if (report && ti == 0u) report_error(err, WICK_ERROR_CACHE_POSITION, p, pc.max_seq);
    n = p >= pc.max_seq ? pc.max_seq : min(p + ti + 1u, pc.max_seq);
  }
  if (pc.key_limit > 0u && n > pc.key_limit) {
    if (report && ti + 1u == pc.t) report_error(err, WICK_ERROR_KEY_LIMIT, n, pc.key_limit);
    n = pc.key_limit;
  }
  return n;
}

// The first key of a row of n_keys: within the sliding window, if any.
WICK_DEV uint32_t first_key(const AttentionParams& pc, uint32_t n_keys) {
  return pc.window > 0u && n_keys > pc.window ? n_keys - pc.window : 0u;
}

// A score, soft-capped when the op asks: cap tanh(s / cap).
WICK_DEV ACC_T cap_score(const AttentionParams& pc, ACC_T s) {
  if (pc.softcap_bits == 0u) return s;
  const ACC_T cap = ACC_T(__uint_as_float(pc.softcap_bits));
  return cap * tanh(s / cap);
}

// What a block (query row, split) works on, for both forms: the keys [k0, k_end) of its
// row in its split, q's row, and the element of cache row 0 of its kv head in its item's slot;
// `used`, the splits up to the row's last key (those that take part: a split past it returns
// at once, and a row of one used split is written by that block, with no combine).
struct RowWork {
  uint32_t row, split, used, k0, k_end, q_row, first;
};
// False when the block has nothing to do (a split outside the row's keys: uniform per block).
WICK_DEV bool row_work(const AttentionParams& pc, const uint32_t* pos, const uint32_t* slots,
                       uint32_t* err, uint32_t g, uint32_t tid, RowWork& w) {
  w.row = g / pc.n_splits;
  const uint32_t split = g % pc.n_splits;
  const uint32_t ti = w.row % pc.t, hi = w.row / pc.t % pc.h, bi = w.row / (pc.t * pc.h);
  const Item it = item_of(pc, pos, slots, w.row);
  const bool report = split == 0u && hi == 0u && tid == 0u;
  const uint32_t n_keys = key_count(pc, it, ti, err, report);
  w.split = split;
  w.used = max(1u, (n_keys + pc.span - 1u) / pc.span);
  w.k0 = max(split * pc.span, first_key(pc, n_keys));
  w.k_end = min(split * pc.span + pc.span, n_keys);
  if (w.k0 >= w.k_end) return false;
  w.q_row = pc.q_offset + bi * pc.q_strides[0] + hi * pc.q_strides[1] + ti * pc.q_strides[2];
  w.first = (it.slot * pc.kvh + hi / (pc.h / pc.kvh)) * pc.max_seq * pc.d;
  return true;
}

WICK_DEV void partial_phase(const AttentionParams& pc, const ST* q, const KT* k_cache,
                            const KT* v_cache, const RowWork& w, ACC_T* scratch, ST* y, uint32_t g,
                            uint32_t tid) {
  __shared__ ACC_T s_q[WG_SIZE];     // the query row (when d <= WG_SIZE)
  __shared__ ACC_T s_p[CHUNK];       // the chunk's weights e^(s - m)
  __shared__ ACC_T s_part[WG_SIZE];  // partial sums of acc
  __shared__ ACC_T s_red[WICK_WARPS];
  const uint32_t row = w.row, k0 = w.k0, k_end = w.k_end, q_row = w.q_row;
  const uint32_t d = pc.d;
  const KT* keys = k_cache + pc.kc_offset + w.first;
  const KT* values = v_cache + pc.vc_offset + w.first;
  ACC_T* slot = scratch + static_cast<uint64_t>(g) * (d + 2u);  // (m, l, acc[d])
  const bool q_shared = d <= WG_SIZE;
  if (q_shared && tid < d) s_q[tid] = ACC_T(LOAD(DT, q[q_row + tid * pc.q_strides[3]]));
  const bool regs = d <= ACC_REGS * WG_SIZE;
  ACC_T acc[ACC_REGS];  // element tid + i WG_SIZE (regs)
#pragma unroll
  for (uint32_t i = 0u; i < ACC_REGS; i++) acc[i] = ACC_T(0);
  if (!regs)
    for (uint32_t e = tid; e < d; e += WG_SIZE) slot[2u + e] = ACC_T(0);
  __syncthreads();
  ACC_T m = -FloatBits<ACC_T>::inf(), l = ACC_T(0);
  for (uint32_t c0 = k0; c0 < k_end; c0 += CHUNK) {
    const uint32_t len = min(CHUNK, k_end - c0);
    // Scores: a key per thread.
    ACC_T s = -FloatBits<ACC_T>::inf();
    if (tid < len) {
      const KT* key = keys + (c0 + tid) * d;
      ACC_T dot = ACC_T(0);
      for (uint32_t e = 0u; e < d; e++) {
        const ACC_T qe = q_shared ? s_q[e] : ACC_T(LOAD(DT, q[q_row + e * pc.q_strides[3]]));
        dot += qe * ACC_T(LOAD(KV_DT, key[e]));
      }
      s = cap_score(pc, dot);
    }
    const ACC_T m_new = fmax(m, block_allreduce(s, s_red, MaxOp()));
    const ACC_T w = tid < len ? exp(s - m_new) : ACC_T(0);
    s_p[tid] = w;
    if (WICK_WARPS == 1) __syncthreads();  // else block_allreduce's barriers publish s_p
    // Rescales the earlier chunks.
    const ACC_T alpha = m == -FloatBits<ACC_T>::inf() ? ACC_T(0) : exp(m - m_new);
    l = l * alpha + block_allreduce(w, s_red, SumOp());
    m = m_new;
    // acc = acc alpha + sum_j w_j v_j.
    if (d < WG_SIZE) {  // WG_SIZE / d threads per element, each over every G-th key, then summed
      const uint32_t groups = WG_SIZE / d, part = tid / d, e = tid % d;
      ACC_T sum = ACC_T(0);
      if (part < groups)
        for (uint32_t j = part; j < len; j += groups)
          sum += s_p[j] * ACC_T(LOAD(KV_DT, values[(c0 + j) * d + e]));
      s_part[tid] = sum;
      __syncthreads();
      if (tid < d) {
        ACC_T total = ACC_T(0);
        for (uint32_t k = 0u; k < groups; k++) total += s_part[tid + k * d];
        acc[0] = acc[0] * alpha + total;
      }
    } else if (regs) {
#pragma unroll
      for (uint32_t i = 0u; i < ACC_REGS; i++) {
        const uint32_t e = tid + i * WG_SIZE;
        if (e >= d) break;
        ACC_T sum = ACC_T(0);
        for (uint32_t j = 0u; j < len; j++)
          sum += s_p[j] * ACC_T(LOAD(KV_DT, values[(c0 + j) * d + e]));
        acc[i] = acc[i] * alpha + sum;
      }
    } else {
      for (uint32_t e = tid; e < d; e += WG_SIZE) {
        ACC_T sum = ACC_T(0);
        for (uint32_t j = 0u; j < len; j++)
          sum += s_p[j] * ACC_T(LOAD(KV_DT, values[(c0 + j) * d + e]));
        slot[2u + e] = slot[2u + e] * alpha + sum;
      }
    }
    __syncthreads();  // s_p and s_part are refilled by the next chunk
  }
  if (regs) {
#pragma unroll
    for (uint32_t i = 0u; i < ACC_REGS; i++) {
      const uint32_t e = tid + i * WG_SIZE;
      if (e >= d) break;
      if (w.used == 1u)
        y[row * d + e] = PACK(DT, acc[i] / l);
      else
        slot[2u + e] = acc[i];
    }
  } else if (w.used == 1u) {
    for (uint32_t e = tid; e < d; e += WG_SIZE) y[row * d + e] = PACK(DT, slot[2u + e] / l);
  }
  if (w.used > 1u && tid == 0u) {
    slot[0] = m;
    slot[1] = l;
  }
}

// 16 bytes of a cache row.
constexpr uint32_t KV_VEC = 16u / sizeof(KT);
struct alignas(16) KvVec {
  KT e[KV_VEC];
};

// The vector form (LANES > 0; d == LANES * KV_VEC): as partial_phase, but the scores are
// LANES lanes per key (a shuffle reduction over them) and the value sums KV_VEC elements per
// thread, WG_SIZE / LANES keys at a time, summed over those key groups once at the end.
template <uint32_t L>
WICK_DEV void partial_phase_vec(const AttentionParams& pc, const ST* q, const KT* k_cache,
                                const KT* v_cache, const RowWork& w, ACC_T* scratch, ST* y,
                                uint32_t g, uint32_t tid) {
  static_assert(L >= 1u && L <= 32u && (L & (L - 1u)) == 0u, "L: 2^i <= 32");
  constexpr uint32_t GROUPS = WG_SIZE / L;  // key groups of the value sums
  constexpr uint32_t D = L * KV_VEC;
  __shared__ ACC_T s_p[CHUNK];  // the chunk's scores, then weights e^(s - m)
  __shared__ ACC_T s_red[WICK_WARPS];
  __shared__ ACC_T s_acc[GROUPS * D];  // the key groups' value sums, added at the end
  const uint32_t row = w.row, k0 = w.k0, k_end = w.k_end, q_row = w.q_row;
  const uint32_t lane = tid % 32u, warp = tid / 32u;
  const uint32_t col = tid % L;  // this thread's 16 bytes of a row
  const KvVec* keys = reinterpret_cast<const KvVec*>(k_cache + pc.kc_offset + w.first);
  const KvVec* values = reinterpret_cast<const KvVec*>(v_cache + pc.vc_offset + w.first);
  ACC_T* slot = scratch + static_cast<uint64_t>(g) * (D + 2u);  // (m, l, acc[d])
  ACC_T qv[KV_VEC];
#pragma unroll
  for (uint32_t i = 0u; i < KV_VEC; i++)
    qv[i] = ACC_T(LOAD(DT, q[q_row + (col * KV_VEC + i) * pc.q_strides[3]]));
  ACC_T acc[KV_VEC];
#pragma unroll
  for (uint32_t i = 0u; i < KV_VEC; i++) acc[i] = ACC_T(0);
  ACC_T m = -FloatBits<ACC_T>::inf(), l = ACC_T(0);
  constexpr uint32_t ROWS_PER_LOAD = 32u / L;  // keys a warp reads per load
  constexpr uint32_t BATCH = L < 4u ? L : 4u;  // loads in flight per thread
  for (uint32_t c0 = k0; c0 < k_end; c0 += CHUNK) {
    const uint32_t len = min(CHUNK, k_end - c0);
    // Scores: warp w takes the chunk's keys [32 w, 32 w + 32), ROWS_PER_LOAD per step.
    for (uint32_t s0 = 0u; s0 < L; s0 += BATCH) {
      KvVec kv[BATCH];
#pragma unroll
      for (uint32_t b = 0u; b < BATCH; b++) {
        const uint32_t j = warp * 32u + (s0 + b) * ROWS_PER_LOAD + lane / L;
        if (j < len) kv[b] = keys[(c0 + j) * L + col];
      }
#pragma unroll
      for (uint32_t b = 0u; b < BATCH; b++) {
        const uint32_t j = warp * 32u + (s0 + b) * ROWS_PER_LOAD + lane / L;
        ACC_T dot = ACC_T(0);
        if (j < len) {
#pragma unroll
          for (uint32_t i = 0u; i < KV_VEC; i++) dot += qv[i] * ACC_T(LOAD(KV_DT, kv[b].e[i]));
        }
#pragma unroll
        for (uint32_t o = L / 2u; o > 0u; o >>= 1) dot += __shfl_xor_sync(WICK_FULL_MASK, dot, o);
        if (col == 0u && j < CHUNK)
          s_p[j] = j < len ? cap_score(pc, dot) : -FloatBits<ACC_T>::inf();
      }
    }
    __syncthreads();
    const ACC_T s = s_p[tid];
    const ACC_T m_new = fmax(m, block_allreduce(s, s_red, MaxOp()));
    const ACC_T w = tid < len ? exp(s - m_new) : ACC_T(0);
    s_p[tid] = w;                          // only this thread read s_p[tid]
    if (WICK_WARPS == 1) __syncthreads();  // else block_allreduce's barriers publish s_p
    const ACC_T alpha = m == -FloatBits<ACC_T>::inf() ? ACC_T(0) : exp(m - m_new);
    l = l * alpha + block_allreduce(w, s_red, SumOp());
    m = m_new;
    // Value sums: key group tid / L takes keys j = group, group + GROUPS, ...
#pragma unroll
    for (uint32_t i = 0u; i < KV_VEC; i++) acc[i] *= alpha;
    const uint32_t group = tid / L;
    for (uint32_t j0 = group; j0 < len; j0 += GROUPS * BATCH) {
      KvVec vv[BATCH];
#pragma unroll
      for (uint32_t b = 0u; b < BATCH; b++) {
        const uint32_t j = j0 + b * GROUPS;
        if (j < len) vv[b] = values[(c0 + j) * L + col];
      }
#pragma unroll
      for (uint32_t b = 0u; b < BATCH; b++) {
        const uint32_t j = j0 + b * GROUPS;
        if (j < len) {
          const ACC_T wj = s_p[j];
#pragma unroll
          for (uint32_t i = 0u; i < KV_VEC; i++) acc[i] += wj * ACC_T(LOAD(KV_DT, vv[b].e[i]));
        }
      }
    }
    __syncthreads();  // s_p is refilled by the next chunk
  }
  // The key groups' sums, added in group order.
#pragma unroll
  for (uint32_t i = 0u; i < KV_VEC; i++) s_acc[(tid / L) * D + col * KV_VEC + i] = acc[i];
  __syncthreads();
  for (uint32_t e = tid; e < D; e += WG_SIZE) {
    ACC_T total = ACC_T(0);
    for (uint32_t k = 0u; k < GROUPS; k++) total += s_acc[k * D + e];
    if (w.used == 1u)
      y[row * D + e] = PACK(DT, total / l);
    else
      slot[2u + e] = total;
  }
  if (w.used > 1u && tid == 0u) {
    slot[0] = m;
    slot[1] = l;
  }
}

// The row's output from its splits' slots, read from L2 (other blocks wrote them).
WICK_DEV void combine_splits(const AttentionParams& pc, const Item& it, const ACC_T* scratch, ST* y,
                             uint32_t row, uint32_t tid) {
  const uint32_t ti = row % pc.t, d = pc.d;
  // The splits that wrote slots: those holding keys [first_key, n_keys).
  const uint32_t n_keys = key_count(pc, it, ti, nullptr, false);
  const uint32_t s0 = first_key(pc, n_keys) / pc.span, used = (n_keys + pc.span - 1u) / pc.span;
  const ACC_T* first = scratch + static_cast<uint64_t>(row) * pc.n_splits * (d + 2u);
  ACC_T big = -FloatBits<ACC_T>::inf();
  for (uint32_t s = s0; s < used; s++) big = fmax(big, __ldcg(first + s * (d + 2u)));
  ACC_T l = ACC_T(0);
  for (uint32_t s = s0; s < used; s++) {
    const ACC_T* slot = first + s * (d + 2u);
    l += __ldcg(slot + 1) * exp(__ldcg(slot) - big);
  }
  for (uint32_t e = tid; e < d; e += WG_SIZE) {
    ACC_T acc = ACC_T(0);
    for (uint32_t s = s0; s < used; s++) {
      const ACC_T* slot = first + s * (d + 2u);
      acc += __ldcg(slot + 2u + e) * exp(__ldcg(slot) - big);
    }
    y[row * d + e] = PACK(DT, acc / l);
  }
}

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const AttentionParams& pc = PARAMS(AttentionParams, args);
  const ST* q = buffer_at<const ST>(args, 0);
  const KT* k_cache = buffer_at<const KT>(args, 1);
  const KT* v_cache = buffer_at<const KT>(args, 2);
  const uint32_t* pos = buffer_at<const uint32_t>(args, 3);
  ACC_T* scratch = buffer_at<ACC_T>(args, 4);
  ST* y = buffer_at<ST>(args, 5);
  uint32_t* err = buffer_at<uint32_t>(args, 6);
  const uint32_t* slots = buffer_at<const uint32_t>(args, 7);
  uint32_t* counters = buffer_at<uint32_t>(args, 8);
  const uint32_t g = group_index(), tid = threadIdx.x;
  if (g >= pc.b * pc.h * pc.t * pc.n_splits) return;  // uniform per block
  RowWork w;
  const bool work = row_work(pc, pos, slots, err, g, tid, w);  // uniform per block
  if (w.split >= w.used) return;  // past the row's keys (a decode step sized for max_seq)
  if (work) {
    if constexpr (LANES > 0u)
      partial_phase_vec<LANES>(pc, q, k_cache, v_cache, w, scratch, y, g, tid);
    else
      partial_phase(pc, q, k_cache, v_cache, w, scratch, y, g, tid);
  }
  if (w.used > 1u && last_of_row(counters + w.row, w.used))
    combine_splits(pc, item_of(pc, pos, slots, w.row), scratch, y, w.row, tid);
}
