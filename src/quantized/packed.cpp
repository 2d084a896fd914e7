// Repacking of q4_0 / q4_1 / q5_0 / q5_1 / q8_0 rows (and of activation codes) into the layouts
// of packed.h.
#include "quantized/packed.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/parallel.h"
#include "quantized/blocks.h"
#include "wick/error.h"

namespace wick::quantized {

namespace {

constexpr int64_t kSlices = 8;  // 4-byte slices of a 32-byte block

// Byte 4b + t of slice s of a chunk is byte 4s + t of block b.
inline int64_t slice_source(int64_t s, int64_t i) {
  return (i / 4) * kQK + 4 * s + i % 4;
}

// Codes (values 0..15) of nb blocks -> packed nibbles.
void pack_nibbles(const uint8_t* codes, int64_t nb, uint8_t* dst) {
  int64_t b = 0;
  for (; b + kChunkBlocks <= nb; b += kChunkBlocks) {
    const uint8_t* c = codes + b * kQK;
    uint8_t* out = dst + 16 * b;
    for (int64_t s = 0; s < kSlices / 2; s++)
      for (int64_t i = 0; i < 64; i++)
        out[64 * s + i] =
            static_cast<uint8_t>(c[slice_source(s, i)] | (c[slice_source(s + 4, i)] << 4));
  }
  // Tail in runs of 4, then 2, then 1 block: byte i of a run of n blocks pairs codes i and i + 16n.
  auto emit = [&](int64_t run) {
    const uint8_t* c = codes + b * kQK;
    const int64_t half = 16 * run;
    for (int64_t i = 0; i < half; i++)
      dst[16 * b + i] = static_cast<uint8_t>(c[i] | (c[i + half] << 4));
    b += run;
  };
  while (nb - b >= 4) emit(4);
  if (nb - b >= 2) emit(2);
  if (nb - b >= 1) emit(1);
}

// The fifth bits of q5 blocks (element e of block b: bit e of qh[b]) in packed.h's order.
void pack_fifth_bits(const uint32_t* qh, int64_t nb, uint8_t* dst) {
  int64_t b = 0;
  for (; b + kChunkBlocks <= nb; b += kChunkBlocks) {
    uint32_t words[16] = {};
    for (int64_t h = 0; h < 2; h++)
      for (int64_t s = 0; s < kSlices / 2; s++)
        for (int64_t n = 0; n < 2; n++)
          for (int64_t i = 0; i < 32; i++) {  // byte i of the half slice: block 8h + i / 4
            const int64_t e = 16 * n + 4 * s + i % 4;
            words[8 * h + 2 * s + n] |= ((qh[b + 8 * h + i / 4] >> e) & 1u) << i;
          }
    std::memcpy(dst + 4 * b, words, sizeof(words));
  }
  std::memcpy(dst + 4 * b, qh + b, static_cast<size_t>(4 * (nb - b)));
}

template <typename Block>
void pack_nibble_row(const Block* blocks, int64_t nb, uint8_t* dst, uint8_t* codes) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>;
  constexpr bool kMin = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>;
  const int64_t d_at = (kQ5 ? 20 : 16) * nb;
  std::vector<uint32_t> qh(kQ5 ? static_cast<size_t>(nb) : 0);
  for (int64_t b = 0; b < nb; b++) {
    for (int j = 0; j < 16; j++) {
      codes[b * kQK + j] = blocks[b].qs[j] & 0xF;
      codes[b * kQK + j + 16] = blocks[b].qs[j] >> 4;
    }
    std::memcpy(dst + d_at + 2 * b, &blocks[b].d, 2);
    if constexpr (kMin) std::memcpy(dst + d_at + 2 * nb + 2 * b, &blocks[b].m, 2);
    if constexpr (kQ5) std::memcpy(&qh[static_cast<size_t>(b)], blocks[b].qh, 4);
  }
  pack_nibbles(codes, nb, dst);
  if constexpr (kQ5) pack_fifth_bits(qh.data(), nb, dst + 16 * nb);
}

void pack_q8_0_row(const BlockQ8_0* blocks, int64_t nb, uint8_t* dst, uint8_t* codes) {
  for (int64_t b = 0; b < nb; b++) {
    for (int j = 0; j < kQK; j++) codes[b * kQK + j] = static_cast<uint8_t>(blocks[b].qs[j] + 128);
    std::memcpy(dst + kQK * nb + 2 * b, &blocks[b].d, 2);
  }
  int64_t b = 0;
  for (; b + kChunkBlocks <= nb; b += kChunkBlocks)
    for (int64_t s = 0; s < kSlices; s++)
      for (int64_t i = 0; i < 64; i++)
        dst[kQK * b + 64 * s + i] = codes[b * kQK + slice_source(s, i)];
  std::memcpy(dst + kQK * b, codes + kQK * b, static_cast<size_t>(kQK * (nb - b)));
}

// Block b of rows (nb blocks each) -> its block-tile at dst: codes in VNNI order, then d[16]
// (and m[16]); rows past n_rows stay zero.
template <typename Block>
void tile_block(const Block* const* rows, int64_t n_rows, int64_t b, uint8_t* dst) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  constexpr int64_t kCodeBytes = kQ8 ? 32 : 16;
  uint8_t* scales = dst + kRowTile * kCodeBytes;
  for (int64_t j = 0; j < n_rows; j++) {
    const Block& blk = rows[j][b];
    uint8_t codes[kQK];
    for (int e = 0; e < kQK; e++) {
      if constexpr (kQ8)
        codes[e] = static_cast<uint8_t>(blk.qs[e] + 128);
      else
        codes[e] = static_cast<uint8_t>(e < 16 ? blk.qs[e] & 0xF : blk.qs[e - 16] >> 4);
    }
    for (int64_t s = 0; s < 8; s++)
      for (int64_t t = 0; t < 4; t++) {
        const uint8_t c = codes[4 * s + t];
        if constexpr (kQ8)
          dst[64 * s + 4 * j + t] = c;
        else  // register s < 4: low nibbles of 64-byte group s; s >= 4: high ones of group s - 4
          dst[64 * (s % 4) + 4 * j + t] |= static_cast<uint8_t>(s < 4 ? c : c << 4);
      }
    std::memcpy(scales + 2 * j, &blk.d, 2);
    if constexpr (std::is_same_v<Block, BlockQ4_1>) std::memcpy(scales + 32 + 2 * j, &blk.m, 2);
  }
}

