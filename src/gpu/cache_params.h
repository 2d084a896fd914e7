// The KV-cache ops' kernel parameters, shared by rope_kv_cache and attention_cached
// (gpu_attention.cpp) and qmatvec's ROPE_KV stores (gpu_quantized.cpp).
#pragma once

#include "gpu/gpu_device.h"

namespace wick::gpu {

// The last element a view reaches, as a kernel index (Unsupported beyond 32 bits).
inline void check_reach(const Layout& l, const char* what) {
  if (l.numel() > 0) to_index(l.storage_span().second - 1, what);
}

// A position per batch item (else one for all).
inline bool per_item(backend::View pos) {
  return pos.layout.numel() > 1;
}

// The kernels' pos_offset, slots_offset and cache_slots (kernel_params.h).
template <typename P>
void put_items(P& pc, backend::View pos, const backend::View* slots, int64_t cache_slots) {
  pc.pos_offset = to_index(pos.layout.start_offset, "offset");
  check_reach(pos.layout, "element offset");
  if (slots) {
    pc.slots_offset = to_index(slots->layout.start_offset, "offset");
    pc.cache_slots = to_index(cache_slots, "dim");
    check_reach(slots->layout, "element offset");
  }
}

// Whether a pair of rotary tables (cos, sin) of half = d/2 columns can be read in place by the
// kernels: a unit stride along d/2 and one row stride for both (their parameter blocks carry one
// per pair).
inline bool tables_in_place(const Layout& cos, const Layout& sin, int64_t half, int64_t max_seq) {
  return (half <= 1 || (cos.strides[1] == 1 && sin.strides[1] == 1)) &&
         (max_seq <= 1 || cos.strides[0] == sin.strides[0]);
}

}  // namespace wick::gpu
