// Batched matrix kernels (matmul, gemv): batch dims (collapsed to at most WICK_BATCH_RANK) with
// their own strides per operand, so broadcast (stride 0) and narrowed batch dims are read in
// place. The batch index is batch_base + blockIdx.z.
#pragma once

#include "include/common.cuh"

WICK_PARAMS_STRUCT(BatchParams, WICK_PARAMS_BATCH(WICK_CU_FIELD, WICK_CU_ARRAY))

// Element offsets of batch z's matrices in A and B (start offsets included). 64-bit: a batch's
// start may lie beyond 2^32 elements even where every index inside one matrix fits 32 bits.
struct BatchOffsets {
  uint64_t a, b;
};

WICK_DEV BatchOffsets batch_offsets(const BatchParams& p, uint32_t z) {
  BatchOffsets off = {p.a_offset, p.b_offset};
  for (int d = int(p.batch_rank) - 1; d >= 0; d--) {
    const uint32_t idx = z % p.batch_shape[d];
    z /= p.batch_shape[d];
    off.a += uint64_t(idx) * p.a_batch[d];
    off.b += uint64_t(idx) * p.b_batch[d];
  }
  return off;
}

// The batch this block computes.
WICK_DEV uint32_t batch_index(const BatchParams& p) {
  return p.batch_base + blockIdx.z;
}
