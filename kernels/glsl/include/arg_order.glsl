// The order of argmax / argmin (reduce.comp's arg ops, qmatvec.comp's ARGMAX; the twin of
// arg_order.cuh): NaN beats numbers, and among equal values (or NaNs) the smaller index wins,
// so partial results merge to the same answer in any order. Define ARG_T (the values' type)
// first; the callers say which values can be NaN.
bool arg_replaces(bool v_nan, ARG_T v, uint j, bool acc_nan, ARG_T acc, uint idx, bool greater) {
  if (acc_nan) return v_nan && j < idx;
  if (v_nan) return true;
  if (v == acc) return j < idx;
  return greater ? v > acc : v < acc;
}
