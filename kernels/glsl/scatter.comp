#version 450
// scatter_add (MODE 0) and index_add (MODE 1), in place on a contiguous dst: each dst element
// sums the src elements whose id along `dim` names it, so no float atomics are needed and the
// result does not depend on scheduling. base(i): the offsets of src and ids with the dim left
// out; j walks the dim (count long) with src_stride / ids_stride. inner and dst_dim give the dst
// element's coordinate along dim. Out-of-range ids are skipped and reported.
#include "include/common.glsl"
#include "include/dtype.glsl"

#define N_INPUTS 2
#define OUT_STRIDED 0
#define PUSH_EXTRA WICK_PARAMS_SCATTER_EXTRA(WICK_FIELD, WICK_ARRAY)
#include "include/strided.glsl"

layout(set = 0, binding = 0) readonly buffer Src { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 1) readonly buffer Ids { STORAGE_T(ID_DT) ids[]; };
layout(set = 0, binding = 2) buffer Dst { STORAGE_T(DT) y[]; };
#define ERROR_BINDING 3
#include "include/errors.glsl"

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint off[N_STRIDED];
  strided_offsets(i, off);
  const uint here = (i / pc.inner) % pc.dst_dim;
  COMPUTE_T(DT) acc = LOAD(DT, y[out_offset(i)]);
  for (uint j = 0u; j < pc.count; j++) {
    const COMPUTE_T(ID_DT) id = LOAD(ID_DT, ids[off[1] + j * pc.ids_stride]);
    if (!index_ok(id, pc.dst_dim)) {
      report_index(pc.op_code, id, pc.dst_dim);
    } else if (uint(id) == here) {
      acc += LOAD(DT, x[off[0] + j * pc.src_stride]);
    }
  }
  y[out_offset(i)] = PACK(DT, acc);
}
