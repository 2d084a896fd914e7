// Element types. A kernel names a dtype by a token the host defines (DT=f16, SRC_DT=u8, ...):
//   STORAGE_T(D)  the type in the buffer        COMPUTE_T(D)  the type arithmetic runs in
//   LOAD(D, v)    storage -> compute            PACK(D, v)    compute -> storage (integers wrap)
//   CONVERT(D, v) any compute type -> storage of D, as wick converts between dtypes: floats round
//                 to nearest even, integer targets truncate toward zero and saturate, NaN -> 0.
//   *_W variants  the same in a 32/64-bit "wide" type, for function results and locals.
// f16 and bf16 are stored as 16-bit words and converted by bit manipulation, so every device
// rounds the same way (and bf16 needs no bf16 support).
#define T_f32 float
#define T_f16 uint16_t
#define T_bf16 uint16_t
#define T_f64 double
#define T_u8 uint8_t
#define T_u32 uint
#define T_i64 int64_t
#define T_i32 int
#define C_f32 float
#define C_f16 float
#define C_bf16 float
#define C_f64 double
#define C_u8 uint
#define C_u32 uint
#define C_i64 int64_t
#define C_i32 int

// 8- and 16-bit values cannot be function arguments or results without the arithmetic-type
// extensions (optional features), so helpers take and return them widened to 32 bits (W_*).
#define W_f32 float
#define W_f16 uint
#define W_bf16 uint
#define W_f64 double
#define W_u8 uint
#define W_u32 uint
#define W_i64 int64_t
#define W_i32 int

// Four elements as one vector: STORAGE4_T in a buffer (vectorized loads), COMPUTE4_T in
// registers and shared memory; LOAD4 converts the one to the other.
#define T4_f32 vec4
#define T4_f16 u16vec4
#define T4_bf16 u16vec4
#define T4_f64 dvec4
#define T4_u8 u8vec4
#define T4_u32 uvec4
#define T4_i64 i64vec4
#define T4_i32 ivec4
#define C4_f32 vec4
#define C4_f16 vec4
#define C4_bf16 vec4
#define C4_f64 dvec4
#define C4_u8 uvec4
#define C4_u32 uvec4
#define C4_i64 i64vec4
#define C4_i32 ivec4

#define STORAGE_T(D) CAT(T_, D)
#define COMPUTE_T(D) CAT(C_, D)
#define LOAD(D, v) CAT(load_, D)(CAT(W_, D)(v))
#define PACK(D, v) STORAGE_T(D)(CAT(pack_, D)(v))
#define CONVERT(D, v) STORAGE_T(D)(CAT(to_, D)(v))
#define STORAGE4_T(D) CAT(T4_, D)
#define COMPUTE4_T(D) CAT(C4_, D)
#define LOAD4(D, v) COMPUTE4_T(D)(LOAD(D, (v).x), LOAD(D, (v).y), LOAD(D, (v).z), LOAD(D, (v).w))
// The same, widened (for values a function returns or keeps in a local): store with STORE_W.
#define WIDE_T(D) CAT(W_, D)
#define PACK_W(D, v) CAT(pack_, D)(v)
#define CONVERT_W(D, v) CAT(to_, D)(v)
#define STORE_W(D, v) STORAGE_T(D)(v)

bool is_nan(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }

// ---- 16-bit floats ----------------------------------------------------------------------------

uint f32_to_f16_bits(float v) {
  const uint x = floatBitsToUint(v);
  const uint sign = (x >> 16) & 0x8000u;
  const uint mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) {  // inf or NaN (NaN keeps its top payload bits, quiet)
    return mag == 0x7f800000u ? sign | 0x7c00u : sign | 0x7e00u | ((mag >> 13) & 0x3ffu);
  }
  if (mag >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (mag < 0x38800000u) {                        // subnormal or zero: |v| < 2^-14
    if (mag < 0x33000000u) return sign;           // < 2^-25 rounds to 0
    const uint m = (mag & 0x7fffffu) | 0x800000u;
    const uint shift = 126u - (mag >> 23);  // 14..24
    uint h = m >> shift;
    const uint rem = m & ((1u << shift) - 1u), half_ulp = 1u << (shift - 1u);
    if (rem > half_ulp || (rem == half_ulp && (h & 1u) != 0u)) h++;
    return sign | h;
  }
  uint h = (mag - 0x38000000u) >> 13;  // rebias the exponent 127 -> 15
  const uint rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;
  return sign | h;
}

