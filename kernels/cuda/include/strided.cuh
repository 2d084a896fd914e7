// Element-wise kernels over strided views (the twin of include/strided.glsl). The host collapses
// the dims of all operands, so a contiguous tensor is rank 1, and passes shape, start offsets and
// strides in the parameter block (WICK_PARAMS_STRIDED); views (transposed, narrowed, broadcast
// with stride 0) are read in place. Before including, define N_INPUTS, OUT_STRIDED (0: the output
// is contiguous, element i at offset + i) and optionally PARAMS_EXTRA, the kernel's own fields
// (e.g. `#define PARAMS_EXTRA WICK_PARAMS_UNARY_EXTRA`). Declares `struct Push`.
#pragma once

#include "include/common.cuh"

#define MAX_RANK WICK_MAX_RANK
#define N_OPERANDS (N_INPUTS + 1)
#if OUT_STRIDED
#define N_STRIDED (N_INPUTS + 1)
#else
#define N_STRIDED N_INPUTS
#endif
#ifndef PARAMS_EXTRA
#define PARAMS_EXTRA(F, A)
#endif

WICK_PARAMS_STRUCT(Push, WICK_PARAMS_STRIDED(WICK_CU_FIELD, WICK_CU_ARRAY, N_OPERANDS, N_STRIDED)
                             PARAMS_EXTRA(WICK_CU_FIELD, WICK_CU_ARRAY))

// Offsets of the element with row-major index i in every strided operand.
WICK_DEV void strided_offsets(const Push& pc, uint32_t i, uint32_t (&off)[N_STRIDED]) {
  if (pc.rank == 1u) {  // the common case (contiguous, or one strided dim): no division
#pragma unroll
    for (int k = 0; k < N_STRIDED; k++) off[k] = pc.offset[k] + i * pc.strides[k * MAX_RANK];
    return;
  }
#pragma unroll
  for (int k = 0; k < N_STRIDED; k++) off[k] = pc.offset[k];
#pragma unroll
  for (int d = MAX_RANK - 1; d >= 0; d--) {
    if (d < static_cast<int>(pc.rank)) {
      const uint32_t n = pc.shape[d];
      const uint32_t idx = i % n;
      i /= n;
#pragma unroll
      for (int k = 0; k < N_STRIDED; k++) off[k] += idx * pc.strides[k * MAX_RANK + d];
    }
  }
}

#if !OUT_STRIDED
WICK_DEV uint32_t out_offset(const Push& pc, uint32_t i) {
  return pc.offset[N_INPUTS] + i;
}
#endif
