#include "wick/quant_type.h"

namespace wick {

namespace {
// Sizes follow ggml's block structs (f16 scales are 2 bytes, Q8_K's scale is an f32).
constexpr QuantTypeInfo kTypes[] = {
    {QuantType::F32, "f32", 1, 4},         {QuantType::F16, "f16", 1, 2},
    {QuantType::Q4_0, "q4_0", 32, 18},     {QuantType::Q4_1, "q4_1", 32, 20},
    {QuantType::Q5_0, "q5_0", 32, 22},     {QuantType::Q5_1, "q5_1", 32, 24},
    {QuantType::Q8_0, "q8_0", 32, 34},     {QuantType::Q8_1, "q8_1", 32, 36},
    {QuantType::Q2_K, "q2_k", 256, 84},    {QuantType::Q3_K, "q3_k", 256, 110},
    {QuantType::Q4_K, "q4_k", 256, 144},   {QuantType::Q5_K, "q5_k", 256, 176},
    {QuantType::Q6_K, "q6_k", 256, 210},   {QuantType::Q8_K, "q8_k", 256, 292},
    {QuantType::IQ4_NL, "iq4_nl", 32, 18}, {QuantType::IQ4_XS, "iq4_xs", 256, 136},
    {QuantType::I8, "i8", 1, 1},           {QuantType::I16, "i16", 1, 2},
    {QuantType::I32, "i32", 1, 4},         {QuantType::I64, "i64", 1, 8},
    {QuantType::F64, "f64", 1, 8},         {QuantType::BF16, "bf16", 1, 2},
};
}  // namespace

const QuantTypeInfo* quant_type_info(uint32_t id) {
  for (const QuantTypeInfo& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return &t;
  return nullptr;
}

const QuantTypeInfo* quant_type_named(std::string_view name) {
  for (const QuantTypeInfo& t : kTypes)
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace wick
