// The values the 8-bit quantizer of x (include/qact.cuh) takes: element e of an x row after the
// prologue, in DT as the ops it stands for would have stored it. Shared by qact.cu and qmatvec.cu
// (ACT_INLINE), so that both quantize the same bits:
//   ActX       x itself
//   ActRms     x.rms_norm(alpha, eps), as norm.cu computes it (include/norm_row.cuh); inv: the
//              row's 1 / rms from row_inv_rms (norm.cu's block) or row_inv_rms_as
//   ActSwiglu  silu(gate) * up, as unary.cu's silu and binary.cu's mul compute it, each rounded
//              to DT
#pragma once

#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/math.cuh"
#include "include/norm_row.cuh"

typedef STORAGE_T(DT) ActST;
typedef COMPUTE_T(DT) ActCT;

// Element j of a row (xr: its first element, x_k: its stride) in the compute type.
struct ActAt {
  const ActST* xr;
  uint32_t x_k;
  WICK_DEV ActCT operator()(uint32_t j) const { return ActCT(LOAD(DT, xr[j * x_k])); }
};

struct ActX {
  ActAt at;
  WICK_DEV float operator()(uint32_t e) const { return float(at(e)); }
};

// The prologues' values from their operands (x, alpha's a, 1 / rms; gate, up).
WICK_DEV float act_rms_value(ActCT x, ActCT a, ActCT inv) {
  return float(LOAD(DT, PACK(DT, row_normalized(x, ActCT(0), inv, a))));
}
WICK_DEV float act_swiglu_value(ActCT gate, ActCT up) {
  const ActCT silu = ActCT(LOAD(DT, PACK(DT, silu_c(gate))));
  return float(LOAD(DT, PACK(DT, silu * up)));  // binary.cu's MUL
}

struct ActRms {
  ActAt at;
  const ActST* alpha;  // alpha's element 0
  uint32_t a_k;
  ActCT inv;
  WICK_DEV float operator()(uint32_t e) const {
    return act_rms_value(at(e), ActCT(LOAD(DT, alpha[e * a_k])), inv);
  }
};

struct ActSwiglu {
  ActAt gate, up;
  WICK_DEV float operator()(uint32_t e) const { return act_swiglu_value(gate(e), up(e)); }
};

// A value already computed (the caller's lane's element).
struct ActGiven {
  float v;
  WICK_DEV float operator()(uint32_t) const { return v; }
};
