// Block formats -> f32. Each routine follows the format's definition in blocks.h; the arithmetic
// (f32 products in ggml's order) matches ggml's dequantizers bit for bit.
#include "quantized/blocks.h"
#include "quantized/formats.h"

namespace wick::quantized {

void dequantize_row_q4_0(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; j++) {
      y[j] = static_cast<float>((b[i].qs[j] & 0xF) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; j++) {
      y[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      y[j + kQK / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

namespace {
// The 5-bit value of element j (0..31) of a Q5 block.
inline int q5_value(const uint8_t* qs, uint32_t qh, int j) {
  const int low = j < kQK / 2 ? qs[j] & 0xF : qs[j - kQK / 2] >> 4;
  return low | static_cast<int>(((qh >> j) & 1u) << 4);
}
}  // namespace

void dequantize_row_q5_0(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kQK; j++) y[j] = static_cast<float>(q5_value(b[i].qs, qh, j) - 16) * d;
  }
}

void dequantize_row_q5_1(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kQK; j++) y[j] = static_cast<float>(q5_value(b[i].qs, qh, j)) * d + m;
  }
}

void dequantize_row_q8_0(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; j++) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequantize_row_q8_1(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / kQK; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; j++) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

// Q2_K: each 128-element half uses 32 bytes of qs; element 32*s + l of the half takes bits
// 2s..2s+1 of byte l, and its group of 16 is (32*s + l) / 16.
void dequantize_row_q2_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQKK; i++) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int half = 0; half < 2; half++) {
      const uint8_t* q = b[i].qs + 32 * half;
      for (int g = 0; g < 8; g++) {  // group of 16 within the half
        const uint8_t sc = b[i].scales[8 * half + g];
        const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
        const int shift = 2 * (g / 2), off = 16 * (g % 2);
        for (int l = 0; l < 16; l++) *y++ = dl * static_cast<float>((q[off + l] >> shift) & 3) - ml;
      }
    }
  }
}

// Q3_K: like Q2_K for the low 2 bits; the high bit of element 32*s + l (s = 0..7 over the whole
// block) is bit s of hmask[l]; a clear high bit means "minus 4".
void dequantize_row_q3_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQKK; i++) {
    const float d = f16_to_f32(b[i].d);
    int8_t sc[16];
    q3k_scales(b[i].scales, sc);
    for (int half = 0; half < 2; half++) {
      const uint8_t* q = b[i].qs + 32 * half;
      for (int g = 0; g < 8; g++) {
        const float dl = d * static_cast<float>(sc[8 * half + g]);
        const int shift = 2 * (g / 2), off = 16 * (g % 2);
        const uint8_t hbit = static_cast<uint8_t>(1u << (4 * half + g / 2));
        for (int l = 0; l < 16; l++) {
          const int low = (q[off + l] >> shift) & 3;
          const int v = low - ((b[i].hmask[off + l] & hbit) ? 0 : 4);
          *y++ = dl * static_cast<float>(v);
        }
      }
    }
  }
}

// Q4_K: each 64-element chunk c uses 32 bytes of qs: low nibbles are group 2c, high group 2c+1.
void dequantize_row_q4_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQKK; i++) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int c = 0; c < 4; c++) {
      const uint8_t* q = b[i].qs + 32 * c;
      for (int h = 0; h < 2; h++) {
        uint8_t sc, mn;
        k4_scale_min(2 * c + h, b[i].scales, &sc, &mn);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
        for (int l = 0; l < 32; l++)
          *y++ = dl * static_cast<float>(h ? q[l] >> 4 : q[l] & 0xF) - ml;
      }
    }
  }
}

// Q5_K: as Q4_K; the fifth bit of element l of group g is bit g of qh[l].
void dequantize_row_q5_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQKK; i++) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int c = 0; c < 4; c++) {
      const uint8_t* q = b[i].qs + 32 * c;
      for (int h = 0; h < 2; h++) {
        const int g = 2 * c + h;
        uint8_t sc, mn;
        k4_scale_min(g, b[i].scales, &sc, &mn);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
        for (int l = 0; l < 32; l++) {
          const int v = (h ? q[l] >> 4 : q[l] & 0xF) + (((b[i].qh[l] >> g) & 1) << 4);
          *y++ = dl * static_cast<float>(v) - ml;
        }
      }
    }
  }
}

// Q6_K: each 128-element half uses 64 bytes of ql and 32 of qh. Element 32*s + l (s = 0..3) takes
// the low nibble (s even) or high nibble (s odd) of ql[l + 32*(s%2)] and bits 2s..2s+1 of qh[l].
void dequantize_row_q6_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQKK; i++) {
    const float d = f16_to_f32(b[i].d);
    for (int half = 0; half < 2; half++) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const uint8_t* qh = b[i].qh + 32 * half;
      const int8_t* sc = b[i].scales + 8 * half;
      for (int s = 0; s < 4; s++) {
        for (int l = 0; l < 32; l++) {
          const uint8_t lo = ql[l + 32 * (s % 2)];
          const int v = ((s < 2 ? lo & 0xF : lo >> 4) | (((qh[l] >> (2 * s)) & 3) << 4)) - 32;
          y[32 * s + l] = d * static_cast<float>(sc[2 * s + l / 16]) * static_cast<float>(v);
        }
      }
      y += 128;
    }
  }
}

void dequantize_row_q8_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQKK; i++, y += kQKK)
    for (int j = 0; j < kQKK; j++) y[j] = b[i].d * static_cast<float>(b[i].qs[j]);
}

// IQ4_NL: Q4_0's nibble order, codes index the non-linear table.
void dequantize_row_iq4_nl(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQK; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; j++) {
      y[j] = d * static_cast<float>(kIq4Values[b[i].qs[j] & 0xF]);
      y[j + kQK / 2] = d * static_cast<float>(kIq4Values[b[i].qs[j] >> 4]);
    }
  }
}

// IQ4_XS: per sub-block of 32, dl = d * (ls - 32), then as IQ4_NL.
void dequantize_row_iq4_xs(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQKK; i++) {
    const float d = f16_to_f32(b[i].d);
    for (int ib = 0; ib < kQKK / kQK; ib++, y += kQK) {
      const float dl = d * static_cast<float>(iq4xs_scale(b[i], ib));
      const uint8_t* qs = b[i].qs + 16 * ib;
      for (int j = 0; j < kQK / 2; j++) {
        y[j] = dl * static_cast<float>(kIq4Values[qs[j] & 0xF]);
        y[j + kQK / 2] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace wick::quantized
