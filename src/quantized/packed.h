// Q4_1 weights repacked for SIMD (built once by QMatMul on AVX-512 CPUs; same bytes per row as
// ggml's layout, so the same memory traffic).
//
// ggml interleaves each block's scale, min and nibbles (20 bytes); unpacking them costs more
// instructions per block than the dot product itself. A packed row instead holds
//   nibbles (16 bytes per block) | d[nb] (f16) | m[nb] (f16)
// and the nibbles of consecutive blocks are regrouped so that a plain low/high split yields codes
// in element order: blocks go in groups of 4 (64 bytes: byte i holds code i of the group in its
// low nibble and code 64 + i in its high nibble), then, at the row end, a pair (32 bytes, codes i
// and 32 + i) and a single block (16 bytes, ggml's own order: codes i and 16 + i).
#pragma once

#include <cstdint>
#include <vector>

#include "quantized/kernels.h"

namespace wick::quantized {

// Repacks n_rows rows of ggml Q4_1 blocks (k elements each) into the layout above.
std::vector<uint8_t> pack_q4_1(const uint8_t* src, int64_t n_rows, int64_t k);

// The kernel over packed rows (AVX-512 VNNI; nullptr where not compiled).
DotRowsFn packed_q4_1_kernel_avx512();

}  // namespace wick::quantized
