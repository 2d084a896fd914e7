// Reductions across a warp and across the block (WG_SIZE threads, a multiple of 32): warp
// shuffles, then one value per warp through shared memory. Every thread gets the result.
#pragma once

#include "include/common.cuh"

static_assert(WG_SIZE % 32 == 0 && WG_SIZE <= 1024, "WG_SIZE is a multiple of 32, at most 1024");

#define WICK_WARPS (WG_SIZE / 32)
#define WICK_FULL_MASK 0xffffffffu

struct SumOp {
  template <typename T>
  WICK_DEV T operator()(T a, T b) const {
    return a + b;
  }
};

// fmax: NaN drops out (the other operand wins).
struct MaxOp {
  template <typename T>
  WICK_DEV T operator()(T a, T b) const {
    return fmax(a, b);
  }
};

// op folded over the 32 lanes (a butterfly, so every lane holds the same result).
template <typename T, typename Op>
WICK_DEV T warp_allreduce(T v, Op op) {
#pragma unroll
  for (int lanes = 16; lanes > 0; lanes >>= 1) v = op(v, __shfl_xor_sync(WICK_FULL_MASK, v, lanes));
  return v;
}

template <typename T>
WICK_DEV T warp_sum(T v) {
  return warp_allreduce(v, SumOp());
}

// op folded over the block: `scratch` is WICK_WARPS shared values; the call ends with a barrier,
// so the next one may reuse it. Every thread of the block must call it.
template <typename T, typename Op>
WICK_DEV T block_allreduce(T v, T* scratch, Op op) {
  v = warp_allreduce(v, op);
  if (WICK_WARPS == 1) return v;
  const uint32_t warp = threadIdx.x / 32u, lane = threadIdx.x % 32u;
  if (lane == 0u) scratch[warp] = v;
  __syncthreads();
  T r = scratch[0];
#pragma unroll
  for (int w = 1; w < WICK_WARPS; w++) r = op(r, scratch[w]);
  __syncthreads();
  return r;
}
