// ggml's block formats, decoded on the device (the layouts of src/quantized/blocks.h, byte for
// byte). The weight is one buffer of raw blocks, rows of k / QK blocks back to back. Every block
// size is even, so the buffer is read as 16-bit words (16-bit storage): a value at byte b is in
// word b / 2. The format is the define QTYPE (a QuantType id); the kernel defines QUANT_BINDING.
//
// dequant8(block, j, w) writes elements j .. j+7 (j a multiple of 8) of the block starting at byte
// `block`. In every format those 8 elements share one scale and come from runs of 8 consecutive
// bytes at even offsets, so a call reads at most 12 words. The arithmetic (f32 products in
// ggml's order) is that of src/quantized/dequantize.cpp.
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
#elif QTYPE == Q4_1
#define QK 32u
#define BLOCK_BYTES 20u
#elif QTYPE == Q5_0
#define QK 32u
#define BLOCK_BYTES 22u
#elif QTYPE == Q5_1
#define QK 32u
#define BLOCK_BYTES 24u
#elif QTYPE == Q8_0
#define QK 32u
#define BLOCK_BYTES 34u
#elif QTYPE == Q8_1
#define QK 32u
#define BLOCK_BYTES 36u
#elif QTYPE == Q2_K
#define QK 256u
#define BLOCK_BYTES 84u
#elif QTYPE == Q3_K
#define QK 256u
#define BLOCK_BYTES 110u
#elif QTYPE == Q4_K
#define QK 256u
#define BLOCK_BYTES 144u
#elif QTYPE == Q5_K
#define QK 256u
#define BLOCK_BYTES 176u
#elif QTYPE == Q6_K
#define QK 256u
#define BLOCK_BYTES 210u
#elif QTYPE == Q8_K
#define QK 256u
#define BLOCK_BYTES 292u
#elif QTYPE == IQ4_NL
#define QK 32u
#define BLOCK_BYTES 18u
#elif QTYPE == IQ4_XS
#define QK 256u
#define BLOCK_BYTES 136u
#else
#error "quant.glsl: QTYPE is not a block format"
#endif

layout(set = 0, binding = QUANT_BINDING) readonly buffer QuantBlocks { uint16_t wq[]; };
// The 16-bit word i the decoders read: wq's, or the includer's (qmatvec.comp's W_STAGE: a copy
// of the workgroup's rows in shared memory).
#ifndef QUANT_HALF
#define QUANT_HALF(i) uint(wq[i])
#endif

// The 4 bytes at even byte offset b, little-endian.
uint q_u32(uint b) { return QUANT_HALF(b >> 1) | (QUANT_HALF((b >> 1) + 1u) << 16); }
// The byte at b.
uint q_u8(uint b) { return (QUANT_HALF(b >> 1) >> ((b & 1u) * 8u)) & 0xffu; }
// The f16 at even byte offset b.
float q_f16(uint b) { return unpackHalf2x16(QUANT_HALF(b >> 1)).x; }
// The 8 bytes at even byte offset b: bytes 0-3 in .x, 4-7 in .y.
uvec2 q_bytes8(uint b) { return uvec2(q_u32(b), q_u32(b + 4u)); }
// Bits [shift, shift + bits) of byte i (0..7) of q.
uint q_bits(uvec2 q, uint i, uint shift, uint bits) {
  return bitfieldExtract(i < 4u ? q.x : q.y, int(8u * (i & 3u) + shift), int(bits));
}
// Byte i of q as a signed 8-bit value.
int q_i8(uvec2 q, uint i) { return bitfieldExtract(int(i < 4u ? q.x : q.y), int(8u * (i & 3u)), 8); }

#if QTYPE == Q4_K || QTYPE == Q5_K
// Scale and min (6 bits each) of group g (0..7) from the 12 packed bytes at `sc` (k4_scale_min).
uvec2 k4_scale_min(uint sc, uint g) {
  if (g < 4u) return uvec2(q_u8(sc + g) & 63u, q_u8(sc + g + 4u) & 63u);
  const uint hi = q_u8(sc + g + 4u);
  return uvec2((hi & 0xfu) | ((q_u8(sc + g - 4u) >> 6) << 4), (hi >> 4) | ((q_u8(sc + g) >> 6) << 4));
}

