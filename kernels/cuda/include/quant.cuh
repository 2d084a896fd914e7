// ggml's block formats, decoded on the device (the layouts of src/quantized/blocks.h, byte for
// byte). The weight is one buffer of raw blocks, rows of k / QK blocks back to back; every block
// starts at a multiple of BLOCK_ALIGN bytes (2 at least: the blocks' sizes are even). The format
// is the define QTYPE (a QuantType id).
//
// dequant8(w, blk, j, out) writes elements j .. j+7 (j a multiple of 8) of the block starting at
// byte `blk` as floats: in every format those 8 elements share one scale and come from runs of 8
// consecutive bytes at even offsets. The arithmetic (f32 products in ggml's order) is that of
// src/quantized/dequantize.cpp.
//
// With ACT_Q8 (x quantized to 8 bits by qact.cu), decode_unit() gives the 32 elements of a unit
// (32 consecutive elements at a multiple of 32) as signed 8-bit integers with their integer
// scales, and unit_dot() multiplies them with 32 quantized x values as the CPU's dot kernels do
// (src/quantized/dot_scalar.cpp): integer sums per scale group, then the f32 scales.
#pragma once

#include "include/common.cuh"
#include "include/dtype.cuh"

#define Q4_0 2
#define Q4_1 3
#define Q5_0 6
#define Q5_1 7
#define Q8_0 8
#define Q8_1 9
#define Q2_K 10
#define Q3_K 11
#define Q4_K 12
#define Q5_K 13
#define Q6_K 14
#define Q8_K 15
#define IQ4_NL 20
#define IQ4_XS 23

#if QTYPE == Q4_0
#define QK 32u
#define BLOCK_BYTES 18u
#define BLOCK_ALIGN 2u
#elif QTYPE == Q4_1
#define QK 32u
#define BLOCK_BYTES 20u
#define BLOCK_ALIGN 4u
#elif QTYPE == Q5_0
#define QK 32u
#define BLOCK_BYTES 22u
#define BLOCK_ALIGN 2u
#elif QTYPE == Q5_1
#define QK 32u
#define BLOCK_BYTES 24u
#define BLOCK_ALIGN 8u
#elif QTYPE == Q8_0
#define QK 32u
#define BLOCK_BYTES 34u
#define BLOCK_ALIGN 2u
#elif QTYPE == Q8_1
#define QK 32u
#define BLOCK_BYTES 36u
#define BLOCK_ALIGN 4u
#elif QTYPE == Q2_K
#define QK 256u
#define BLOCK_BYTES 84u
#define BLOCK_ALIGN 4u
#elif QTYPE == Q3_K
#define QK 256u
#define BLOCK_BYTES 110u
#define BLOCK_ALIGN 2u
#elif QTYPE == Q4_K
#define QK 256u
#define BLOCK_BYTES 144u
#define BLOCK_ALIGN 16u
#elif QTYPE == Q5_K
#define QK 256u
#define BLOCK_BYTES 176u
#define BLOCK_ALIGN 16u
#elif QTYPE == Q6_K
#define QK 256u
#define BLOCK_BYTES 210u
#define BLOCK_ALIGN 2u
#elif QTYPE == Q8_K
#define QK 256u
#define BLOCK_BYTES 292u
#define BLOCK_ALIGN 4u
#elif QTYPE == IQ4_NL
#define QK 32u
#define BLOCK_BYTES 18u
#define BLOCK_ALIGN 2u
#elif QTYPE == IQ4_XS
#define QK 256u
#define BLOCK_BYTES 136u
#define BLOCK_ALIGN 8u
#else
#error "quant.cuh: QTYPE is not a block format"
#endif
static_assert(BLOCK_BYTES % BLOCK_ALIGN == 0u, "a row of blocks keeps the blocks' alignment");

// The alignment of byte blk + off of a block (off a constant): the block's, or off's lowest bit.
__device__ constexpr uint32_t offset_align(uint32_t off) {
  return off == 0u || (off & (0u - off)) >= BLOCK_ALIGN ? BLOCK_ALIGN : off & (0u - off);
}

// ---- bytes of the weight buffer -------------------------------------------------------------

