// Weights of the common 32-element formats repacked for the AVX-512 kernels (built once by
// QMatMul on AVX-512 CPUs). A packed row has exactly as many bytes as ggml's, so the same memory
// traffic; only the order changes.
//
// ggml interleaves each block's scale (and min) with its codes, and a block's 32 codes make 8
// partial sums in a vpdpbusd result that must be reduced or scaled one block at a time. A packed
// row instead holds
//   codes | d[nb] (f16) | m[nb] (f16, q4_1 only)
// and its codes come in chunks of 16 blocks laid out in 8 "slices": slice s holds bytes 4s..4s+3
// of each of the 16 blocks (64 bytes), so vpdpbusd over the 8 slices leaves lane b holding the
// whole dot product of block b, and one multiply by 16 scales finishes the chunk. Activations get
// the same slice order (interleave_activations). q8_0 codes are stored as q + 128 (vpdpbusd takes
// unsigned bytes); q4 slices s and s + 4 share bytes (low and high nibble).
// The last nb % 16 blocks keep element order: q8_0 as is; q4 in runs of 4 blocks (64 bytes: byte
// i holds code i of the run in its low nibble and code 64 + i in its high one), then a pair (codes
// i and 32 + i) and a single block (ggml's order: i and 16 + i).
#pragma once

#include <cstdint>
#include <vector>

#include "quantized/kernels.h"
#include "wick/quant_type.h"

namespace wick::quantized {

constexpr int64_t kChunkBlocks = 16;

// True for the types pack_rows takes.
bool packable(QuantType t);

// Repacks n_rows rows of ggml blocks of type t (k elements each) into the layout above.
std::vector<uint8_t> pack_rows(QuantType t, const uint8_t* src, int64_t n_rows, int64_t k);

// Activation codes (k, element order) -> the slice order of full chunks (the tail is copied).
void interleave_activations(const int8_t* qs, int64_t k, int8_t* out);

// out[i * ldo + r] = dot(packed weight row r, xs[i]) for r < n_rows, i < n_x; xs in slice order.
// Up to kMaxPackedX x rows share each load of the weight codes.
constexpr int kMaxPackedX = 4;
using PackedRowsFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                              const ActRow* xs, int n_x, size_t ldo, float* out);

// The AVX-512 kernel over packed rows of t (nullptr where not compiled or not packable).
PackedRowsFn packed_kernel_avx512(QuantType t);

}  // namespace wick::quantized
