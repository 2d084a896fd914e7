// rope_kv_cache's front end, shared with QMatMul::forward_rope_kv, which may hand the op to the
// kernel of the product it rotates (the checks and errors stay rope_kv_cache's).
#pragma once

#include "wick/attention.h"

namespace wick::core {

// rope_kv_cache's inputs once checked: each a copy where it shares storage with a cache, pos and
// slots read as contiguous.
struct RopeKvInputs {
  Tensor q, k, v, cos_q, sin_q, cos_k, sin_k, pos, slots;
};

// rope_kv_cache's checks, its errors named `op` (wick/attention.h).
RopeKvInputs check_rope_kv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& k_cache, const Tensor& v_cache, const RotaryTables& tables,
                           const Tensor& pos, const Tensor& slots);

// The backend's rope_kv_cache of checked inputs into out (q's shape, contiguous).
void record_rope_kv(const RopeKvInputs& in, const Tensor& k_cache, const Tensor& v_cache,
                    bool interleaved, const Tensor& out);

}  // namespace wick::core
