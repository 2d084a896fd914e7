#version 450
// dst[view] = convert(src[view]): strided copies (copy, contiguous, slice_set), casts, and the
// gather of a view into a contiguous staging buffer for read-back. SRC_DT, DST_DT: dtypes.
#include "include/common.glsl"
#include "include/dtype.glsl"

#define N_INPUTS 1
#define OUT_STRIDED 1
#include "include/strided.glsl"

layout(set = 0, binding = 0) readonly buffer Src { STORAGE_T(SRC_DT) x[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { STORAGE_T(DST_DT) y[]; };

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint off[N_STRIDED];
  strided_offsets(i, off);
#if SAME_DT
  y[off[1]] = x[off[0]];  // bit-exact: NaN payloads and -0 survive
#else
  y[off[1]] = CONVERT(DST_DT, LOAD(SRC_DT, x[off[0]]));
#endif
}