template <typename Block>
void tile_rows(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t nb, uint8_t* out) {
  const size_t tile_bytes = static_cast<size_t>(kRowTile) * row_bytes;
  const int64_t n_tiles = (n_rows + kRowTile - 1) / kRowTile;
  cpu::parallel_for(n_tiles, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const Block* rows[kRowTile];
      const int64_t n = std::min(kRowTile, n_rows - t * kRowTile);
      for (int64_t j = 0; j < n; j++)
        rows[j] =
            reinterpret_cast<const Block*>(src + static_cast<size_t>(t * kRowTile + j) * row_bytes);
      for (int64_t b = 0; b < nb; b++)
        tile_block(rows, n, b,
                   out + static_cast<size_t>(t) * tile_bytes +
                       static_cast<size_t>(b) * kRowTile * sizeof(Block));
    }
  });
}

}  // namespace

PackedRowsFn packed_kernel(QuantType t, SimdLevel level) {
  return level >= SimdLevel::Avx2 ? packed_kernel_avx2(t) : nullptr;
}

TiledRowsFn tiled_kernel(QuantType t, SimdLevel level) {
  return level >= SimdLevel::Avx512 ? tiled_kernel_avx512(t) : nullptr;
}

bool tileable(QuantType t) {
  return t == QuantType::Q4_0 || t == QuantType::Q4_1 || t == QuantType::Q8_0;
}

std::vector<uint8_t> pack_row_tiles(QuantType t, const uint8_t* src, int64_t n_rows, int64_t k) {
  WICK_ASSERT(tileable(t));
  const int64_t nb = k / kQK;
  const size_t row_bytes = static_cast<size_t>(nb * quant_type_info(t)->block_bytes);
  const int64_t n_tiles = (n_rows + kRowTile - 1) / kRowTile;
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(n_tiles * kRowTile), 0);
  if (t == QuantType::Q4_0)
    tile_rows<BlockQ4_0>(src, row_bytes, n_rows, nb, out.data());
  else if (t == QuantType::Q4_1)
    tile_rows<BlockQ4_1>(src, row_bytes, n_rows, nb, out.data());
  else
    tile_rows<BlockQ8_0>(src, row_bytes, n_rows, nb, out.data());
  return out;
}

bool packable(QuantType t) {
  return t == QuantType::Q4_0 || t == QuantType::Q4_1 || t == QuantType::Q5_0 ||
         t == QuantType::Q5_1 || t == QuantType::Q8_0;
}

std::vector<uint8_t> pack_rows(QuantType t, const uint8_t* src, int64_t n_rows, int64_t k) {
  WICK_ASSERT(packable(t));
  const int64_t nb = k / kQK;
  const size_t row_bytes = static_cast<size_t>(nb * quant_type_info(t)->block_bytes);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(n_rows));
  // A model's worth of weights is packed at load time: split the rows across threads.
  cpu::parallel_for(n_rows, 64, [&](int64_t r0, int64_t r1) {
    std::vector<uint8_t> codes(static_cast<size_t>(k));
    for (int64_t r = r0; r < r1; r++) {
      const uint8_t* row = src + static_cast<size_t>(r) * row_bytes;
      uint8_t* dst = out.data() + static_cast<size_t>(r) * row_bytes;
      if (t == QuantType::Q4_0)
        pack_nibble_row(reinterpret_cast<const BlockQ4_0*>(row), nb, dst, codes.data());
      else if (t == QuantType::Q4_1)
        pack_nibble_row(reinterpret_cast<const BlockQ4_1*>(row), nb, dst, codes.data());
      else if (t == QuantType::Q5_0)
        pack_nibble_row(reinterpret_cast<const BlockQ5_0*>(row), nb, dst, codes.data());
      else if (t == QuantType::Q5_1)
        pack_nibble_row(reinterpret_cast<const BlockQ5_1*>(row), nb, dst, codes.data());
      else
        pack_q8_0_row(reinterpret_cast<const BlockQ8_0*>(row), nb, dst, codes.data());
    }
  });
  return out;
}

void pack_activations(const int8_t* qs, const float* ds, int64_t k, int8_t* out, float* ds_out) {
  const int64_t nb = k / kQK;
  for (int64_t b = 0; b < nb; b++) {
    ds_out[b] = ds[2 * b];
    ds_out[nb + b] = ds[2 * b + 1];
  }
  int64_t b = 0;
  for (; b + kChunkBlocks <= nb; b += kChunkBlocks)
    for (int64_t s = 0; s < kSlices; s++)
      for (int64_t blk = 0; blk < kChunkBlocks; blk++)
        std::memcpy(out + kQK * b + 64 * s + 4 * blk, qs + kQK * (b + blk) + 4 * s, 4);
  std::memcpy(out + kQK * b, qs + kQK * b, static_cast<size_t>(kQK * (nb - b)));
}

}  // namespace wick::quantized
