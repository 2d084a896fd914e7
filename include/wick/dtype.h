// Element types and the 16-bit float formats.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <ostream>
#include <string_view>

namespace wick {

// i32 (added last, so the values of the others stay) runs every op on the CPU; GPU backends store,
// copy and convert it (to_dtype) but refuse compute ops on it with Error(Unsupported).
enum class DType : uint8_t { F32, F16, BF16, F64, U8, U32, I64, I32 };

inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                       DType::U8,  DType::U32, DType::I64,  DType::I32};

size_t dtype_size(DType dt);
const char* dtype_name(DType dt);
// Parses "f32", "f16", "bf16", "f64", "u8", "u32", "i64", "i32"; throws Error(Parse) otherwise.
DType parse_dtype(std::string_view name);
inline bool is_float(DType dt) {
  return dt == DType::F32 || dt == DType::F16 || dt == DType::BF16 || dt == DType::F64;
}
inline bool is_int(DType dt) { return !is_float(dt); }
std::ostream& operator<<(std::ostream& os, DType dt);

// IEEE 754 binary16, stored as bits. Conversions round to nearest even and keep NaN and inf.
struct f16 {
  uint16_t bits = 0;
  f16() = default;
  explicit f16(float v) : bits(from_float(v)) {}
  explicit operator float() const { return to_float(bits); }
  static f16 from_bits(uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
  static uint16_t from_float(float v);
  static float to_float(uint16_t b);
};

// bfloat16: the upper half of an f32. Conversion rounds to nearest even; NaN stays NaN.
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float v) : bits(from_float(v)) {}
  explicit operator float() const { return to_float(bits); }
  static bf16 from_bits(uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
  static uint16_t from_float(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  static float to_float(uint16_t b) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float v;
    std::memcpy(&v, &u, 4);
    return v;
  }
};

// Maps a C++ element type to its DType.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::F32;
};
template <>
struct dtype_of<f16> {
  static constexpr DType value = DType::F16;
};
template <>
struct dtype_of<bf16> {
  static constexpr DType value = DType::BF16;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::F64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::U8;
};
template <>
struct dtype_of<uint32_t> {
  static constexpr DType value = DType::U32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::I64;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::I32;
};

// Calls f(T{}) with T the C++ type of dt.
template <typename F>
decltype(auto) dispatch_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::F32:
      return f(float{});
    case DType::F16:
      return f(f16{});
    case DType::BF16:
      return f(bf16{});
    case DType::F64:
      return f(double{});
    case DType::U8:
      return f(uint8_t{});
    case DType::U32:
      return f(uint32_t{});
    case DType::I64:
      return f(int64_t{});
    case DType::I32:
      return f(int32_t{});
  }
  return f(float{});
}

// Element conversions used by every backend's host code: float types go through float/double,
// integer targets truncate toward zero as C++ does (NaN -> 0).
template <typename T>
inline double to_f64(T v) {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}
// double -> float rounding to odd: a following float -> f16/bf16 rounding then equals a direct,
// correctly rounded double -> f16/bf16 conversion (no double rounding).
inline float f64_to_f32_round_odd(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) == v || !(v == v)) return f;
  if (std::abs(static_cast<double>(f)) > std::abs(v)) f = std::nextafter(f, 0.0f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= 1u;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename T>
inline T from_f64(double v) {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
    return T(f64_to_f32_round_odd(v));
  } else if constexpr (std::is_integral_v<T>) {
    if (!(v == v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace wick
