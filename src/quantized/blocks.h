// ggml's block layouts, byte for byte (GGUF files store these), plus the small helpers every
// format shares. Blocks are read in place from file mappings: the structs have no padding, and
// every block size keeps the 2-byte (4 for Q8_K) alignment of their fields across a row.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "wick/dtype.h"
#include "wick/quant_type.h"

namespace wick::quantized {

constexpr int kQK = 32;    // elements per block of the 32-element formats
constexpr int kQKK = 256;  // elements per super-block of the K formats

// 4-bit, scale d: x = d * (q - 8).
struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};
// 4-bit, scale and min: x = d * q + m.
struct BlockQ4_1 {
  uint16_t d, m;  // f16
  uint8_t qs[kQK / 2];
};
// 5-bit: low nibbles in qs, fifth bits in qh (bit j for element j); x = d * (q - 16).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// 5-bit with min: x = d * q + m.
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// 8-bit: x = d * q.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
// 8-bit plus s = d * sum(q) (f16), the activation format of Q4_1/Q5_1 dot products in ggml.
struct BlockQ8_1 {
  uint16_t d, s;
  int8_t qs[kQK];
};
// 2-bit super-block: 16 groups of 16, 4-bit scale (low) and min (high) per group.
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];
  uint16_t d, dmin;
};
// 3-bit super-block: 2 low bits in qs, high bit in hmask, 16 6-bit signed scales in 12 bytes.
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  uint16_t d;
};
// 4-bit super-block: 8 groups of 32 with 6-bit scale and min packed in 12 bytes.
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
// 5-bit super-block: as Q4_K plus one high bit per element in qh.
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
// 6-bit super-block: 16 groups of 16 with an int8 scale each; x = d * scale * (q - 32).
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};
// 8-bit super-block with an f32 scale and the sums of each group of 16 (K-quant activations).
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

// Non-linear 4-bit: each code indexes kIq4Values; x = d * kIq4Values[q]. Nibble order as Q4_0.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
// Non-linear 4-bit super-block: 8 sub-blocks of 32, each with a 6-bit scale ls (low 4 bits in
// scales_l[ib / 2], nibble ib % 2; top 2 bits at bit 2 ib of scales_h);
// x = d * (ls - 32) * kIq4Values[q]. Sub-block ib's codes are qs[16 ib .. 16 ib + 16), nibbles
// ordered as in Q4_0 (low: elements 0-15, high: 16-31).
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];
};

// The 16 levels of the IQ4 formats (ggml's kvalues_iq4nl): ascending, not symmetric.
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

// The signed scale (ls - 32, in -32..31) of sub-block ib (0..7) of an IQ4_XS block.
inline int iq4xs_scale(const BlockIQ4_XS& b, int ib) {
  const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
  const int high = (b.scales_h >> (2 * ib)) & 3;
  return (low | (high << 4)) - 32;
}

static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

inline float f16_to_f32(uint16_t h) {
  return f16::to_float(h);
}
inline uint16_t f32_to_f16(float v) {
  return f16::from_float(v);
}

// Round to nearest, ties to even (what ggml's nearest_int computes for the values it sees).
inline int nearest_int(float v) {
  return static_cast<int>(std::lrintf(v));
}

// Scale and min (6 bits each) of group j of a Q4_K/Q5_K super-block: groups 0-3 keep them in the
// low 6 bits of bytes j and j+4; groups 4-7 put their low 4 bits in byte j+4 and the top 2 bits in
// the spare high bits of bytes j-4 (scale) and j (min).
inline void k4_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// All 8 scales and 8 mins of a Q4_K/Q5_K block at once (same values as k4_scale_min), working on
// 32-bit words of the 12 packed bytes: 4 groups per word.
inline void k4_scales_mins(const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  uint32_t w[3];
  std::memcpy(w, q, 12);
  const uint32_t low6 = 0x3F3F3F3Fu, low4 = 0x0F0F0F0Fu, top2 = 0x30303030u;
  const uint32_t out[4] = {w[0] & low6, (w[2] & low4) | ((w[0] >> 2) & top2), w[1] & low6,
                           ((w[2] >> 4) & low4) | ((w[1] >> 2) & top2)};
  std::memcpy(sc, out, 8);
  std::memcpy(mn, out + 2, 8);
}

// The 16 signed 6-bit scales of a Q3_K block (already minus 32).
inline void q3k_scales(const uint8_t* packed, int8_t* out) {
  for (int j = 0; j < 16; j++) {
    const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

}  // namespace wick::quantized