// The byte at b.
WICK_DEV uint32_t q_u8(const uint8_t* w, uint32_t b) {
  return __ldg(w + b);
}
// The 16-bit word at even byte offset b.
WICK_DEV uint32_t q_u16(const uint8_t* w, uint32_t b) {
  return __ldg(reinterpret_cast<const uint16_t*>(w + b));
}
// The f16 at even byte offset b.
WICK_DEV float q_f16(const uint8_t* w, uint32_t b) {
  return LOAD(f16, uint16_t(q_u16(w, b)));
}
// The 4 bytes at even byte offset b, little-endian.
WICK_DEV uint32_t q_u32(const uint8_t* w, uint32_t b) {
  return q_u16(w, b) | (q_u16(w, b + 2u) << 16);
}
// The 8 bytes at even byte offset b: bytes 0-3 in .x, 4-7 in .y.
WICK_DEV uint2 q_bytes8(const uint8_t* w, uint32_t b) {
  return make_uint2(q_u32(w, b), q_u32(w, b + 4u));
}
// Bits [shift, shift + bits) of byte i (0..7) of q.
WICK_DEV uint32_t q_bits(uint2 q, uint32_t i, uint32_t shift, uint32_t bits) {
  return ((i < 4u ? q.x : q.y) >> (8u * (i & 3u) + shift)) & ((1u << bits) - 1u);
}
// Byte i of q as a signed 8-bit value.
WICK_DEV int q_i8(uint2 q, uint32_t i) {
  return int(((i < 4u ? q.x : q.y) >> (8u * (i & 3u))) << 24) >> 24;
}
// A signed 8-bit value from the low byte of v.
WICK_DEV int sext8(uint32_t v) {
  return int(v << 24) >> 24;
}

// The 4 * N bytes at byte b (a multiple of ALIGN, 2 at least) as N little-endian words, by the
// widest aligned loads ALIGN allows: 16-byte loads for 16-aligned runs, aligned words shifted
// into place for 2-aligned ones (never touching a byte past the run).
template <uint32_t ALIGN, int N>
WICK_DEV void load_words(const uint8_t* w, uint32_t b, uint32_t (&out)[N]) {
  if constexpr (ALIGN % 16u == 0u && N % 4 == 0) {
    const uint4* p = reinterpret_cast<const uint4*>(w + b);
#pragma unroll
    for (int i = 0; i < N / 4; i++) {
      const uint4 v = __ldg(p + i);
      out[4 * i] = v.x;
      out[4 * i + 1] = v.y;
      out[4 * i + 2] = v.z;
      out[4 * i + 3] = v.w;
    }
  } else if constexpr (ALIGN % 8u == 0u && N % 2 == 0) {
    const uint2* p = reinterpret_cast<const uint2*>(w + b);
#pragma unroll
    for (int i = 0; i < N / 2; i++) {
      const uint2 v = __ldg(p + i);
      out[2 * i] = v.x;
      out[2 * i + 1] = v.y;
    }
  } else if constexpr (ALIGN % 4u == 0u) {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(w + b);
#pragma unroll
    for (int i = 0; i < N; i++) out[i] = __ldg(p + i);
  } else {
    const uint32_t a = b & ~3u, shift = (b & 2u) * 8u;
    const uint32_t* p = reinterpret_cast<const uint32_t*>(w + a);
    uint32_t words[N + 1];
#pragma unroll
    for (int i = 0; i < N; i++) words[i] = __ldg(p + i);
    words[N] = shift != 0u ? q_u16(w, a + 4u * N) : 0u;
#pragma unroll
    for (int i = 0; i < N; i++) out[i] = __funnelshift_r(words[i], words[i + 1], shift);
  }
}

// ---- dequantization -------------------------------------------------------------------------

#if QTYPE == Q4_K || QTYPE == Q5_K
// Scale and min (6 bits each) of group g (0..7) from the 12 packed bytes at `sc` (k4_scale_min).
WICK_DEV uint2 k4_scale_min(const uint8_t* w, uint32_t sc, uint32_t g) {
  if (g < 4u) return make_uint2(q_u8(w, sc + g) & 63u, q_u8(w, sc + g + 4u) & 63u);
  const uint32_t hi = q_u8(w, sc + g + 4u);
  return make_uint2((hi & 0xfu) | ((q_u8(w, sc + g - 4u) >> 6) << 4),
                    (hi >> 4) | ((q_u8(w, sc + g) >> 6) << 4));
}