// Layout: d dmin scales[12] (qh[32]) qs[128]. Chunk c (64 elements) uses qs[32c .. 32c+32): low
// nibbles are group 2c, high nibbles group 2c+1; Q5_K's fifth bit of element l of group g is bit g
// of qh[l]. The unsigned values of elements j .. j+7; returns their group's (scale, min).
uvec2 k4_values8(uint blk, uint j, out uint v[8]) {
  const uint g = j >> 5, l = j & 31u;
#if QTYPE == Q4_K
  const uvec2 q = q_bytes8(blk + 16u + 32u * (j >> 6) + l);
#else
  const uvec2 q = q_bytes8(blk + 48u + 32u * (j >> 6) + l);
  const uvec2 h = q_bytes8(blk + 16u + l);
#endif
  const uint shift = 4u * (g & 1u);
  for (uint i = 0u; i < 8u; i++) {
#if QTYPE == Q4_K
    v[i] = q_bits(q, i, shift, 4u);
#else
    v[i] = q_bits(q, i, shift, 4u) | (q_bits(h, i, g, 1u) << 4);
#endif
  }
  return k4_scale_min(blk + 4u, g);
}
#endif

#if QTYPE == IQ4_NL || QTYPE == IQ4_XS
// The IQ4 formats' 16 levels (kIq4Values in src/quantized/blocks.h).
const int IQ4_VALUES[16] =
    int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);

// Layouts: IQ4_NL d qs[16]; IQ4_XS d scales_h scales_l[4] qs[128]. Codes of elements j .. j+7 in
// Q4_0's nibble order (IQ4_XS: within sub-block j / 32, whose codes are qs[16 (j / 32) ..]);
// returns the scale as an integer (1 for IQ4_NL, ls - 32 for IQ4_XS).
int iq4_codes8(uint blk, uint j, out uint c[8]) {
#if QTYPE == IQ4_NL
  const uvec2 q = q_bytes8(blk + 2u + (j & 15u));
  const uint shift = (j >> 4) * 4u;
  const int sc = 1;
#else
  const uint ib = j >> 5, l = j & 31u;
  const uvec2 q = q_bytes8(blk + 8u + 16u * ib + (l & 15u));
  const uint shift = (l >> 4) * 4u;
  const uint low = (q_u8(blk + 4u + (ib >> 1)) >> (4u * (ib & 1u))) & 0xfu;
  const uint high = (QUANT_HALF((blk >> 1) + 1u) >> (2u * ib)) & 3u;
  const int sc = int(low | (high << 4)) - 32;
#endif
  for (uint i = 0u; i < 8u; i++) c[i] = q_bits(q, i, shift, 4u);
  return sc;
}
#endif

