// Rotary pairs, the one definition rope.cu and rope_kv.cu share so that rope_kv_cache equals
// rope / rope_i bit for bit (the twin of include/rope.glsl).
#pragma once

#include "include/common.cuh"

// Element i of a row of d: the pair it belongs to (the angle's index) and the pair's elements:
// (2 pair, 2 pair + 1) when interleaved (rope_i), else (pair, pair + d/2) (rope).
WICK_DEV void rope_pair(uint32_t i, uint32_t d, bool interleaved, uint32_t& pair, uint32_t& lo,
                        uint32_t& hi) {
  if (interleaved) {
    pair = i / 2u;
    lo = 2u * pair;
    hi = lo + 1u;
  } else {
    pair = i % (d / 2u);
    lo = pair;
    hi = pair + d / 2u;
  }
}

// The pair (a, b) = (x[lo], x[hi]) rotated by (c, s): element lo is a c - b s, element hi a s + b
// c. The fma is spelled out: left to --fmad, NVRTC contracted a c - b s one way in rope.cu and the
// other in rope_kv.cu (1-ulp differences on the H200), and rope_kv_cache must equal rope exactly.
template <typename CT>
WICK_DEV CT rope_rotate(bool is_lo, CT a, CT b, CT c, CT s) {
  return is_lo ? fma(a, c, -(b * s)) : fma(a, s, b * c);
}