// Layout: d dmin scales[12] (qh[32]) qs[128]. Chunk c (64 elements) uses qs[32c .. 32c+32): low
// nibbles are group 2c, high nibbles group 2c+1; Q5_K's fifth bit of element l of group g is bit g
// of qh[l]. The unsigned values of elements j .. j+7; returns their group's (scale, min).
WICK_DEV uint2 k4_values8(const uint8_t* w, uint32_t blk, uint32_t j, uint32_t (&v)[8]) {
  const uint32_t g = j >> 5, l = j & 31u;
#if QTYPE == Q4_K
  const uint2 q = q_bytes8(w, blk + 16u + 32u * (j >> 6) + l);
#else
  const uint2 q = q_bytes8(w, blk + 48u + 32u * (j >> 6) + l);
  const uint2 h = q_bytes8(w, blk + 16u + l);
#endif
  const uint32_t shift = 4u * (g & 1u);
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++) {
#if QTYPE == Q4_K
    v[i] = q_bits(q, i, shift, 4u);
#else
    v[i] = q_bits(q, i, shift, 4u) | (q_bits(h, i, g, 1u) << 4);
#endif
  }
  return k4_scale_min(w, blk + 4u, g);
}
#endif

#if QTYPE == Q3_K
// The signed 6-bit scale of group g (0..15) of the Q3_K block at blk.
WICK_DEV int q3k_scale(const uint8_t* w, uint32_t blk, uint32_t g) {
  const uint32_t low = g < 8u ? q_u8(w, blk + 96u + g) & 0xfu : q_u8(w, blk + 96u + g - 8u) >> 4;
  const uint32_t high = (q_u8(w, blk + 104u + (g & 3u)) >> (2u * (g >> 2))) & 3u;
  return int(low | (high << 4)) - 32;
}
#endif

#if QTYPE == IQ4_NL || QTYPE == IQ4_XS
// The IQ4 formats' 16 levels (kIq4Values in src/quantized/blocks.h) as signed bytes, 4 per word.
constexpr uint32_t IQ4_TABLE0 = 0xbfad9881u;  // -127 -104 -83 -65
constexpr uint32_t IQ4_TABLE1 = 0xf6eaddcfu;  //  -49  -35 -22 -10
constexpr uint32_t IQ4_TABLE2 = 0x26190d01u;  //    1   13  25  38
constexpr uint32_t IQ4_TABLE3 = 0x71594535u;  //   53   69  89 113

// The level of code c (0..15).
WICK_DEV int iq4_value(uint32_t c) {
  const uint32_t word =
      c < 8u ? (c < 4u ? IQ4_TABLE0 : IQ4_TABLE1) : (c < 12u ? IQ4_TABLE2 : IQ4_TABLE3);
  return sext8(word >> (8u * (c & 3u)));
}

// Four codes (one per byte, 0..15) -> their levels as signed bytes: the low 3 bits pick a byte of
// each half of the table (byte_perm), bit 3 picks the half.
WICK_DEV uint32_t iq4_values4(uint32_t codes) {
  const uint32_t sel =
      (codes & 7u) | ((codes >> 4) & 0x70u) | ((codes >> 8) & 0x700u) | ((codes >> 12) & 0x7000u);
  const uint32_t lo = __byte_perm(IQ4_TABLE0, IQ4_TABLE1, sel);
  const uint32_t hi = __byte_perm(IQ4_TABLE2, IQ4_TABLE3, sel);
  const uint32_t upper = ((codes >> 3) & 0x01010101u) * 0xffu;
  return (lo & ~upper) | (hi & upper);
}

#if QTYPE == IQ4_XS
// Layout: d scales_h scales_l[4] qs[128]. The signed scale (ls - 32) of sub-block ib (0..7).
WICK_DEV int iq4xs_scale(const uint8_t* w, uint32_t blk, uint32_t ib) {
  const uint32_t low = (q_u8(w, blk + 4u + (ib >> 1)) >> (4u * (ib & 1u))) & 0xfu;
  const uint32_t high = (q_u16(w, blk + 2u) >> (2u * ib)) & 3u;
  return int(low | (high << 4)) - 32;
}
#endif
#endif

