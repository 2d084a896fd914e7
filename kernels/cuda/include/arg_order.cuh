// The order of argmax / argmin (reduce.cu's arg ops, qmatvec.cu's ARGMAX; the twin of
// arg_order.glsl): NaN beats numbers, and among equal values (or NaNs) the smaller index wins,
// so partial results merge to the same answer in any order. The callers say which values can be
// NaN.
#pragma once

#include "include/common.cuh"

template <typename T>
WICK_DEV bool arg_replaces(bool v_nan, T v, uint32_t j, bool acc_nan, T acc, uint32_t idx,
                           bool greater) {
  if (acc_nan) return v_nan && j < idx;
  if (v_nan) return true;
  if (v == acc) return j < idx;
  return greater ? v > acc : v < acc;
}
