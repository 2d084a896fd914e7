#version 450
// index_select (MODE 0) and gather (MODE 1): y[i] = src[base(i) + id(i) * src_stride], where the
// host made base(i) the element's offset with the indexed dim left out, and ids a view over the
// output shape (for index_select: the 1-D ids broadcast along every other dim). DT: values;
// ID_DT: u8, u32 or i64. Out-of-range ids give 0 and are reported (include/errors.glsl).
#include "include/common.glsl"
#include "include/dtype.glsl"

#define N_INPUTS 2
#define OUT_STRIDED 0
#define PUSH_EXTRA WICK_PARAMS_INDEX_EXTRA(WICK_FIELD, WICK_ARRAY)
#include "include/strided.glsl"

layout(set = 0, binding = 0) readonly buffer Src { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 1) readonly buffer Ids { STORAGE_T(ID_DT) ids[]; };
layout(set = 0, binding = 2) writeonly buffer Out { STORAGE_T(DT) y[]; };
#define ERROR_BINDING 3
#include "include/errors.glsl"

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint off[N_STRIDED];
  strided_offsets(i, off);
  const COMPUTE_T(ID_DT) id = LOAD(ID_DT, ids[off[1]]);
  if (index_ok(id, pc.dim_size)) {
    y[out_offset(i)] = x[off[0] + uint(id) * pc.src_stride];
  } else {
    report_index(pc.op_code, id, pc.dim_size);
    y[out_offset(i)] = PACK(DT, COMPUTE_T(DT)(0));
  }
}