uint f32_to_bf16_bits(float v) {
  uint x = floatBitsToUint(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return x >> 16;
}

// ---- load / pack ------------------------------------------------------------------------------

float load_f32(float v) { return v; }
float load_f16(uint v) { return unpackHalf2x16(v).x; }
float load_bf16(uint v) { return uintBitsToFloat(v << 16); }
uint load_u8(uint v) { return v; }
uint load_u32(uint v) { return v; }

float pack_f32(float v) { return v; }
uint pack_f16(float v) { return f32_to_f16_bits(v); }
uint pack_bf16(float v) { return f32_to_bf16_bits(v); }
uint pack_u8(uint v) { return v & 0xffu; }  // wraps like C++ uint8_t arithmetic
uint pack_u32(uint v) { return v; }

// ---- conversions (casts) ----------------------------------------------------------------------

// Rounds to float with round-to-odd above 24 bits: a following f32 -> f16/bf16 rounding then
// equals a single correct rounding (no double rounding), as on the CPU.
float u32_to_f32_round_odd(uint v) {
  if (v < 0x1000000u) return float(v);
  const int shift = findMSB(v) - 23;
  uint m = v >> shift;
  if ((m << shift) != v) m |= 1u;
  return ldexp(float(m), shift);
}

float to_f32(float v) { return v; }
float to_f32(uint v) { return float(v); }
uint to_f16(float v) { return pack_f16(v); }
uint to_f16(uint v) { return pack_f16(u32_to_f32_round_odd(v)); }
uint to_bf16(float v) { return pack_bf16(v); }
uint to_bf16(uint v) { return pack_bf16(u32_to_f32_round_odd(v)); }

uint to_u8(float v) {
  if (is_nan(v) || v <= 0.0) return 0u;
  return v >= 255.0 ? 255u : uint(v);
}
uint to_u8(uint v) { return min(v, 255u); }
uint to_u32(float v) {
  if (is_nan(v) || v <= 0.0) return 0u;
  return v >= 4294967295.0 ? 0xffffffffu : uint(v);
}
uint to_u32(uint v) { return v; }

// i32: stored, copied and converted (to_dtype); compute kernels do not take it yet.
int load_i32(int v) { return v; }
int pack_i32(int v) { return v; }
float i32_to_f32_round_odd(int v) {
  const float f = u32_to_f32_round_odd(uint(abs(v)));  // abs(-2^31) reads as 2^31 unsigned
  return v < 0 ? -f : f;
}
float to_f32(int v) { return float(v); }
uint to_f16(int v) { return pack_f16(i32_to_f32_round_odd(v)); }
uint to_bf16(int v) { return pack_bf16(i32_to_f32_round_odd(v)); }
uint to_u8(int v) { return uint(clamp(v, 0, 255)); }
uint to_u32(int v) { return uint(max(v, 0)); }
int to_i32(float v) {
  if (is_nan(v)) return 0;
  if (v <= -2147483648.0) return int(0x80000000u);
  return v >= 2147483647.0 ? 0x7fffffff : int(v);
}
int to_i32(uint v) { return int(min(v, 0x7fffffffu)); }
int to_i32(int v) { return v; }

#ifdef WICK_F64
bool is_nan(double v) {
  const uvec2 w = unpackDouble2x32(v);
  const uint hi = w.y & 0x7fffffffu;
  return hi > 0x7ff00000u || (hi == 0x7ff00000u && w.x != 0u);
}
double load_f64(double v) { return v; }
double pack_f64(double v) { return v; }

float f64_to_f32_round_odd(double v) {
  float f = float(v);
  if (double(f) == v || is_nan(v)) return f;
  if (abs(double(f)) > abs(v)) f = uintBitsToFloat(floatBitsToUint(f) - 1u);  // toward zero
  return uintBitsToFloat(floatBitsToUint(f) | 1u);
}

float to_f32(double v) { return float(v); }
uint to_f16(double v) { return pack_f16(f64_to_f32_round_odd(v)); }
uint to_bf16(double v) { return pack_bf16(f64_to_f32_round_odd(v)); }
double to_f64(float v) { return double(v); }
double to_f64(double v) { return v; }
double to_f64(uint v) { return double(v); }
uint to_u8(double v) {
  if (is_nan(v) || v <= 0.0LF) return 0u;
  return v >= 255.0LF ? 255u : uint(v);
}
uint to_u32(double v) {
  if (is_nan(v) || v <= 0.0LF) return 0u;
  return v >= 4294967295.0LF ? 0xffffffffu : uint(v);
}
double to_f64(int v) { return double(v); }
int to_i32(double v) {
  if (is_nan(v)) return 0;
  if (v <= -2147483648.0LF) return int(0x80000000u);
  return v >= 2147483647.0LF ? 0x7fffffff : int(v);
}
#endif

#ifdef WICK_I64
int64_t load_i64(int64_t v) { return v; }
int64_t pack_i64(int64_t v) { return v; }

float i64_to_f32_round_odd(int64_t v) {
  const uint64_t a = uint64_t(v < 0l ? -v : v);
  float f;
  if (a < 0x1000000ul) {
    f = float(a);
  } else {
    const uint hi = uint(a >> 32);
    const int msb = hi != 0u ? 32 + findMSB(hi) : findMSB(uint(a));
    const int shift = msb - 23;
    uint m = uint(a >> shift);
    if ((uint64_t(m) << shift) != a) m |= 1u;
    f = ldexp(float(m), shift);
  }
  return v < 0l ? -f : f;
}

float to_f32(int64_t v) { return float(v); }
uint to_f16(int64_t v) { return pack_f16(i64_to_f32_round_odd(v)); }
uint to_bf16(int64_t v) { return pack_bf16(i64_to_f32_round_odd(v)); }
uint to_u8(int64_t v) { return uint(clamp(v, 0l, 255l)); }
uint to_u32(int64_t v) { return uint(clamp(v, 0l, 4294967295l)); }
int64_t to_i64(float v) {
  if (is_nan(v)) return 0l;
  if (v <= -9223372036854775808.0) return int64_t(0x8000000000000000ul);
  return v >= 9223372036854775807.0 ? 0x7fffffffffffffffl : int64_t(v);
}
int64_t to_i64(uint v) { return int64_t(v); }
int64_t to_i64(int64_t v) { return v; }
int64_t to_i64(int v) { return int64_t(v); }
int to_i32(int64_t v) { return int(clamp(v, -2147483648l, 2147483647l)); }
#ifdef WICK_F64
double to_f64(int64_t v) { return double(v); }
int64_t to_i64(double v) {
  if (is_nan(v)) return 0l;
  if (v <= -9223372036854775808.0LF) return int64_t(0x8000000000000000ul);
  return v >= 9223372036854775807.0LF ? 0x7fffffffffffffffl : int64_t(v);
}
#endif
#endif
