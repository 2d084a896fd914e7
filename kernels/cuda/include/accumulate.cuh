// Sums and products in the compute type of the kernel's DT, integers wrapping like the CPU's
// (modulo 2^bits, computed in dtype.cuh's WRAP_T: signed overflow is undefined in C++).
#pragma once

#include "include/dtype.cuh"

WICK_DEV COMPUTE_T(DT) add_wrap(COMPUTE_T(DT) a, COMPUTE_T(DT) b) {
  return COMPUTE_T(DT)(WRAP_T(DT)(a) + WRAP_T(DT)(b));
}

// acc + a * b.
WICK_DEV COMPUTE_T(DT) mul_add_wrap(COMPUTE_T(DT) acc, COMPUTE_T(DT) a, COMPUTE_T(DT) b) {
  return COMPUTE_T(DT)(WRAP_T(DT)(acc) + WRAP_T(DT)(a) * WRAP_T(DT)(b));
}

// add_wrap as a reduction operator (include/warp.cuh).
struct AddWrapOp {
  WICK_DEV COMPUTE_T(DT) operator()(COMPUTE_T(DT) a, COMPUTE_T(DT) b) const {
    return add_wrap(a, b);
  }
};