WICK_DEV void dequant8(const uint8_t* w, uint32_t blk, uint32_t j, float (&out)[8]) {
#if QTYPE == Q4_0 || QTYPE == Q4_1
  // Element e < 16: low nibble of qs[e]; e >= 16: high nibble of qs[e - 16].
  const uint32_t qs = QTYPE == Q4_0 ? 2u : 4u;
  const float d = q_f16(w, blk);
  const uint2 q = q_bytes8(w, blk + qs + (j & 15u));
  const uint32_t shift = (j >> 4) * 4u;
#if QTYPE == Q4_0
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++) out[i] = float(int(q_bits(q, i, shift, 4u)) - 8) * d;
#else
  const float m = q_f16(w, blk + 2u);
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++)
    out[i] = __fadd_rn(__fmul_rn(float(q_bits(q, i, shift, 4u)), d), m);
#endif
#elif QTYPE == Q5_0 || QTYPE == Q5_1
  // As Q4, plus the fifth bit of element e in bit e of qh.
  const uint32_t qh_at = QTYPE == Q5_0 ? 2u : 4u;
  const float d = q_f16(w, blk);
  const uint32_t qh = q_u32(w, blk + qh_at) >> j;
  const uint2 q = q_bytes8(w, blk + qh_at + 4u + (j & 15u));
  const uint32_t shift = (j >> 4) * 4u;
#if QTYPE == Q5_1
  const float m = q_f16(w, blk + 2u);
#endif
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++) {
    const uint32_t v = q_bits(q, i, shift, 4u) | (((qh >> i) & 1u) << 4);
#if QTYPE == Q5_0
    out[i] = float(int(v) - 16) * d;
#else
    out[i] = __fadd_rn(__fmul_rn(float(v), d), m);
#endif
  }
#elif QTYPE == Q8_0 || QTYPE == Q8_1 || QTYPE == Q8_K
#if QTYPE == Q8_K
  const float d = __uint_as_float(q_u32(w, blk));
  const uint32_t qs = 4u;
#else
  const float d = q_f16(w, blk);
  const uint32_t qs = QTYPE == Q8_0 ? 2u : 4u;
#endif
  const uint2 q = q_bytes8(w, blk + qs + j);
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++) out[i] = float(q_i8(q, i)) * d;
#elif QTYPE == Q2_K
  // Layout: scales[16] qs[64] d dmin. In each 128-element half, element e' takes bits
  // 2 (e' / 32) of qs[32 half + e' % 32]; its group of 16 is e' / 16.
  const uint32_t half_ = j >> 7, e = j & 127u, g = 8u * half_ + (e >> 4);
  const uint32_t sc = q_u8(w, blk + g);
  const float dl = q_f16(w, blk + 80u) * float(sc & 0xfu);
  const float ml = q_f16(w, blk + 82u) * float(sc >> 4);
  const uint2 q = q_bytes8(w, blk + 16u + 32u * half_ + (e & 31u));
  const uint32_t shift = 2u * (e >> 5);
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++)
    out[i] = __fsub_rn(__fmul_rn(dl, float(q_bits(q, i, shift, 2u))), ml);
#elif QTYPE == Q3_K
  // Layout: hmask[32] qs[64] scales[12] d. Low 2 bits as Q2_K; the high bit of element e' of
  // half h is bit 4 h + e' / 32 of hmask[e' % 32] (clear: minus 4). Scales: 6-bit signed.
  const uint32_t half_ = j >> 7, e = j & 127u, g = 8u * half_ + (e >> 4);
  const float dl = q_f16(w, blk + 108u) * float(q3k_scale(w, blk, g));
  const uint2 q = q_bytes8(w, blk + 32u + 32u * half_ + (e & 31u));
  const uint2 h = q_bytes8(w, blk + (e & 31u));
  const uint32_t shift = 2u * (e >> 5), hshift = 4u * half_ + (e >> 5);
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++)
    out[i] = dl * float(int(q_bits(q, i, shift, 2u)) - (q_bits(h, i, hshift, 1u) != 0u ? 0 : 4));
