// Constants of the GGUF layout shared by the reader and the writer (see include/wick/gguf.h).
#pragma once

#include <bit>
#include <cstdint>

#include "wick/gguf.h"

namespace wick::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader and writer copy little-endian fields as they are");

inline constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr const char* kAlignmentKey = "general.alignment";
inline constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// Arrays of arrays deeper than this are refused: the parser recurses once per level.
inline constexpr int kMaxArrayDepth = 8;
// Smallest encodings, used to bound counts by the bytes left before anything is allocated.
inline constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // key length, type, a 1-byte value
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

inline bool valid_value_type(uint32_t id) {
  return id <= static_cast<uint32_t>(GgufValueType::F64);
}

// Bytes of a scalar value; 0 for string and array.
inline uint64_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::Bool:
      return 1;
    case GgufValueType::U16:
    case GgufValueType::I16:
      return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32:
      return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64:
      return 8;
    case GgufValueType::String:
    case GgufValueType::Array:
      return 0;
  }
  return 0;
}

// The fewest bytes one value of type t takes in a file.
inline uint64_t min_encoded_size(GgufValueType t) {
  if (t == GgufValueType::String) return 8;  // length
  if (t == GgufValueType::Array) return 12;  // element type + count
  return scalar_size(t);
}

inline bool is_power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

}  // namespace wick::gguf
