// Element types (the twin of include/dtype.glsl). A kernel names a dtype by a token the host
// defines (DT=f16, SRC_DT=u8, ...):
//   STORAGE_T(D)  the type in the buffer        COMPUTE_T(D)  the type arithmetic runs in
//   LOAD(D, v)    storage -> compute            PACK(D, v)    compute -> storage (integers wrap)
//   CONVERT(D, v) any compute type -> storage of D, as wick converts between dtypes: floats round
//                 to nearest even, integer targets truncate toward zero and saturate, NaN -> 0.
//   WRAP_T(D)     the unsigned type integer arithmetic wraps in (signed overflow is undefined in
//                 C++, and the optimiser relies on that): compute in it, cast back.
//   STORAGE4_T / COMPUTE4_T / LOAD4  four elements as one vector (16-byte loads for f32).
// GLSL needs widened *_W variants for 8/16-bit function results; CUDA does not, so WIDE_T,
// PACK_W, CONVERT_W and STORE_W are the plain forms (kept so that kernels read like their twins).
// f16 and bf16 are stored as 16-bit words and converted by our own code, bit-exact with the CPU
// backend (src/cpu/half_convert.h and wick/dtype.h), NaN payloads included.
#pragma once

#include "include/common.cuh"

#define T_f32 float
#define T_f16 uint16_t
#define T_bf16 uint16_t
#define T_f64 double
#define T_u8 uint8_t
#define T_u32 uint32_t
#define T_i64 int64_t
#define T_i32 int32_t
#define C_f32 float
#define C_f16 float
#define C_bf16 float
#define C_f64 double
#define C_u8 uint32_t
#define C_u32 uint32_t
#define C_i64 int64_t
#define C_i32 int32_t
#define U_f32 float
#define U_f16 float
#define U_bf16 float
#define U_f64 double
#define U_u8 uint32_t
#define U_u32 uint32_t
#define U_i64 uint64_t
#define U_i32 uint32_t

namespace wick {

// Four elements, aligned to their size so that one load or store moves them.
template <typename T>
struct alignas(4 * sizeof(T)) Vec4 {
  T x, y, z, w;
};

}  // namespace wick

#define STORAGE_T(D) CAT(T_, D)
#define COMPUTE_T(D) CAT(C_, D)
#define WRAP_T(D) CAT(U_, D)
#define LOAD(D, v) CAT(load_, D)(v)
#define PACK(D, v) CAT(pack_, D)(v)
#define CONVERT(D, v) CAT(to_, D)(v)
#define STORAGE4_T(D) wick::Vec4<STORAGE_T(D)>
#define COMPUTE4_T(D) wick::Vec4<COMPUTE_T(D)>
#define LOAD4(D, v) (COMPUTE4_T(D){LOAD(D, (v).x), LOAD(D, (v).y), LOAD(D, (v).z), LOAD(D, (v).w)})
#define WIDE_T(D) STORAGE_T(D)
#define PACK_W(D, v) PACK(D, v)
#define CONVERT_W(D, v) CONVERT(D, v)
#define STORE_W(D, v) (v)

WICK_DEV bool is_nan(float v) {
  return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u;
}
WICK_DEV bool is_nan(double v) {
  return (static_cast<uint64_t>(__double_as_longlong(v)) & 0x7fffffffffffffffull) >
         0x7ff0000000000000ull;
}

// ---- 16-bit floats ----------------------------------------------------------------------------

// The hardware converts between f16 and f32 (host builds of these headers, for a CPU emulation
// of the kernels, use the CPU backend's formulas instead).
// f16 -> f32 is exact. NaN is done here: the CPU keeps its payload (shifted into place, not
// quieted), which PTX does not promise.
WICK_DEV float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  if (em > 0x7c00u) return __uint_as_float(sign | 0x7f800000u | (em << 13));
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  if (em >= 0x7c00u) return __uint_as_float(sign | 0x7f800000u);
  if (em < 0x0400u)
    return __uint_as_float(sign |
                           __float_as_uint(static_cast<float>(em) * 5.9604644775390625e-08f));
  return __uint_as_float(sign | ((em << 13) + 0x38000000u));
#endif
}

