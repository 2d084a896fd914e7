// The table of supported formats, and the plain (one element per "block") f32/f16/bf16 rows.
#include "quantized/formats.h"

#include <cstring>

#include "wick/dtype.h"

namespace wick::quantized {

namespace {

void dequantize_row_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void quantize_row_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

// 16-bit words are read with memcpy: plain rows need only 2-byte alignment, which may not hold
// for a view into a file.
template <typename Half>
void dequantize_row_half(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; i++) {
    uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    dst[i] = Half::to_float(bits);
  }
}
template <typename Half>
void quantize_row_half(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; i++) {
    const uint16_t bits = Half::from_float(src[i]);
    std::memcpy(p + 2 * i, &bits, 2);
  }
}

constexpr FormatOps kFormats[] = {
    {QuantType::F32, dequantize_row_f32, quantize_row_f32},
    {QuantType::F16, dequantize_row_half<f16>, quantize_row_half<f16>},
    {QuantType::BF16, dequantize_row_half<bf16>, quantize_row_half<bf16>},
    {QuantType::Q4_0, dequantize_row_q4_0, quantize_row_q4_0},
    {QuantType::Q4_1, dequantize_row_q4_1, quantize_row_q4_1},
    {QuantType::Q5_0, dequantize_row_q5_0, quantize_row_q5_0},
    {QuantType::Q5_1, dequantize_row_q5_1, quantize_row_q5_1},
    {QuantType::Q8_0, dequantize_row_q8_0, quantize_row_q8_0},
    {QuantType::Q8_1, dequantize_row_q8_1, quantize_row_q8_1},
    {QuantType::Q2_K, dequantize_row_q2_k, quantize_row_q2_k},
    {QuantType::Q3_K, dequantize_row_q3_k, quantize_row_q3_k},
    {QuantType::Q4_K, dequantize_row_q4_k, quantize_row_q4_k},
    {QuantType::Q5_K, dequantize_row_q5_k, quantize_row_q5_k},
    {QuantType::Q6_K, dequantize_row_q6_k, quantize_row_q6_k},
    {QuantType::Q8_K, dequantize_row_q8_k, quantize_row_q8_k},
    {QuantType::IQ4_NL, dequantize_row_iq4_nl, quantize_row_iq4_nl},
    {QuantType::IQ4_XS, dequantize_row_iq4_xs, quantize_row_iq4_xs},
};

}  // namespace

const FormatOps* format_ops(QuantType t) {
  for (const FormatOps& f : kFormats)
    if (f.type == t) return &f;
  return nullptr;
}

}  // namespace wick::quantized
