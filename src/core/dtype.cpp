#include "wick/dtype.h"

#include "wick/error.h"

namespace wick {

size_t dtype_size(DType dt) {
  switch (dt) {
    case DType::F32: case DType::U32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::F64: case DType::I64: return 8;
    case DType::U8: return 1;
  }
  return 0;
}

const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F64: return "f64";
    case DType::U8: return "u8";
    case DType::U32: return "u32";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType dt : kAllDTypes)
    if (name == dtype_name(dt)) return dt;
  fail(ErrorKind::Parse, "parse_dtype", "unknown dtype '", name, "'");
}

std::ostream& operator<<(std::ostream& os, DType dt) { return os << dtype_name(dt); }

// binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
uint16_t f16::from_float(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or NaN
    if (absx == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {  // result is subnormal or zero: 2^-14 > |v|
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25 rounds to 0
    const uint32_t exp = absx >> 23;  // 102..112
    const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14..24
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((absx - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return static_cast<uint16_t>(sign | h);
}

float f16::to_float(uint16_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x8000u) << 16;
  const uint32_t exp = (b >> 10) & 0x1fu;
  uint32_t mant = b & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float v;
  std::memcpy(&v, &x, 4);
  return v;
}

}  // namespace wick
