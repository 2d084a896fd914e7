#version 450
// Row ops over the last dim, a workgroup per row: softmax (OP 0), log_softmax (1), rms_norm (2),
// layer_norm (3). alpha/beta: 1-D views (offset, stride) of the last dim's length.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/math.glsl"
#if DT_KIND == 1
#include "include/math64.glsl"
#define EXP exp64
#define LOG log64
#define NEG_INF (-inf64())
#else
#define EXP exp_accurate
#define LOG log
#define NEG_INF (-inf_f32())
#endif

#define PUSH_EXTRA WICK_PARAMS_NORM_EXTRA(WICK_FIELD, WICK_ARRAY)
#include "include/rows.glsl"

layout(constant_id = 0) const uint OP = 0u;
#define SOFTMAX 0u
#define LOG_SOFTMAX 1u
#define RMS_NORM 2u
#define LAYER_NORM 3u

layout(set = 0, binding = 0) readonly buffer In { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 1) readonly buffer Alpha { STORAGE_T(DT) alpha[]; };
layout(set = 0, binding = 2) readonly buffer Beta { STORAGE_T(DT) beta[]; };
layout(set = 0, binding = 3) writeonly buffer Out { STORAGE_T(DT) y[]; };

#define CT COMPUTE_T(DT)
CT at(uint base, uint j) { return LOAD(DT, x[base + j * pc.inner_strides[0]]); }
#include "include/norm_row.glsl"

void main() {
  const uint o = group_index();
  if (o >= pc.n_outer) return;  // uniform per workgroup
  const uint t = gl_LocalInvocationID.x, n = pc.n_inner;
  const uint base = outer_offset(o), dst = pc.out_offset + o * n;
  if (OP == SOFTMAX || OP == LOG_SOFTMAX) {
    CT m = NEG_INF;
    for (uint j = t; j < n; j += WG_SIZE) m = max(m, at(base, j));
    m = group_reduce(m, true);
    CT sum = CT(0);
    for (uint j = t; j < n; j += WG_SIZE) sum += EXP(at(base, j) - m);
    sum = group_reduce(sum, false);
    const CT log_sum = LOG(sum);
    for (uint j = t; j < n; j += WG_SIZE) {
      const CT v = at(base, j) - m;
      y[dst + j] = PACK(DT, OP == SOFTMAX ? EXP(v) / sum : v - log_sum);
    }
    return;
  }
  CT mean = CT(0);
  if (OP == LAYER_NORM) {
    CT s = CT(0);
    for (uint j = t; j < n; j += WG_SIZE) s += at(base, j);
    mean = group_reduce(s, false) / CT(n);
  }
  const CT inv = row_inv_rms(base, n, mean, CT(pc.eps));
  for (uint j = t; j < n; j += WG_SIZE) {
    CT v = row_normalized(at(base, j), mean, inv, LOAD(DT, alpha[pc.a_offset + j * pc.a_stride]));
    if (OP == LAYER_NORM) v += LOAD(DT, beta[pc.b_offset + j * pc.b_stride]);
    y[dst + j] = PACK(DT, v);
  }
}