#elif QTYPE == Q4_K || QTYPE == Q5_K
  uint32_t v[8];
  const uint2 sm = k4_values8(w, blk, j, v);
  const float dl = q_f16(w, blk) * float(sm.x), ml = q_f16(w, blk + 2u) * float(sm.y);
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++) out[i] = __fsub_rn(__fmul_rn(dl, float(v[i])), ml);
#elif QTYPE == Q6_K
  // Layout: ql[128] qh[64] scales[16] (int8) d. In half h, element 32 s + l takes the low (s < 2)
  // or high nibble of ql[64 h + 32 (s % 2) + l] and bits 2 s of qh[32 h + l]; its scale is
  // scales[8 h + 2 s + l / 16].
  const uint32_t half_ = j >> 7, s = (j >> 5) & 3u, l = j & 31u;
  const int sc = sext8(q_u8(w, blk + 192u + 8u * half_ + 2u * s + (l >> 4)));
  const float ds = q_f16(w, blk + 208u) * float(sc);
  const uint2 ql = q_bytes8(w, blk + 64u * half_ + 32u * (s & 1u) + l);
  const uint2 qh = q_bytes8(w, blk + 128u + 32u * half_ + l);
  const uint32_t shift = s < 2u ? 0u : 4u;
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++) {
    const int v = int(q_bits(ql, i, shift, 4u) | (q_bits(qh, i, 2u * s, 2u) << 4)) - 32;
    out[i] = ds * float(v);
  }
#elif QTYPE == IQ4_NL || QTYPE == IQ4_XS
  // Q4_0's nibble order (IQ4_XS: within sub-block j / 32, codes at qs[16 (j / 32) ..]).
#if QTYPE == IQ4_NL
  const float dl = q_f16(w, blk);
  const uint2 q = q_bytes8(w, blk + 2u + (j & 15u));
  const uint32_t shift = (j >> 4) * 4u;
#else
  const uint32_t ib = j >> 5, l = j & 31u;
  const float dl = q_f16(w, blk) * float(iq4xs_scale(w, blk, ib));
  const uint2 q = q_bytes8(w, blk + 8u + 16u * ib + (l & 15u));
  const uint32_t shift = (l >> 4) * 4u;
#endif
#pragma unroll
  for (uint32_t i = 0u; i < 8u; i++) out[i] = dl * float(iq4_value(q_bits(q, i, shift, 4u)));
#endif
}

// ---- integer dot products with 8-bit x (ACT_Q8) ---------------------------------------------

#ifdef ACT_Q8
#if QTYPE == Q8_1 || QTYPE == Q8_K
#error "quant.cuh: q8_1 and q8_k weights take f32 x (the CPU multiplies them in f32)"
#endif
#if QTYPE == Q4_1 || QTYPE == Q5_1 || QTYPE == Q2_K || QTYPE == Q4_K || QTYPE == Q5_K
#define QUANT_MIN 1
#endif
#if (QTYPE >= Q2_K && QTYPE <= Q8_K) || QTYPE == IQ4_XS
#define QUANT_K 1  // 256-element blocks: x's scales are per 256 (ggml's Q8_K)
#endif

// Where qact.cu puts a row's values: word e / 4 holds element e; the scales follow the k / 4
// words of q: (d, s) per 32 elements, or d per 256 (QK: the weight's block is x's block).
WICK_DEV uint32_t act_scale_word(uint32_t k, uint32_t e) {
  return k / 4u + (QK == 32u ? 2u * (e / 32u) : e / 256u);
}

// A unit of 32 weight elements: their values as signed bytes (element 4 i + b in byte b of q[i]),
// the f32 scale (and min) and, for the K formats, the integer scales (and mins) of its two halves
// of 16 (equal where the format's group is 32).
struct WeightUnit {
  uint32_t q[8];
  float d, m;
  int sc[2], mn[2];
};

// Bit 4 of byte b set from bit b of the low 4 bits of h.
WICK_DEV uint32_t spread4_to_bit4(uint32_t h) {
  return ((h & 0xfu) * 0x00204081u & 0x01010101u) << 4;
}

