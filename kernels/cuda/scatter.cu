// scatter_add and index_add, in place on a contiguous dst: each dst element sums the src elements
// whose id along `dim` names it, in order, so no atomics are needed and the result does not
// depend on scheduling (f16/bf16 sum in float and round once, as on the CPU). base(i): the
// offsets of src and ids with the dim left out; j walks the dim (count long) with src_stride /
// ids_stride. inner and dst_dim give the dst element's coordinate along dim. Out-of-range ids are
// skipped and reported with the op's code (op_code) in the error record.
// Bindings: 0 src, 1 ids, 2 dst (read and written), 3 the error record.
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/errors.cuh"

#define N_INPUTS 2
#define OUT_STRIDED 0
#define PARAMS_EXTRA WICK_PARAMS_SCATTER_EXTRA
#include "include/strided.cuh"
#define ERROR_BINDING 3

typedef COMPUTE_T(DT) CT;
typedef WRAP_T(DT) WT;  // integer sums wrap

extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const Push& pc = PARAMS(Push, args);
  const uint32_t i = global_index();
  if (i >= pc.numel) return;
  uint32_t off[N_STRIDED];
  strided_offsets(pc, i, off);
  const STORAGE_T(DT)* x = buffer_at<const STORAGE_T(DT)>(args, 0);
  const STORAGE_T(ID_DT)* ids = buffer_at<const STORAGE_T(ID_DT)>(args, 1);
  STORAGE_T(DT)* y = buffer_at<STORAGE_T(DT)>(args, 2);
  uint32_t* err = buffer_at<uint32_t>(args, ERROR_BINDING);
  const uint32_t here = (i / pc.inner) % pc.dst_dim;
  WT acc = static_cast<WT>(LOAD(DT, y[out_offset(pc, i)]));
  for (uint32_t j = 0; j < pc.count; j++) {
    const COMPUTE_T(ID_DT) id = LOAD(ID_DT, ids[off[1] + j * pc.ids_stride]);
    if (!index_ok(id, pc.dst_dim)) {
      report_index(err, pc.op_code, id, pc.dst_dim);
    } else if (static_cast<uint32_t>(id) == here) {
      acc += static_cast<WT>(LOAD(DT, x[off[0] + j * pc.src_stride]));
    }
  }
  y[out_offset(pc, i)] = PACK(DT, static_cast<CT>(acc));
}
