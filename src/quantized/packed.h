// Weights of the common 32-element formats repacked for the SIMD kernels, built once by QMatMul.
// A packed row has exactly as many bytes as ggml's (row tiles pad the last tile to 16 rows), so
// the same memory traffic; only the order changes. Two layouts:
//
// Row tiles (AVX-512: q4_0, q4_1, q8_0). Rows go in tiles of 16; a tile holds, block by block,
//   codes (q4: 256 bytes, q8_0: 512) | d[16] (f16) | m[16] (f16, q4_1 only)
// where the codes are in VNNI order: 64-byte register s holds bytes 4s..4s+3 of each of the 16
// rows' block (row j at bytes 4j..4j+3), so vpdpbusd with 4 x bytes broadcast leaves lane j
// holding row j's partial dot. q4 registers s and s + 4 share bytes (low and high nibble); q8_0
// codes are stored as q + 128 (vpdpbusd takes unsigned bytes). A row's output is a lane: no
// reduction across lanes, and x rows are read in element order.
//
// Slices (AVX2: q4_0, q4_1, q5_0, q5_1, q8_0). ggml interleaves each block's scale (and min)
// with its codes, and a block's 32 codes make 8 partial sums in a vpdpbusd result that must be
// reduced or scaled one block at a time. A sliced row instead holds
//   codes | fifth bits (q5 only, 4 bytes a block) | d[nb] (f16) | m[nb] (f16, q4_1 / q5_1 only)
// and its codes come in chunks of 16 blocks laid out in 8 "slices": slice s holds bytes 4s..4s+3
// of each of the 16 blocks (64 bytes), so vpdpbusd over the 8 slices leaves lane b holding the
// whole dot product of block b, and one multiply by 16 scales finishes the chunk. Activations get
// the same slice order (pack_activations). q8_0 codes are stored as q + 128 (vpdpbusd takes
// unsigned bytes); q4 slices s and s + 4 share bytes (low and high nibble).
// The last nb % 16 blocks keep element order: q8_0 as is; q4 in runs of 4 blocks (64 bytes: byte
// i holds code i of the run in its low nibble and code 64 + i in its high one), then a pair (codes
// i and 32 + i) and a single block (ggml's order: i and 16 + i).
// q5 codes are q4's nibbles plus a fifth bit each. A full chunk's 64 bytes of fifth bits are 16
// words, word 8h + 2s + n (half h, slice s, n = 0: the slice's low nibbles, 1: its high ones)
// holding in bit 4b + t the fifth bit of the code in nibble n of byte 4b + t of that half slice;
// a tail block's word is its ggml qh (bit e: element e).
#pragma once

#include <cstdint>
#include <vector>

#include "quantized/kernels.h"
#include "wick/quant_type.h"

namespace wick {
class QMatMul;
}

namespace wick::quantized {

constexpr int64_t kChunkBlocks = 16;
// Rows of a row tile.
constexpr int64_t kRowTile = 16;

// Bytes of repacked weights a QMatMul holds (0 when it multiplies ggml's blocks directly).
size_t packed_weight_bytes(const QMatMul& mm);

// Per block a packed kernel computes d_w * d_x * sum(code * q_x) + c * s_x, with
// s_x = d_x * sum(q_x) and c = m (q4_1, q5_1) or kOffset * d_w: codes are q + 8 (q4_0), q + 16
// (q5_0) and q + 128 (q8_0). kBitBytes: the bytes of fifth bits a block has.
struct PackedQ4_0 {
  static constexpr int kCodeBytes = 16, kBitBytes = 0, kOffset = -8;
  static constexpr bool kHasMin = false;
};
struct PackedQ4_1 {
  static constexpr int kCodeBytes = 16, kBitBytes = 0, kOffset = 0;
  static constexpr bool kHasMin = true;
};
struct PackedQ5_0 {
  static constexpr int kCodeBytes = 16, kBitBytes = 4, kOffset = -16;
  static constexpr bool kHasMin = false;
};
struct PackedQ5_1 {
  static constexpr int kCodeBytes = 16, kBitBytes = 4, kOffset = 0;
  static constexpr bool kHasMin = true;
};
struct PackedQ8_0 {
  static constexpr int kCodeBytes = 32, kBitBytes = 0, kOffset = -128;
  static constexpr bool kHasMin = false;
};

// True for the types pack_rows takes.
bool packable(QuantType t);
// True for the types pack_row_tiles takes (q4_0, q4_1, q8_0).
bool tileable(QuantType t);

// Repacks n_rows rows of ggml blocks of type t (k elements each) into slices.
std::vector<uint8_t> pack_rows(QuantType t, const uint8_t* src, int64_t n_rows, int64_t k);
// Repacks them into row tiles (ceil(n_rows / 16) tiles; the last one's missing rows are zeros).
std::vector<uint8_t> pack_row_tiles(QuantType t, const uint8_t* src, int64_t n_rows, int64_t k);

// One activation row as the packed kernels read it: codes in the slice order of full chunks
// (the tail is copied as is), and the (d, s) pairs split into d[nb] then s[nb].
void pack_activations(const int8_t* qs, const float* ds, int64_t k, int8_t* qs_out, float* ds_out);

// out[i * ldo + r] = dot(packed weight row r, xs[i]) for r < n_rows, i < n_x; xs in slice order.
// Up to kMaxPackedX x rows share each load of the weight codes.
constexpr int kMaxPackedX = 4;
using PackedRowsFn = DotRowsMultiFn;

// Kernels over sliced rows of t (nullptr where not compiled or not packable).
PackedRowsFn packed_kernel_avx2(QuantType t);
// The sliced-row kernel for `level` (AVX2 and up); nullptr at the scalar level.
PackedRowsFn packed_kernel(QuantType t, SimdLevel level);

// out[i * ldo + r] = dot(row r, xs[i]) for r < n_rows, i < n_x <= kMaxTiledX; w is the first
// row's tile, xs in element order (as quantize_act writes them). Each output's float ops do not
// depend on n_x: an x row's results are bit for bit those of the row alone.
constexpr int kMaxTiledX = 8;
using TiledRowsFn = void (*)(const uint8_t* w, int64_t n_rows, int64_t k, const ActRow* xs, int n_x,
                             size_t ldo, float* out);
// Kernels over row tiles of t (nullptr where not compiled or not tileable).
TiledRowsFn tiled_kernel_avx512(QuantType t);
// The row-tile kernel for `level` (AVX-512 and up), else nullptr.
TiledRowsFn tiled_kernel(QuantType t, SimdLevel level);

}  // namespace wick::quantized
