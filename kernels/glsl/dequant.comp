#version 450
// W (n_out, k) in a block format (QTYPE, include/quant.glsl) decoded to f16, row-major and
// contiguous: the operand qmatmul hands to the float GEMM for long x (tensor cores). A thread
// decodes 8 elements with dequant8 (qmatmul's values in f32) and stores them rounded to f16 as the
// CPU casts, in one 16-byte store (k is a multiple of 8, so every run is aligned). Uses n_out, k
// and row_bytes of the qmatmul parameter block.
// GATHER (QMatMul::rows): rows ids[0 .. m) of W in f32, (m, k) contiguous, each value as the CPU's
// dequantize_row gives it (DEQUANT_EXACT). Bindings then: 1 the u32 ids (x_offset: the first,
// x_row: their stride), 2 the output, 3 the op's error record; an id >= n_out is reported and its
// row written as zeros.
#include "include/common.glsl"
#include "include/dtype.glsl"
#ifdef GATHER
#define DEQUANT_EXACT 1
#endif
#define QUANT_BINDING 0
#include "include/quant.glsl"

#ifdef GATHER
layout(set = 0, binding = 1) readonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 2) writeonly buffer Rows { vec4 rows4[]; };
#define ERROR_BINDING 3
#include "include/errors.glsl"

void main() {
  const uint i = global_index(), runs = pc.k / 8u;
  if (i >= pc.m * runs) return;
  const uint r = i / runs, e = 8u * (i % runs);
  const uint id = ids[pc.x_offset + r * pc.x_row];
  float w[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  if (id < pc.n_out)
    dequant8(id * pc.row_bytes + (e / QK) * BLOCK_BYTES, e % QK, w);
  else if (e == 0u)
    report_error(WICK_ERROR_INDEX_SELECT, id, 0u, pc.n_out);
  rows4[2u * i] = vec4(w[0], w[1], w[2], w[3]);
  rows4[2u * i + 1u] = vec4(w[4], w[5], w[6], w[7]);
}
#else
layout(set = 0, binding = 1) writeonly buffer W16 { uvec4 w16[]; };

void main() {
  const uint i = global_index(), runs = pc.k / 8u;
  if (i >= pc.n_out * runs) return;
  const uint col = i / runs, e = 8u * (i % runs);
  float w[8];
  dequant8(col * pc.row_bytes + (e / QK) * BLOCK_BYTES, e % QK, w);
  uint h[8];
  for (uint j = 0u; j < 8u; j++) h[j] = to_f16(w[j]);
  w16[i] =
      uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}
#endif
