// Repacking of q4_0 / q4_1 / q8_0 rows into the layout described in packed.h.
#include "quantized/packed.h"

#include <type_traits>

#include "quantized/blocks.h"

namespace wick::quantized {

namespace {

// Writes the codes of nb blocks (k = 32 * nb values in 0..15) as regrouped nibbles.
void pack_nibbles_regrouped(const uint8_t* codes, int64_t nb, uint8_t* dst) {
  // Runs of 4, then 2, then 1 block: byte i of a run of n blocks pairs codes i and i + 16n.
  int64_t b = 0;
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

template <typename Block>
void pack_nibble_row(const Block* blocks, int64_t nb, uint8_t* dst, uint8_t* codes) {
  for (int64_t b = 0; b < nb; b++) {
    for (int j = 0; j < 16; j++) {
      codes[b * kQK + j] = blocks[b].qs[j] & 0xF;
      codes[b * kQK + j + 16] = blocks[b].qs[j] >> 4;
    }
    std::memcpy(dst + 16 * nb + 2 * b, &blocks[b].d, 2);
    if constexpr (std::is_same_v<Block, BlockQ4_1>)
      std::memcpy(dst + 18 * nb + 2 * b, &blocks[b].m, 2);
  }
  pack_nibbles_regrouped(codes, nb, dst);
}

}  // namespace

bool packable(QuantType t) {
  return t == QuantType::Q4_0 || t == QuantType::Q4_1 || t == QuantType::Q8_0;
}

std::vector<uint8_t> pack_rows(QuantType t, const uint8_t* src, int64_t n_rows, int64_t k) {
  const int64_t nb = k / kQK;
  const size_t row_bytes = static_cast<size_t>(nb * quant_type_info(t)->block_bytes);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(n_rows));
  std::vector<uint8_t> codes(static_cast<size_t>(k));
  for (int64_t r = 0; r < n_rows; r++) {
    const uint8_t* row = src + static_cast<size_t>(r) * row_bytes;
    uint8_t* dst = out.data() + static_cast<size_t>(r) * row_bytes;
    if (t == QuantType::Q4_0) {
      pack_nibble_row(reinterpret_cast<const BlockQ4_0*>(row), nb, dst, codes.data());
    } else if (t == QuantType::Q4_1) {
      pack_nibble_row(reinterpret_cast<const BlockQ4_1*>(row), nb, dst, codes.data());
    } else {
      const auto* blocks = reinterpret_cast<const BlockQ8_0*>(row);
      for (int64_t b = 0; b < nb; b++) {
        std::memcpy(dst + kQK * b, blocks[b].qs, kQK);
        std::memcpy(dst + kQK * nb + 2 * b, &blocks[b].d, 2);
      }
    }
  }
  return out;
}

}  // namespace wick::quantized