// Rounds to nearest even (cvt.rn: subnormal results and overflow to inf as IEEE 754 says); a
// NaN keeps its top payload bits and turns quiet, as on the CPU.
WICK_DEV uint16_t f32_to_f16_bits(float v) {
  const uint32_t x = __float_as_uint(v);
  const uint32_t mag = x & 0x7fffffffu;
  const uint32_t sign = (x >> 16) & 0x8000u;
  if (mag > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
#ifdef __CUDA_ARCH__
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
#else
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520 and up: inf
  if (mag < 0x38800000u)  // |v| < 2^-14: 0.5 + |v| rounds at the f16 subnormal step
    return static_cast<uint16_t>(sign |
                                 (__float_as_uint(__uint_as_float(mag) + 0.5f) - 0x3f000000u));
  return static_cast<uint16_t>(sign | ((mag - 0x38000000u + 0x0fffu + ((mag >> 13) & 1u)) >> 13));
#endif
}

WICK_DEV float bf16_bits_to_f32(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

// Rounds to nearest even; NaN stays a quiet NaN with its payload's top bits.
WICK_DEV uint16_t f32_to_bf16_bits(float v) {
  const uint32_t x = __float_as_uint(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// ---- load / pack ------------------------------------------------------------------------------

WICK_DEV float load_f32(float v) {
  return v;
}
WICK_DEV float load_f16(uint16_t v) {
  return f16_bits_to_f32(v);
}
WICK_DEV float load_bf16(uint16_t v) {
  return bf16_bits_to_f32(v);
}
WICK_DEV double load_f64(double v) {
  return v;
}
WICK_DEV uint32_t load_u8(uint8_t v) {
  return v;
}
WICK_DEV uint32_t load_u32(uint32_t v) {
  return v;
}
WICK_DEV int64_t load_i64(int64_t v) {
  return v;
}

WICK_DEV float pack_f32(float v) {
  return v;
}
WICK_DEV uint16_t pack_f16(float v) {
  return f32_to_f16_bits(v);
}
WICK_DEV uint16_t pack_bf16(float v) {
  return f32_to_bf16_bits(v);
}
WICK_DEV double pack_f64(double v) {
  return v;
}
WICK_DEV uint8_t pack_u8(uint32_t v) {
  return static_cast<uint8_t>(v & 0xffu);
}  // wraps
WICK_DEV uint32_t pack_u32(uint32_t v) {
  return v;
}
WICK_DEV int64_t pack_i64(int64_t v) {
  return v;
}

// ---- conversions (casts) ----------------------------------------------------------------------

// Rounding to float with round-to-odd (truncate, then set the last bit if anything was lost): a
// following f32 -> f16/bf16 rounding then equals one correct rounding, as on the CPU.
WICK_DEV float sticky(float truncated, bool inexact) {
  return inexact ? __uint_as_float(__float_as_uint(truncated) | 1u) : truncated;
}
WICK_DEV float u32_to_f32_round_odd(uint32_t v) {
  const float f = __uint2float_rz(v);
  return sticky(f, static_cast<uint32_t>(f) != v);
}
WICK_DEV float i64_to_f32_round_odd(int64_t v) {
  const float f = __ll2float_rz(v);
  return sticky(f, static_cast<int64_t>(f) != v);
}
WICK_DEV float f64_to_f32_round_odd(double v) {
  const float f = __double2float_rz(v);
  return sticky(f, static_cast<double>(f) != v && !is_nan(v));
}

WICK_DEV float to_f32(float v) {
  return v;
}
WICK_DEV float to_f32(double v) {
  return static_cast<float>(v);
}
WICK_DEV float to_f32(uint32_t v) {
  return static_cast<float>(v);
}
WICK_DEV float to_f32(int64_t v) {
  return static_cast<float>(v);
}

WICK_DEV uint16_t to_f16(float v) {
  return pack_f16(v);
}
WICK_DEV uint16_t to_f16(double v) {
  return pack_f16(f64_to_f32_round_odd(v));
}
WICK_DEV uint16_t to_f16(uint32_t v) {
  return pack_f16(u32_to_f32_round_odd(v));
}
WICK_DEV uint16_t to_f16(int64_t v) {
  return pack_f16(i64_to_f32_round_odd(v));
}

WICK_DEV uint16_t to_bf16(float v) {
  return pack_bf16(v);
}
WICK_DEV uint16_t to_bf16(double v) {
  return pack_bf16(f64_to_f32_round_odd(v));
}
WICK_DEV uint16_t to_bf16(uint32_t v) {
  return pack_bf16(u32_to_f32_round_odd(v));
}
WICK_DEV uint16_t to_bf16(int64_t v) {
  return pack_bf16(i64_to_f32_round_odd(v));
}

WICK_DEV double to_f64(float v) {
  return static_cast<double>(v);
}
WICK_DEV double to_f64(double v) {
  return v;
}
WICK_DEV double to_f64(uint32_t v) {
  return static_cast<double>(v);
}
WICK_DEV double to_f64(int64_t v) {
  return static_cast<double>(v);
}

// Float -> integer: NaN -> 0, truncation toward zero, saturation at the type's bounds (the
// comparisons come first: an out-of-range C++ conversion is undefined).
WICK_DEV uint8_t to_u8(float v) {
  if (is_nan(v) || v <= 0.0f) return 0;
  return v >= 255.0f ? 255 : static_cast<uint8_t>(static_cast<uint32_t>(v));
}
WICK_DEV uint8_t to_u8(double v) {
  if (is_nan(v) || v <= 0.0) return 0;
  return v >= 255.0 ? 255 : static_cast<uint8_t>(static_cast<uint32_t>(v));
}
WICK_DEV uint8_t to_u8(uint32_t v) {
  return static_cast<uint8_t>(v < 255u ? v : 255u);
}
WICK_DEV uint8_t to_u8(int64_t v) {
  return static_cast<uint8_t>(v <= 0 ? 0 : v >= 255 ? 255 : v);
}

WICK_DEV uint32_t to_u32(float v) {
  if (is_nan(v) || v <= 0.0f) return 0u;
  return v >= 4294967295.0f ? 0xffffffffu : static_cast<uint32_t>(v);
}
WICK_DEV uint32_t to_u32(double v) {
  if (is_nan(v) || v <= 0.0) return 0u;
  return v >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(v);
}
WICK_DEV uint32_t to_u32(uint32_t v) {
  return v;
}
WICK_DEV uint32_t to_u32(int64_t v) {
  return static_cast<uint32_t>(v <= 0 ? 0 : v >= 0xffffffffll ? 0xffffffffll : v);
}

WICK_DEV int64_t to_i64(float v) {
  if (is_nan(v)) return 0;
  if (v <= -9223372036854775808.0f) return static_cast<int64_t>(0x8000000000000000ull);
  return v >= 9223372036854775807.0f ? 0x7fffffffffffffffll : static_cast<int64_t>(v);
}
WICK_DEV int64_t to_i64(double v) {
  if (is_nan(v)) return 0;
  if (v <= -9223372036854775808.0) return static_cast<int64_t>(0x8000000000000000ull);
  return v >= 9223372036854775807.0 ? 0x7fffffffffffffffll : static_cast<int64_t>(v);
}
WICK_DEV int64_t to_i64(uint32_t v) {
  return static_cast<int64_t>(v);
}
WICK_DEV int64_t to_i64(int64_t v) {
  return v;
}

// ---- i32: stored, copied and converted (to_dtype); compute kernels do not take it yet ---------

WICK_DEV int32_t load_i32(int32_t v) {
  return v;
}
WICK_DEV int32_t pack_i32(int32_t v) {
  return v;
}
WICK_DEV float to_f32(int32_t v) {
  return static_cast<float>(v);
}
WICK_DEV uint16_t to_f16(int32_t v) {
  return pack_f16(i64_to_f32_round_odd(v));
}
WICK_DEV uint16_t to_bf16(int32_t v) {
  return pack_bf16(i64_to_f32_round_odd(v));
}
WICK_DEV double to_f64(int32_t v) {
  return static_cast<double>(v);
}
WICK_DEV uint8_t to_u8(int32_t v) {
  return static_cast<uint8_t>(v <= 0 ? 0 : v >= 255 ? 255 : v);
}
WICK_DEV uint32_t to_u32(int32_t v) {
  return static_cast<uint32_t>(v <= 0 ? 0 : v);
}
WICK_DEV int64_t to_i64(int32_t v) {
  return v;
}
WICK_DEV int32_t to_i32(float v) {
  if (is_nan(v)) return 0;
  if (v <= -2147483648.0f) return static_cast<int32_t>(0x80000000u);
  return v >= 2147483647.0f ? 0x7fffffff : static_cast<int32_t>(v);
}
WICK_DEV int32_t to_i32(double v) {
  if (is_nan(v)) return 0;
  if (v <= -2147483648.0) return static_cast<int32_t>(0x80000000u);
  return v >= 2147483647.0 ? 0x7fffffff : static_cast<int32_t>(v);
}
WICK_DEV int32_t to_i32(uint32_t v) {
  return static_cast<int32_t>(v < 0x7fffffffu ? v : 0x7fffffffu);
}
WICK_DEV int32_t to_i32(int64_t v) {
  return static_cast<int32_t>(v <= -2147483648ll  ? -2147483648ll
                              : v >= 2147483647ll ? 2147483647ll
                                                  : v);
}
WICK_DEV int32_t to_i32(int32_t v) {
  return v;
}
