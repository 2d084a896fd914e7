// Element-wise kernels over strided views. The host collapses the dims of all operands, so a
// contiguous tensor is rank 1, and passes shape, start offsets and strides as push constants;
// views (transposed, narrowed, broadcast with stride 0) are read in place, never copied first.
// Before including, define N_INPUTS, OUT_STRIDED (0: the output is contiguous, element i at
// offset + i) and optionally PUSH_EXTRA (the kernel's extra fields from kernels/shared/params.h,
// e.g. WICK_PARAMS_UNARY_EXTRA(WICK_FIELD, WICK_ARRAY)).
#include "include/params.glsl"
#define MAX_RANK WICK_MAX_RANK
#define N_OPERANDS (N_INPUTS + 1)
#if OUT_STRIDED
#define N_STRIDED (N_INPUTS + 1)
#else
#define N_STRIDED N_INPUTS
#endif

// WICK_PARAMS_STRIDED (kernels/shared/params.h): offsets of the inputs, then the output.
layout(push_constant) uniform Push {
  WICK_PARAMS_STRIDED(WICK_FIELD, WICK_ARRAY, N_OPERANDS, N_STRIDED)
#ifdef PUSH_EXTRA
  PUSH_EXTRA
#endif
} pc;

// Offsets of the element with row-major index i in every strided operand.
void strided_offsets(uint i, out uint off[N_STRIDED]) {
  if (pc.rank == 1u) {  // the common case (contiguous, or one strided dim): no division
    for (uint k = 0u; k < N_STRIDED; k++) off[k] = pc.offset[k] + i * pc.strides[k * MAX_RANK];
    return;
  }
  for (uint k = 0u; k < N_STRIDED; k++) off[k] = pc.offset[k];
  for (int d = int(pc.rank) - 1; d >= 0; d--) {
    const uint n = pc.shape[d];
    const uint idx = i % n;
    i /= n;
    for (uint k = 0u; k < N_STRIDED; k++) off[k] += idx * pc.strides[k * MAX_RANK + uint(d)];
  }
}

#if !OUT_STRIDED
uint out_offset(uint i) { return pc.offset[N_INPUTS] + i; }
#endif
