// Repacking of Q4_1 rows into the SIMD-friendly layout described in packed.h.
#include "quantized/packed.h"

#include "quantized/blocks.h"

namespace wick::quantized {

std::vector<uint8_t> pack_q4_1(const uint8_t* src, int64_t n_rows, int64_t k) {
  const int64_t nb = k / kQK;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ4_1);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(n_rows));
  std::vector<uint8_t> codes(static_cast<size_t>(k));
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks =
        reinterpret_cast<const BlockQ4_1*>(src + static_cast<size_t>(r) * row_bytes);
    uint8_t* dst = out.data() + static_cast<size_t>(r) * row_bytes;
    for (int64_t b = 0; b < nb; b++) {
      for (int j = 0; j < 16; j++) {
        codes[static_cast<size_t>(b * kQK + j)] = blocks[b].qs[j] & 0xF;
        codes[static_cast<size_t>(b * kQK + j + 16)] = blocks[b].qs[j] >> 4;
      }
      std::memcpy(dst + 16 * nb + 2 * b, &blocks[b].d, 2);
      std::memcpy(dst + 18 * nb + 2 * b, &blocks[b].m, 2);
    }
    // Runs of 4, then 2, then 1 block: byte i of a run of n blocks pairs codes i and i + 16n.
    int64_t b = 0;
    auto emit = [&](int64_t run) {
      const uint8_t* c = codes.data() + b * kQK;
      const int64_t half = 16 * run;
      for (int64_t i = 0; i < half; i++)
        dst[16 * b + i] = static_cast<uint8_t>(c[i] | (c[i + half] << 4));
      b += run;
    };
    while (nb - b >= 4) emit(4);
    if (nb - b >= 2) emit(2);
    if (nb - b >= 1) emit(1);
  }
  return out;
}

}  // namespace wick::quantized