// The unit starting at element j (a multiple of 32) of the block at byte blk.
WICK_DEV WeightUnit decode_unit(const uint8_t* w, uint32_t blk, uint32_t j) {
  WeightUnit u;
  u.m = 0.0f;
  u.sc[0] = u.sc[1] = 1;
  u.mn[0] = u.mn[1] = 0;
#if QTYPE == Q4_0 || QTYPE == Q4_1 || QTYPE == Q5_0 || QTYPE == Q5_1
  // Element e < 16: low nibble of qs[e]; e >= 16: high nibble of qs[e - 16]; the Q5 formats' fifth
  // bit of element e is bit e of qh.
  constexpr uint32_t qh_at = QTYPE == Q5_0 ? 2u : 4u;
  constexpr uint32_t qs_at = QTYPE == Q4_0 ? 2u : QTYPE == Q4_1 ? 4u : qh_at + 4u;
  u.d = q_f16(w, blk);
  if (QTYPE == Q4_1 || QTYPE == Q5_1) u.m = q_f16(w, blk + 2u);
  uint32_t qs[4];
  load_words<offset_align(qs_at)>(w, blk + qs_at, qs);
#pragma unroll
  for (int i = 0; i < 4; i++) {
    u.q[i] = qs[i] & 0x0f0f0f0fu;
    u.q[4 + i] = (qs[i] >> 4) & 0x0f0f0f0fu;
  }
#if QTYPE == Q5_0 || QTYPE == Q5_1
  const uint32_t qh = q_u32(w, blk + qh_at);
#pragma unroll
  for (int i = 0; i < 8; i++) u.q[i] |= spread4_to_bit4(qh >> (4 * i));
#endif
#if QTYPE == Q4_0
#pragma unroll
  for (int i = 0; i < 8; i++) u.q[i] = __vsub4(u.q[i], 0x08080808u);
#elif QTYPE == Q5_0
#pragma unroll
  for (int i = 0; i < 8; i++) u.q[i] = __vsub4(u.q[i], 0x10101010u);
#endif
#elif QTYPE == Q8_0
  u.d = q_f16(w, blk);
  load_words<offset_align(2u)>(w, blk + 2u, u.q);
#elif QTYPE == Q2_K
  // Element 32 s + l of half h: bits 2 s of qs[32 h + l]; groups of 16 with a 4-bit scale (low)
  // and min (high) byte each.
  const uint32_t h = j >> 7, s = (j >> 5) & 3u, g = 8u * h + 2u * s;
  uint32_t dm[1];  // d, dmin
  load_words<offset_align(80u)>(w, blk + 80u, dm);
  u.d = LOAD(f16, uint16_t(dm[0] & 0xffffu));
  u.m = LOAD(f16, uint16_t(dm[0] >> 16));
  uint32_t qs[8];
  load_words<offset_align(16u)>(w, blk + 16u + 32u * h, qs);
#pragma unroll
  for (int i = 0; i < 8; i++) u.q[i] = (qs[i] >> (2u * s)) & 0x03030303u;
  const uint32_t scm = q_u16(w, blk + g);  // the groups' bytes: g is even
#pragma unroll
  for (int t = 0; t < 2; t++) {
    u.sc[t] = int((scm >> (8 * t)) & 0xfu);
    u.mn[t] = int((scm >> (8 * t + 4)) & 0xfu);
  }
#elif QTYPE == Q3_K
  // Low 2 bits as Q2_K (qs at 32); the high bit of element 32 s + l of half h is bit 4 h + s of
  // hmask[l] (clear: minus 4).
  const uint32_t h = j >> 7, s = (j >> 5) & 3u, g = 8u * h + 2u * s;
  u.d = q_f16(w, blk + 108u);
  uint32_t qs[8], hm[8];
  load_words<offset_align(32u)>(w, blk + 32u + 32u * h, qs);
  load_words<offset_align(0u)>(w, blk, hm);
#pragma unroll
  for (int i = 0; i < 8; i++)
    u.q[i] = __vsub4(
        ((qs[i] >> (2u * s)) & 0x03030303u) | (((hm[i] >> (4u * h + s)) & 0x01010101u) << 2),
        0x04040404u);
  u.sc[0] = q3k_scale(w, blk, g);
  u.sc[1] = q3k_scale(w, blk, g + 1u);
#elif QTYPE == Q4_K || QTYPE == Q5_K
  // Group g = j / 32: the low (g even) or high nibbles of qs[32 (g / 2) ..]; Q5_K's fifth bits in
  // bit g of qh.
  const uint32_t g = j >> 5;
  uint32_t head[4];  // d, dmin, scales[12]: one 16-byte load
  load_words<offset_align(0u)>(w, blk, head);
  u.d = LOAD(f16, uint16_t(head[0] & 0xffffu));
  u.m = LOAD(f16, uint16_t(head[0] >> 16));
  uint32_t qs[8];
  load_words<offset_align(16u)>(w, blk + (QTYPE == Q4_K ? 16u : 48u) + 32u * (g >> 1), qs);
#pragma unroll
  for (int i = 0; i < 8; i++) u.q[i] = (qs[i] >> (4u * (g & 1u))) & 0x0f0f0f0fu;
#if QTYPE == Q5_K
  uint32_t qh[8];
  load_words<offset_align(16u)>(w, blk + 16u, qh);
#pragma unroll
  for (int i = 0; i < 8; i++) u.q[i] |= ((qh[i] >> g) & 0x01010101u) << 4;
#endif
  // k4_scale_min on the loaded words: scales byte b is byte b % 4 of head[1 + b / 4].
  const uint32_t b = 8u * (g & 3u);
  const uint32_t lo = head[1] >> b, mid = head[2] >> b, hi = head[3] >> b;
  u.sc[0] = u.sc[1] = int(g < 4u ? lo & 63u : (hi & 0xfu) | ((lo >> 6) & 3u) << 4);
  u.mn[0] = u.mn[1] = int(g < 4u ? mid & 63u : ((hi >> 4) & 0xfu) | ((mid >> 6) & 3u) << 4);
#elif QTYPE == Q6_K
  // Element 32 s + l of half h: the low (s < 2) or high nibble of ql[64 h + 32 (s % 2) + l] and
  // bits 2 s of qh[32 h + l], minus 32; int8 scales per 16.
  const uint32_t h = j >> 7, s = (j >> 5) & 3u;
  u.d = q_f16(w, blk + 208u);
  uint32_t ql[8], qh[8];
  load_words<offset_align(32u)>(w, blk + 64u * h + 32u * (s & 1u), ql);
  load_words<offset_align(128u)>(w, blk + 128u + 32u * h, qh);
#pragma unroll
  for (int i = 0; i < 8; i++)
    u.q[i] = __vsub4(
        ((ql[i] >> (s < 2u ? 0u : 4u)) & 0x0f0f0f0fu) | (((qh[i] >> (2u * s)) & 0x03030303u) << 4),
        0x20202020u);
  u.sc[0] = sext8(q_u8(w, blk + 192u + 8u * h + 2u * s));
  u.sc[1] = sext8(q_u8(w, blk + 192u + 8u * h + 2u * s + 1u));
#elif QTYPE == IQ4_NL || QTYPE == IQ4_XS
  // Q4_0's nibble order; IQ4_XS: sub-block j / 32's codes at qs[16 (j / 32) ..], its scale for
  // both halves.
  u.d = q_f16(w, blk);
  uint32_t qs[4];
#if QTYPE == IQ4_NL
  load_words<offset_align(2u)>(w, blk + 2u, qs);
#else
  load_words<offset_align(8u)>(w, blk + 8u + 16u * (j >> 5), qs);
  u.sc[0] = u.sc[1] = iq4xs_scale(w, blk, j >> 5);
#endif
#pragma unroll
  for (int i = 0; i < 4; i++) {
    u.q[i] = iq4_values4(qs[i] & 0x0f0f0f0fu);
    u.q[4 + i] = iq4_values4((qs[i] >> 4) & 0x0f0f0f0fu);
  }
#endif
  return u;
}

