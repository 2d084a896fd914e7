// The row statistics of norm.cu, shared with the kernels that normalise a row on the way to
// something else (qact.cu's rms_norm prologue), so that both compute them with the same
// operations in the same order, hence the same bits: a block of WG_SIZE threads per row, thread t
// taking elements t, t + WG_SIZE, ..., then block_allreduce (include/warp.cuh).
#pragma once

#include "include/common.cuh"
#include "include/warp.cuh"

// 1 / sqrt(mean of (x - mean)^2 over the row's n elements + eps); at(j): element j of the row.
// s_red: WICK_WARPS shared values. Every thread of the block calls it.
template <typename CT, typename At>
WICK_DEV CT row_inv_rms(At at, uint32_t n, CT mean, CT eps, CT* s_red) {
  CT ss = CT(0);
  for (uint32_t j = threadIdx.x; j < n; j += WG_SIZE) {
    const CT v = at(j) - mean;
    ss += v * v;
  }
  return CT(1) / sqrt(block_allreduce(ss, s_red, SumOp()) / CT(n) + eps);
}

// row_inv_rms as a block of LANES threads (norm.cu's WG_SIZE) computes it, on a block of WG_SIZE
// (qmatvec.cu's, both multiples of 32): warp w here stands for that block's warps w,
// w + WICK_WARPS, ..., whose sums block_allreduce's order then adds, so the bits are norm's.
// s_red: LANES / 32 shared values. Every thread of the block calls it.
template <uint32_t LANES, typename CT, typename At>
WICK_DEV CT row_inv_rms_as(At at, uint32_t n, CT mean, CT eps, CT* s_red) {
  static_assert(LANES % 32u == 0u && WG_SIZE % 32 == 0, "row_inv_rms_as: whole warps");
  const uint32_t lane = threadIdx.x % 32u;
  for (uint32_t w = threadIdx.x / 32u; w < LANES / 32u; w += WICK_WARPS) {  // uniform per warp
    CT ss = CT(0);
    for (uint32_t j = w * 32u + lane; j < n; j += LANES) {
      const CT v = at(j) - mean;
      ss += v * v;
    }
    ss = warp_allreduce(ss, SumOp());
    if (lane == 0u) s_red[w] = ss;
  }
  __syncthreads();
  CT r = s_red[0];
#pragma unroll
  for (uint32_t w = 1u; w < LANES / 32u; w++) r = SumOp()(r, s_red[w]);
  __syncthreads();
  return CT(1) / sqrt(r / CT(n) + eps);
}

// Element x of the row normalised and scaled by alpha's a (layer_norm then adds beta's).
template <typename CT>
WICK_DEV CT row_normalized(CT x, CT mean, CT inv, CT a) {
  return (x - mean) * inv * a;
}