// DEQUANT_EXACT: each value rounded as the CPU's dequantize_row rounds it (no fused multiply-add).
#ifdef DEQUANT_EXACT
#define DEQUANT_OUT out precise
#else
#define DEQUANT_OUT out
#endif
void dequant8(uint blk, uint j, DEQUANT_OUT float w[8]) {
#if QTYPE == Q4_0 || QTYPE == Q4_1
  // Element e < 16: low nibble of qs[e]; e >= 16: high nibble of qs[e - 16].
  const uint qs = QTYPE == Q4_0 ? 2u : 4u;
  const float d = q_f16(blk);
  const uvec2 q = q_bytes8(blk + qs + (j & 15u));
  const uint shift = (j >> 4) * 4u;
#if QTYPE == Q4_0
  for (uint i = 0u; i < 8u; i++) w[i] = float(int(q_bits(q, i, shift, 4u)) - 8) * d;
#else
  const float m = q_f16(blk + 2u);
  for (uint i = 0u; i < 8u; i++) w[i] = float(q_bits(q, i, shift, 4u)) * d + m;
#endif
#elif QTYPE == Q5_0 || QTYPE == Q5_1
  // As Q4, plus the fifth bit of element e in bit e of qh.
  const uint qh_at = QTYPE == Q5_0 ? 2u : 4u;
  const float d = q_f16(blk);
  const uint qh = q_u32(blk + qh_at) >> j;
  const uvec2 q = q_bytes8(blk + qh_at + 4u + (j & 15u));
  const uint shift = (j >> 4) * 4u;
#if QTYPE == Q5_1
  const float m = q_f16(blk + 2u);
#endif
  for (uint i = 0u; i < 8u; i++) {
    const uint v = q_bits(q, i, shift, 4u) | (((qh >> i) & 1u) << 4);
#if QTYPE == Q5_0
    w[i] = float(int(v) - 16) * d;
#else
    w[i] = float(v) * d + m;
#endif
  }
#elif QTYPE == Q8_0 || QTYPE == Q8_1 || QTYPE == Q8_K
#if QTYPE == Q8_K
  const float d = uintBitsToFloat(q_u32(blk));
  const uint qs = 4u;
#else
  const float d = q_f16(blk);
  const uint qs = QTYPE == Q8_0 ? 2u : 4u;
#endif
  const uvec2 q = q_bytes8(blk + qs + j);
  for (uint i = 0u; i < 8u; i++) w[i] = float(q_i8(q, i)) * d;
#elif QTYPE == Q2_K
  // Layout: scales[16] qs[64] d dmin. In each 128-element half, element e' takes bits
  // 2 (e' / 32) of qs[32 half + e' % 32]; its group of 16 is e' / 16.
  const uint half_ = j >> 7, e = j & 127u, g = 8u * half_ + (e >> 4);
  const uint sc = q_u8(blk + g);
  const float dl = q_f16(blk + 80u) * float(sc & 0xfu), ml = q_f16(blk + 82u) * float(sc >> 4);
  const uvec2 q = q_bytes8(blk + 16u + 32u * half_ + (e & 31u));
  const uint shift = 2u * (e >> 5);
  for (uint i = 0u; i < 8u; i++) w[i] = dl * float(q_bits(q, i, shift, 2u)) - ml;
#elif QTYPE == Q3_K
  // Layout: hmask[32] qs[64] scales[12] d. Low 2 bits as Q2_K; the high bit of element e' of
  // half h is bit 4 h + e' / 32 of hmask[e' % 32] (clear: minus 4). Scales: 6-bit signed.
  const uint half_ = j >> 7, e = j & 127u, g = 8u * half_ + (e >> 4);
  const uint low = g < 8u ? q_u8(blk + 96u + g) & 0xfu : q_u8(blk + 96u + g - 8u) >> 4;
  const uint high = (q_u8(blk + 104u + (g & 3u)) >> (2u * (g >> 2))) & 3u;
  const float dl = q_f16(blk + 108u) * float(int(low | (high << 4)) - 32);
  const uvec2 q = q_bytes8(blk + 32u + 32u * half_ + (e & 31u));
  const uvec2 h = q_bytes8(blk + (e & 31u));
  const uint shift = 2u * (e >> 5), hshift = 4u * half_ + (e >> 5);
  for (uint i = 0u; i < 8u; i++)
    w[i] = dl * float(int(q_bits(q, i, shift, 2u)) - (q_bits(h, i, hshift, 1u) != 0u ? 0 : 4));
#elif QTYPE == Q4_K || QTYPE == Q5_K
  uint v[8];
  const uvec2 sm = k4_values8(blk, j, v);
  const float dl = q_f16(blk) * float(sm.x), ml = q_f16(blk + 2u) * float(sm.y);
  for (uint i = 0u; i < 8u; i++) w[i] = dl * float(v[i]) - ml;
#elif QTYPE == Q6_K
  // Layout: ql[128] qh[64] scales[16] (int8) d. In half h, element 32 s + l takes the low (s < 2)
  // or high nibble of ql[64 h + 32 (s % 2) + l] and bits 2 s of qh[32 h + l]; scale 8 h + 2 s + l / 16.
  const uint half_ = j >> 7, s = (j >> 5) & 3u, l = j & 31u;
  const int sc = bitfieldExtract(int(q_u8(blk + 192u + 8u * half_ + 2u * s + (l >> 4))), 0, 8);
  const float ds = q_f16(blk + 208u) * float(sc);
  const uvec2 ql = q_bytes8(blk + 64u * half_ + 32u * (s & 1u) + l);
  const uvec2 qh = q_bytes8(blk + 128u + 32u * half_ + l);
  const uint shift = s < 2u ? 0u : 4u;
  for (uint i = 0u; i < 8u; i++) {
    const int v = int(q_bits(ql, i, shift, 4u) | (q_bits(qh, i, 2u * s, 2u) << 4)) - 32;
    w[i] = ds * float(v);
  }
#elif QTYPE == IQ4_NL || QTYPE == IQ4_XS
  uint c[8];
  const int sc = iq4_codes8(blk, j, c);
#if QTYPE == IQ4_NL
  const float dl = q_f16(blk);
#else
  const float dl = q_f16(blk) * float(sc);
#endif
  for (uint i = 0u; i < 8u; i++) w[i] = dl * float(IQ4_VALUES[c[i]]);
#endif
}

