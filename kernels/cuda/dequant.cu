// W (n_out, k) in a block format (QTYPE, include/quant.cuh) decoded to f16, row-major and
// contiguous: the operand qmatmul hands to the float GEMM (cuBLASLt) for long x. A thread decodes 8
// elements with dequant8 (qmatmul's values in f32) and stores them rounded to f16 as the CPU
// casts, in one 16-byte store (k is a multiple of 8, so every run is aligned). Uses n_out, k and
// row_bytes of the qmatmul parameter block. Bindings: 0 the weight's blocks, 1 the f16 output.
// GATHER (QMatMul::rows): rows ids[0 .. m) of W in f32, (m, k) contiguous, as the CPU's
// dequantize_row gives them (dequant8 rounds every product and sum on its own). Bindings then:
// 1 the u32 ids (x_offset: the first, x_row: their stride), 2 the output, 3 the op's error
// record; an id >= n_out is reported and its row written as zeros.
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/quant.cuh"
#ifdef GATHER
#include "include/errors.cuh"
#endif

WICK_PARAMS_STRUCT(QMatmulParams, WICK_PARAMS_QMATMUL(WICK_CU_FIELD, WICK_CU_ARRAY))

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const QMatmulParams& pc = PARAMS(QMatmulParams, args);
  const uint8_t* w = buffer_at<const uint8_t>(args, 0);
  const uint32_t i = global_index(), runs = pc.k / 8u;
#ifdef GATHER
  if (i >= pc.m * runs) return;
  const uint32_t r = i / runs, e = 8u * (i % runs);
  const uint32_t id = buffer_at<const uint32_t>(args, 1)[pc.x_offset + r * pc.x_row];
  float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (id < pc.n_out)
    dequant8(w, id * pc.row_bytes + (e / QK) * BLOCK_BYTES, e % QK, v);
  else if (e == 0u)
    report_error(buffer_at<uint32_t>(args, 3), WICK_ERROR_INDEX_SELECT, id, pc.n_out);
  float4* rows4 = buffer_at<float4>(args, 2);
  rows4[2u * i] = make_float4(v[0], v[1], v[2], v[3]);
  rows4[2u * i + 1u] = make_float4(v[4], v[5], v[6], v[7]);
#else
  uint4* w16 = buffer_at<uint4>(args, 1);
  if (i >= pc.n_out * runs) return;
  const uint32_t col = i / runs, e = 8u * (i % runs);
  float v[8];
  dequant8(w, col * pc.row_bytes + (e / QK) * BLOCK_BYTES, e % QK, v);
  uint32_t h[8];
#pragma unroll
  for (uint32_t j = 0u; j < 8u; j++) h[j] = to_f16(v[j]);
  w16[i] = make_uint4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16),
                      h[6] | (h[7] << 16));
#endif
}
