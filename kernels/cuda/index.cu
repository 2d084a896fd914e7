// index_select and gather: y[i] = src[base(i) + id(i) * src_stride], where the host made base(i)
// the element's offset with the indexed dim left out, and ids a view over the output shape (for
// index_select: the 1-D ids broadcast along every other dim). DT: values; ID_DT: u8, u32 or i64.
// Out-of-range ids give 0 and are reported with the op's code (op_code) in the error record.
// Bindings: 0 src, 1 ids, 2 y (contiguous), 3 the error record.
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/errors.cuh"

#define N_INPUTS 2
#define OUT_STRIDED 0
#define PARAMS_EXTRA WICK_PARAMS_INDEX_EXTRA
#include "include/strided.cuh"
#define ERROR_BINDING 3

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
  const COMPUTE_T(ID_DT) id = LOAD(ID_DT, ids[off[1]]);
  if (index_ok(id, pc.dim_size)) {
    y[out_offset(pc, i)] = x[off[0] + static_cast<uint32_t>(id) * pc.src_stride];
  } else {
    report_index(buffer_at<uint32_t>(args, ERROR_BINDING), pc.op_code, id, pc.dim_size);
    y[out_offset(pc, i)] = PACK(DT, COMPUTE_T(DT)(0));
  }
}
