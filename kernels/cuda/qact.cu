// Quantizes x (m, k) to 8 bits per block as the CPU's QMatMul does before its integer dot
// products (include/qact.cuh), so that qmatvec.cu and qmatmul.cu (ACT_Q8) compute the CPU's math.
// PROLOGUE says what x is first, in DT as the ops it stands for would have stored it (so the
// 8-bit rows are those of the unfused ops, bit for bit; include/qact_value.cuh, which qmatvec.cu's
// ACT_INLINE shares):
//   0  x itself: a warp per block.
//   1  x.rms_norm(alpha, eps), as norm.cu computes it (include/norm_row.cuh): blocks of WG_SIZE
//      (norm.cu's) per row each reduce it, then quantize WICK_WARPS of its blocks, a warp each
//      (one block per row took three rounds of its warps at k = 576: a decode step's slowest
//      small kernel).
//   2  silu(x) * up (x: the gate), as unary.cu's silu and binary.cu's mul compute it, each
//      rounded to DT: a warp per block.
// Bindings: 0 x, then (PROLOGUE 1, 2) 1 alpha or up, then xq.
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/qact.cuh"
#include "include/qact_value.cuh"

#ifndef PROLOGUE
#define PROLOGUE 0
#endif
#if PROLOGUE < 0 || PROLOGUE > 2
#error "qact.cu: PROLOGUE is 0, 1 or 2"
#endif

#if PROLOGUE == 0
WICK_PARAMS_STRUCT(QActParams, WICK_PARAMS_QACT(WICK_CU_FIELD, WICK_CU_ARRAY))
#else
WICK_PARAMS_STRUCT(QActParams, WICK_PARAMS_QACT_PROLOGUE(WICK_CU_FIELD, WICK_CU_ARRAY))
#endif

typedef STORAGE_T(DT) ST;
typedef COMPUTE_T(DT) CT;

// The rms_norm prologue's alpha (a weight, constant while the previous kernel runs: common.cuh).
WICK_DEV void prefetch_weights(const wick::KernelArgs& args) {
#if PROLOGUE == 1
  const QActParams& pc = PARAMS(QActParams, args);
  if (pc.p_k == 1u)
    prefetch_l2(buffer_at<const ST>(args, 1) + pc.p_offset, uint64_t(pc.k) * sizeof(ST));
#else
  (void)args;
#endif
}

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  prefetch_weights(args);
  wick_kernel_begin();
  const QActParams& pc = PARAMS(QActParams, args);
  const ST* x = buffer_at<const ST>(args, 0);
  const uint32_t blocks_per_row = pc.k / ACT_BLOCK;
  const bool ties_away = pc.ties_away != 0u;
#if PROLOGUE == 0
  uint32_t* xq = buffer_at<uint32_t>(args, 1);
  const uint32_t id = global_index() / 32u, lane = threadIdx.x % 32u;
  if (id >= pc.m * blocks_per_row) return;  // uniform per warp
  const uint32_t row = id / blocks_per_row;
  const ActX value{{x + pc.x_offset + row * pc.x_row, pc.x_k}};
  quantize_act_block(value, xq, row, id % blocks_per_row, pc.k, pc.row_words, ties_away, lane);
#elif PROLOGUE == 1
  const ST* alpha = buffer_at<const ST>(args, 1);
  uint32_t* xq = buffer_at<uint32_t>(args, 2);
  __shared__ CT s_red[WICK_WARPS];
  // Blocks of a row: each reduces the whole row, then quantizes WICK_WARPS of its blocks.
  const uint32_t parts = (blocks_per_row + WICK_WARPS - 1u) / WICK_WARPS;
  const uint32_t row = group_index() / parts,
                 b = group_index() % parts * WICK_WARPS + threadIdx.x / 32u;
  if (row >= pc.m) return;  // uniform per block
  const ActAt at{x + pc.x_offset + row * pc.x_row, pc.x_k};
  const CT inv = row_inv_rms(at, pc.k, CT(0), CT(pc.eps), s_red);
  const ActRms value{at, alpha + pc.p_offset, pc.p_k, inv};
  if (b < blocks_per_row)  // uniform per warp
    quantize_act_block(value, xq, row, b, pc.k, pc.row_words, ties_away, threadIdx.x % 32u);
#else
  const ST* up = buffer_at<const ST>(args, 1);
  uint32_t* xq = buffer_at<uint32_t>(args, 2);
  const uint32_t id = global_index() / 32u, lane = threadIdx.x % 32u;
  if (id >= pc.m * blocks_per_row) return;  // uniform per warp
  const uint32_t row = id / blocks_per_row;
  const ActSwiglu value{{x + pc.x_offset + row * pc.x_row, pc.x_k},
                        {up + pc.p_offset + row * pc.p_row, pc.p_k}};
  quantize_act_block(value, xq, row, id % blocks_per_row, pc.k, pc.row_words, ties_away, lane);
#endif
}
