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

// Element x of the row normalised and scaled by alpha's a (layer_norm then adds beta's).
template <typename CT>
WICK_DEV CT row_normalized(CT x, CT mean, CT inv, CT a) {
  return (x - mean) * inv * a;
}
