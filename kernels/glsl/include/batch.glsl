// Batched matrix kernels: batch dims (collapsed to at most BATCH_RANK) with their own strides per
// operand, so broadcast (stride 0) and narrowed batch dims are read in place — never the seed's
// "one stride for every batch" shortcut. The batch index is batch_base + gl_WorkGroupID.z.
#define BATCH_RANK 3

layout(push_constant) uniform Push {
  uint rows;  // m (matmul) or the output length (gemv)
  uint cols;  // n (matmul); unused by gemv
  uint depth;  // k
  uint batch_rank;
  uint batch_base;
  uint batch_shape[BATCH_RANK];
  uint a_batch[BATCH_RANK];
  uint b_batch[BATCH_RANK];
  uint a_offset;
  uint a_row;  // stride between rows of A (m), or of the matrix operand (gemv)
  uint a_k;    // stride along k
  uint b_offset;
  uint b_k;    // stride along k
  uint b_col;  // stride between columns of B (n); unused by gemv
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
