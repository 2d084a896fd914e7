// GGML tensor types (the numeric ids GGUF files store) and their block geometry.
#pragma once

#include <cstdint>
#include <string_view>

namespace wick {

// clang-format off
enum class QuantType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ4_NL = 20, IQ4_XS = 23,  // 4-bit codes indexing a fixed non-linear table of 16 levels
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30,
};
// clang-format on

struct QuantTypeInfo {
  QuantType type;
  const char* name;     // "q4_0", "f32", ...
  int64_t block_elems;  // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
};

// nullptr when `id` is not a type wick knows (the caller reports a parse error).
const QuantTypeInfo* quant_type_info(uint32_t id);
inline const QuantTypeInfo* quant_type_info(QuantType t) {
  return quant_type_info(static_cast<uint32_t>(t));
}
// The type of that name ("q4_0", "f16", ...), or nullptr.
const QuantTypeInfo* quant_type_named(std::string_view name);

}  // namespace wick