#ifdef ACT_Q8
// For x quantized to 8 bits (qact.comp, ACT_Q8): elements j .. j+7 of the block at `blk` as the
// integers of the CPU's dot kernels (src/quantized/dot_scalar.cpp) with their scales. The 32-element
// formats: w = dw * v (+ mw); the K formats: w = dw * sc * v (- mw * mn) with the integer scale
// sc and min mn of the group (16 or 32 elements) holding j. QUANT_MIN: the format has a min.
#if QTYPE == Q4_1 || QTYPE == Q5_1 || QTYPE == Q2_K || QTYPE == Q4_K || QTYPE == Q5_K
#define QUANT_MIN 1
#endif
#if (QTYPE >= Q2_K && QTYPE <= Q8_K) || QTYPE == IQ4_XS
#define QUANT_K 1  // 256-element blocks: x's scales are per 256 (ggml's Q8_K)
#endif
#if QTYPE == Q8_1 || QTYPE == Q8_K
#error "quant.glsl: q8_1 and q8_k weights take f32 x (the CPU multiplies them in f32)"
#endif
#ifdef WICK_INT_DOT
// OpSDot over two words of four signed 8-bit integers (SPV_KHR_integer_dot_product; operand 0:
// PackedVectorFormat4x8Bit), through GL_EXT_spirv_intrinsics (the kernel enables it): exact
// integer sums, so the same isum as the products one by one.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int packed_format);
int dot8(uvec2 a, uvec2 b) { return sdot4x8(a.x, b.x, 0) + sdot4x8(a.y, b.y, 0); }
#endif

// Bytes n (each below 2 bias, bias a power of two <= 64) less bias, as signed bytes: each byte
// of n + 128 - bias stays below 256 (no carry), and flipping bit 7 takes the 128 off again.
uvec2 minus_bias(uvec2 n, uint bias) {
  return (n + uvec2((128u - bias) * 0x01010101u)) ^ uvec2(0x80808080u);
}
#if QTYPE == Q5_0 || QTYPE == Q5_1
// Bits 0-3 of b at bit 4 of bytes 0-3.
uint high_bits4(uint b) {
  return ((b & 1u) | ((b & 2u) << 7) | ((b & 4u) << 14) | ((b & 8u) << 21)) << 4;
}
#endif

// The values of elements j .. j+7 as 8 signed bytes (byte i of word i / 4: the words the
// packed dot products take), with their scales: decode8_packed for the formats whose values
// come as packed fields of the block (masks, shifts and an offset per word), decode8_int, one by
// one, for those that do not (a group scale computed per value, a lookup table); each is the
// other's unpacking or packing.
#if QTYPE == Q4_K || QTYPE == Q5_K || QTYPE == IQ4_NL || QTYPE == IQ4_XS
void decode8_int(uint blk, uint j, out int v[8], out float dw, out float mw, out int sc, out int mn) {
  mw = 0.0;
  sc = 1;
  mn = 0;
#if QTYPE == Q4_K || QTYPE == Q5_K
  uint u[8];
  const uvec2 sm = k4_values8(blk, j, u);
  sc = int(sm.x);
  mn = int(sm.y);
  dw = q_f16(blk);
  mw = q_f16(blk + 2u);
  for (uint i = 0u; i < 8u; i++) v[i] = int(u[i]);
#else
  uint c[8];
  sc = iq4_codes8(blk, j, c);
  dw = q_f16(blk);
  for (uint i = 0u; i < 8u; i++) v[i] = IQ4_VALUES[c[i]];
#endif
}

