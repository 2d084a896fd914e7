#version 450
// W (n_out, k) in a block format (QTYPE, include/quant.glsl) decoded to f16, row-major and
// contiguous: the operand qmatmul hands to the float GEMM for long x (tensor cores). A thread
// decodes 8 elements with dequant8 (qmatmul's values in f32) and stores them rounded to f16 as the
// CPU casts, in one 16-byte store (k is a multiple of 8, so every run is aligned). Uses n_out, k
// and row_bytes of the qmatmul parameter block.
#include "include/common.glsl"
#include "include/dtype.glsl"
#define QUANT_BINDING 0
#include "include/quant.glsl"

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
