// Weights of the common 32-element formats repacked for the AVX-512 kernels (built once by
// QMatMul on AVX-512 CPUs). A packed row has exactly as many bytes as ggml's, so the same memory
// traffic; only the order changes.
//
// ggml interleaves each block's scale (and min) with its codes; unpacking them costs more
// instructions per block than the dot product itself. A packed row instead holds
//   codes | d[nb] (f16) | m[nb] (f16, q4_1 only)
// q8_0: 32 code bytes per block, in order. q4_0 / q4_1: 16 nibble bytes per block, regrouped so
// that a plain low/high split yields codes in element order: groups of 4 blocks (64 bytes: byte i
// holds code i of the group in its low nibble and code 64 + i in its high nibble), then, at the row
// end, a pair (32 bytes, codes i and 32 + i) and a single block (ggml's order: i and 16 + i).
#pragma once

#include <cstdint>
#include <vector>

#include "quantized/kernels.h"
#include "wick/quant_type.h"

namespace wick::quantized {

// True for the types pack_rows takes.
bool packable(QuantType t);

// Repacks n_rows rows of ggml blocks of type t (k elements each) into the layout above.
std::vector<uint8_t> pack_rows(QuantType t, const uint8_t* src, int64_t n_rows, int64_t k);

// The AVX-512 kernel over packed rows of t (nullptr where not compiled or not packable).
DotRowsFn packed_kernel_avx512(QuantType t);

}  // namespace wick::quantized