void decode8_packed(uint blk, uint j, out uvec2 v, out float dw, out float mw, out int sc,
                    out int mn) {
  int u[8];
  decode8_int(blk, j, u, dw, mw, sc, mn);
  v = uvec2(0u);
  for (uint i = 0u; i < 4u; i++) {
    v.x |= (uint(u[i]) & 0xffu) << (8u * i);
    v.y |= (uint(u[i + 4u]) & 0xffu) << (8u * i);
  }
}
#else
void decode8_packed(uint blk, uint j, out uvec2 v, out float dw, out float mw, out int sc,
                    out int mn) {
  mw = 0.0;
  sc = 1;
  mn = 0;
#if QTYPE == Q4_0 || QTYPE == Q4_1
  // Element e < 16: low nibble of qs[e]; e >= 16: high nibble of qs[e - 16].
  dw = q_f16(blk);
  const uvec2 n = (q_bytes8(blk + (QTYPE == Q4_0 ? 2u : 4u) + (j & 15u)) >> ((j >> 4) * 4u)) &
                  uvec2(0x0f0f0f0fu);
#if QTYPE == Q4_0
  v = minus_bias(n, 8u);
#else
  mw = q_f16(blk + 2u);
  v = n;
#endif
#elif QTYPE == Q5_0 || QTYPE == Q5_1
  // As Q4, plus the fifth bit of element e in bit e of qh.
  const uint qh_at = QTYPE == Q5_0 ? 2u : 4u;
  dw = q_f16(blk);
  const uint qh = q_u32(blk + qh_at) >> j;
  const uvec2 n = ((q_bytes8(blk + qh_at + 4u + (j & 15u)) >> ((j >> 4) * 4u)) &
                   uvec2(0x0f0f0f0fu)) |
                  uvec2(high_bits4(qh), high_bits4(qh >> 4));
#if QTYPE == Q5_0
  v = minus_bias(n, 16u);
#else
  mw = q_f16(blk + 2u);
  v = n;
#endif
#elif QTYPE == Q8_0
  dw = q_f16(blk);
  v = q_bytes8(blk + 2u + j);
#elif QTYPE == Q2_K
  const uint half_ = j >> 7, e = j & 127u, g = 8u * half_ + (e >> 4);
  const uint scm = q_u8(blk + g);
  sc = int(scm & 0xfu);
  mn = int(scm >> 4);
  dw = q_f16(blk + 80u);
  mw = q_f16(blk + 82u);
  v = (q_bytes8(blk + 16u + 32u * half_ + (e & 31u)) >> (2u * (e >> 5))) & uvec2(0x03030303u);
#elif QTYPE == Q3_K
  const uint half_ = j >> 7, e = j & 127u, g = 8u * half_ + (e >> 4);
  const uint low = g < 8u ? q_u8(blk + 96u + g) & 0xfu : q_u8(blk + 96u + g - 8u) >> 4;
  const uint high = (q_u8(blk + 104u + (g & 3u)) >> (2u * (g >> 2))) & 3u;
  sc = int(low | (high << 4)) - 32;
  dw = q_f16(blk + 108u);
  const uvec2 q = (q_bytes8(blk + 32u + 32u * half_ + (e & 31u)) >> (2u * (e >> 5))) &
                  uvec2(0x03030303u);
  const uvec2 h = (q_bytes8(blk + (e & 31u)) >> (4u * half_ + (e >> 5))) & uvec2(0x01010101u);
  v = minus_bias(q | (h << 2), 4u);  // the low 2 bits, minus 4 where the high bit is clear
#elif QTYPE == Q6_K
  const uint half_ = j >> 7, s = (j >> 5) & 3u, l = j & 31u;
  sc = bitfieldExtract(int(q_u8(blk + 192u + 8u * half_ + 2u * s + (l >> 4))), 0, 8);
  dw = q_f16(blk + 208u);
  const uvec2 ql = (q_bytes8(blk + 64u * half_ + 32u * (s & 1u) + l) >> (s < 2u ? 0u : 4u)) &
                   uvec2(0x0f0f0f0fu);
  const uvec2 qh = (q_bytes8(blk + 128u + 32u * half_ + l) >> (2u * s)) & uvec2(0x03030303u);
  v = minus_bias(ql | (qh << 4), 32u);
#endif
}

void decode8_int(uint blk, uint j, out int v[8], out float dw, out float mw, out int sc, out int mn) {
  uvec2 p;
  decode8_packed(blk, j, p, dw, mw, sc, mn);
  for (uint i = 0u; i < 8u; i++) v[i] = q_i8(p, i);
}
#endif

// Where qact.comp puts a row's values: word e / 4 holds element e; the scales follow the k / 4
// words of q: (d, s) per 32 elements, or d per 256 (QK: the weight's block is x's block).
uint act_scale_word(uint k, uint e) { return k / 4u + (QK == 32u ? 2u * (e / 32u) : e / 256u); }
#endif

// The push constants of the quantized matmuls (qmatvec.comp, qmatmul.comp): y (m, n_out) f32
// contiguous = x (m, k) @ W^T, x read through its strides, W rows `row_bytes` apart.
#include "include/params.glsl"
layout(push_constant) uniform QMatMulPush {
#if defined(ROPE_KV)  // qmatvec.comp's product to rope_kv_cache: ACT's fields, then rope's
  WICK_PARAMS_QMATVEC_ROPE(WICK_FIELD, WICK_ARRAY)
#elif defined(ACT_INLINE) || defined(SWIGLU_Q8)  // qact's fields follow (qmatvec.comp)
  WICK_PARAMS_QMATVEC_ACT(WICK_FIELD, WICK_ARRAY)
#else
  WICK_PARAMS_QMATMUL(WICK_FIELD, WICK_ARRAY)  // x_row: stride between rows of x; x_k: along k
#endif
} pc;
