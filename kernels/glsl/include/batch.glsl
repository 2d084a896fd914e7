// Batched matrix kernels: batch dims (collapsed to at most BATCH_RANK) with their own strides per
// operand, so broadcast (stride 0) and narrowed batch dims are read in place — never the seed's
// "one stride for every batch" shortcut. The batch index is batch_base + gl_WorkGroupID.z.
#include "include/params.glsl"
#define BATCH_RANK WICK_BATCH_RANK

// WICK_PARAMS_BATCH (kernels/shared/params.h): rows is m (matmul) or the output length (gemv);
// a_row the stride between rows of A (or of gemv's matrix operand); b_col between columns of B.
layout(push_constant) uniform Push {
  WICK_PARAMS_BATCH(WICK_FIELD, WICK_ARRAY)
} pc;

// Offsets of batch `z` in A and B.
uvec2 batch_offsets(uint z) {
  uvec2 off = uvec2(pc.a_offset, pc.b_offset);
  for (int d = int(pc.batch_rank) - 1; d >= 0; d--) {
    const uint idx = z % pc.batch_shape[d];
    z /= pc.batch_shape[d];
    off += idx * uvec2(pc.a_batch[d], pc.b_batch[d]);
  }
  return off;
}
