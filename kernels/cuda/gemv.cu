// Matrix x vector for matmuls with m == 1 or n == 1: y[z, i] = sum_k A[z, i, k] * v[z, k], where
// "A" is the matrix operand (rows: a_row, along k: a_k) and v the vector (b_k). PER_GROUP 1: a
// block per output, for rows contiguous along k (coalesced reads); 0: a thread per output.
// Integer dtypes wrap. Bindings: 0 A, 1 v, 2 y. Specialization: WICK_SPEC_0 PER_GROUP.
#include "include/accumulate.cuh"
#include "include/batch.cuh"
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/warp.cuh"

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 0
#endif
constexpr uint32_t PER_GROUP = WICK_SPEC_0;

typedef STORAGE_T(DT) ST;
typedef COMPUTE_T(DT) CT;

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const BatchParams& pc = PARAMS(BatchParams, args);
  const uint32_t z = batch_index(pc);
  const BatchOffsets base = batch_offsets(pc, z);
  const ST* a = buffer_at<const ST>(args, 0) + base.a;
  const ST* v = buffer_at<const ST>(args, 1) + base.b;
  ST* y = buffer_at<ST>(args, 2) + uint64_t(z) * pc.rows;
  if (PER_GROUP == 0u) {
    const uint32_t i = global_index();
    if (i >= pc.rows) return;
    const ST* row = a + i * pc.a_row;
    CT acc = CT(0);
    for (uint32_t k = 0u; k < pc.depth; k++)
      acc = mul_add_wrap(acc, CT(LOAD(DT, row[k * pc.a_k])), CT(LOAD(DT, v[k * pc.b_k])));
    y[i] = PACK(DT, acc);
    return;
  }
  __shared__ CT s_sum[WICK_WARPS];
  const uint32_t i = group_index(), t = threadIdx.x;
  if (i >= pc.rows) return;  // uniform per block
  const ST* row = a + i * pc.a_row;
  CT acc = CT(0);
  for (uint32_t k = t; k < pc.depth; k += WG_SIZE)
    acc = mul_add_wrap(acc, CT(LOAD(DT, row[k * pc.a_k])), CT(LOAD(DT, v[k * pc.b_k])));
  acc = block_allreduce(acc, s_sum, AddWrapOp());
  if (t == 0u) y[i] = PACK(DT, acc);
}
