// f32 -> the 32-element block formats, following ggml's reference quantizers step by step
// (same f32 operations in the same order), so files written by wick match llama.cpp's bit for bit.
#include <algorithm>
#include <cfloat>

#include "quantized/blocks.h"
#include "quantized/formats.h"

namespace wick::quantized {

namespace {

// The element of largest magnitude, with its sign (the first one on ties).
float signed_absmax(const float* x) {
  float amax = 0, max = 0;
  for (int j = 0; j < kQK; j++) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, float* mn, float* mx) {
  *mn = FLT_MAX;
  *mx = -FLT_MAX;
  for (int j = 0; j < kQK; j++) {
    *mn = std::min(*mn, x[j]);
    *mx = std::max(*mx, x[j]);
  }
}

// Symmetric formats map the signed extreme to the lowest level (-2^(bits-1)), so that value is
// represented exactly; the other side tops out one level short and is clamped there.
template <int kBits>
void quantize_symmetric(const float* x, float* d_out, uint8_t* q) {
  constexpr int kHalf = 1 << (kBits - 1), kTop = (1 << kBits) - 1;
  const float d = signed_absmax(x) / static_cast<float>(-kHalf);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; j++) {
    // Truncation of a value >= 0 is floor: +0.5 rounds to nearest.
    const int v = static_cast<int8_t>(x[j] * id + (static_cast<float>(kHalf) + 0.5f));
    q[j] = static_cast<uint8_t>(std::min(kTop, v));
  }
  *d_out = d;
}

// Asymmetric formats spread [min, max] over all 2^bits levels.
template <int kBits>
void quantize_affine(const float* x, float* d_out, float* m_out, uint8_t* q) {
  constexpr int kTop = (1 << kBits) - 1;
  float mn, mx;
  min_max(x, &mn, &mx);
  const float d = (mx - mn) / static_cast<float>(kTop);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; j++) {
    const int v = static_cast<uint8_t>((x[j] - mn) * id + 0.5f);
    q[j] = static_cast<uint8_t>(std::min(kTop, v));
  }
  *d_out = d;
  *m_out = mn;
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; j++)
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
}

void pack_fifth_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK; j++) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, 4);
}

// 8-bit symmetric: d = amax / 127, q = round(x / d) (half away from zero, as roundf).
float quantize_q8(const float* x, int8_t* q) {
  float amax = 0;
  for (int j = 0; j < kQK; j++) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; j++) q[j] = static_cast<int8_t>(std::round(x[j] * id));
  return d;
}

}  // namespace

void quantize_row_q4_0(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK; i++, x += kQK) {
    float d;
    uint8_t q[kQK];
    quantize_symmetric<4>(x, &d, q);
    b[i].d = f32_to_f16(d);
    pack_nibbles(q, b[i].qs);
  }
}

void quantize_row_q4_1(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQK; i++, x += kQK) {
    float d, m;
    uint8_t q[kQK];
    quantize_affine<4>(x, &d, &m, q);
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(m);
    pack_nibbles(q, b[i].qs);
  }
}

void quantize_row_q5_0(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / kQK; i++, x += kQK) {
    float d;
    uint8_t q[kQK];
    quantize_symmetric<5>(x, &d, q);
    b[i].d = f32_to_f16(d);
    pack_nibbles(q, b[i].qs);
    pack_fifth_bits(q, b[i].qh);
  }
}

void quantize_row_q5_1(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / kQK; i++, x += kQK) {
    float d, m;
    uint8_t q[kQK];
    quantize_affine<5>(x, &d, &m, q);
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(m);
    pack_nibbles(q, b[i].qs);
    pack_fifth_bits(q, b[i].qh);
  }
}

void quantize_row_q8_0(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; i++, x += kQK) b[i].d = f32_to_f16(quantize_q8(x, b[i].qs));
}

void quantize_row_q8_1(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; i++, x += kQK) {
    const float d = quantize_q8(x, b[i].qs);
    int sum = 0;
    for (int j = 0; j < kQK; j++) sum += b[i].qs[j];
    b[i].d = f32_to_f16(d);
    b[i].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

}  // namespace wick::quantized
