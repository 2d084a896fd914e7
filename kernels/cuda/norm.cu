// Row ops over the last dim, a block per row: softmax (OP 0), log_softmax (1), rms_norm (2),
// layer_norm (3). alpha/beta: 1-D views (offset, stride) of the last dim's length. exp is CUDA's
// (within 2 ulp over the whole range: softmax meets the CPU at ulp level).
// Bindings: 0 x, 1 alpha, 2 beta, 3 y (contiguous rows). Specialization: WICK_SPEC_0 OP.
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/math.cuh"
#include "include/norm_row.cuh"
#include "include/rows.cuh"

#if DT_KIND != 0 && DT_KIND != 1
#error "norm.cu: DT is a float dtype"
#endif

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 0
#endif
constexpr uint32_t OP = WICK_SPEC_0;
constexpr uint32_t SOFTMAX = 0u, LOG_SOFTMAX = 1u, LAYER_NORM = 3u;

WICK_PARAMS_STRUCT(NormParams, WICK_PARAMS_ROWS(WICK_CU_FIELD, WICK_CU_ARRAY)
                                   WICK_PARAMS_NORM_EXTRA(WICK_CU_FIELD, WICK_CU_ARRAY))

typedef STORAGE_T(DT) ST;
typedef COMPUTE_T(DT) CT;

// log of the row's sum through double (once per row: cheap, and the CPU takes the log of a
// double sum too).
WICK_DEV float log_of_sum(float s) {
  return float(log(double(s)));
}
WICK_DEV double log_of_sum(double s) {
  return log(s);
}

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const NormParams& pc = PARAMS(NormParams, args);
  const ST* x = buffer_at<const ST>(args, 0);
  const ST* alpha = buffer_at<const ST>(args, 1);
  const ST* beta = buffer_at<const ST>(args, 2);
  ST* y = buffer_at<ST>(args, 3);
  __shared__ CT s_red[WICK_WARPS];

  const uint32_t o = group_index();
  if (o >= pc.n_outer) return;  // uniform per block
  const uint32_t t = threadIdx.x, n = pc.n_inner, stride = pc.inner_strides[0];
  const uint32_t base = outer_offset(pc, o), dst = pc.out_offset + o * n;
  auto at = [&](uint32_t j) { return CT(LOAD(DT, x[base + j * stride])); };
  if (OP == SOFTMAX || OP == LOG_SOFTMAX) {
    CT m = -FloatBits<CT>::inf();
    for (uint32_t j = t; j < n; j += WG_SIZE) m = fmax(m, at(j));
    m = block_allreduce(m, s_red, MaxOp());
    CT sum = CT(0);
    for (uint32_t j = t; j < n; j += WG_SIZE) sum += exp(at(j) - m);
    sum = block_allreduce(sum, s_red, SumOp());
    const CT log_sum = log_of_sum(sum);
    for (uint32_t j = t; j < n; j += WG_SIZE) {
      const CT v = at(j) - m;
      y[dst + j] = PACK(DT, OP == SOFTMAX ? exp(v) / sum : v - log_sum);
    }
    return;
  }
  CT mean = CT(0);
  if (OP == LAYER_NORM) {
    CT s = CT(0);
    for (uint32_t j = t; j < n; j += WG_SIZE) s += at(j);
    mean = block_allreduce(s, s_red, SumOp()) / CT(n);
  }
  const CT inv = row_inv_rms(at, n, mean, CT(pc.eps), s_red);
  for (uint32_t j = t; j < n; j += WG_SIZE) {
    CT v = row_normalized(at(j), mean, inv, CT(LOAD(DT, alpha[pc.a_offset + j * pc.a_stride])));
    if (OP == LAYER_NORM) v += CT(LOAD(DT, beta[pc.b_offset + j * pc.b_stride]));
    y[dst + j] = PACK(DT, v);
  }
}