// The dot product of a unit with 32 quantized x values (x[i]: elements 4 i .. 4 i + 3) of scale
// dx (32-element formats: sx = dx * sum(q), used for the min), as the CPU computes a block:
// dw dx sum(v q) (+ m sx), or for the K formats dx dw sum_g(sc_g sum_g(v q)) minus
// dx dmin sum_g(mn_g sum_g(q)).
WICK_DEV float unit_dot(const WeightUnit& u, const uint32_t (&x)[8], float dx, float sx) {
#ifndef QUANT_K
  int isum = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) isum = __dp4a(int(u.q[i]), int(x[i]), isum);
  float s = u.d * dx * float(isum);
#ifdef QUANT_MIN
  s += u.m * sx;
#endif
  return s;
#else
  int half_sum[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 8; i++) half_sum[i / 4] = __dp4a(int(u.q[i]), int(x[i]), half_sum[i / 4]);
  const int isum = u.sc[0] * half_sum[0] + u.sc[1] * half_sum[1];
  float s = dx * u.d * float(isum);
#ifdef QUANT_MIN
  int x_sum[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 8; i++) x_sum[i / 4] = __dp4a(0x01010101, int(x[i]), x_sum[i / 4]);
  s -= dx * u.m * float(u.mn[0] * x_sum[0] + u.mn[1] * x_sum[1]);
#endif
  return s;
#endif
}
#endif
