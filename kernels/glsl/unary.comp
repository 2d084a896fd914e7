#version 450
// y = op(x) for one dtype DT; OP (a specialization constant) is wick's UnaryOp value.
// DT_KIND: 0 f32/f16/bf16 (float math), 1 f64, 2 u8/u32, 3 i64. PARAM_T: type of p0, p1.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/math.glsl"
#ifdef WICK_F64
#include "include/math64.glsl"
#endif

#define N_INPUTS 1
#define OUT_STRIDED 0
#define PUSH_EXTRA WICK_PARAMS_UNARY_EXTRA(WICK_FIELD, WICK_ARRAY)
#include "include/strided.glsl"

layout(constant_id = 0) const uint OP = 0u;
layout(set = 0, binding = 0) readonly buffer In { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { STORAGE_T(DT) y[]; };

#define CT COMPUTE_T(DT)
// wick::backend::UnaryOp
#define NEG 0u
#define ABS 1u
#define EXP 2u
#define LOG 3u
#define SIN 4u
#define COS 5u
#define TANH 6u
#define SQRT 7u
#define SQR 8u
#define RECIP 9u
#define RELU 10u
#define GELU 11u
#define GELU_ERF 12u
#define ERF 13u
#define SILU 14u
#define SIGMOID 15u
#define FLOOR 16u
#define CEIL 17u
#define ROUND 18u
#define SIGN 19u
#define AFFINE 20u
#define POWF 21u
#define ELU 22u
#define CLAMP 23u

WIDE_T(DT) apply(CT v) {
#if DT_KIND <= 1
  // Float math: f32/f16/bf16 in float with GLSL's functions, f64 with include/math64.glsl.
  const CT zero = CT(0), one = CT(1);
  CT r = v;
#if DT_KIND == 0
  // Sign, zero and order decided on the bits: exact on subnormals under flush-to-zero too.
  if (OP == NEG) r = neg_bits(v);
  else if (OP == ABS) r = abs_bits(v);
  else if (OP == SQRT) r = sqrt_c(v);
  else if (OP == RELU) r = relu_bits(v);
  else if (OP == SIGN) r = sign_bits(v);
  else if (OP == CLAMP) r = clamp_bits(v, pc.p0, pc.p1);
#else
  if (OP == NEG) r = -v;
  else if (OP == ABS) r = abs(v);
  else if (OP == SQRT) r = sqrt(v);
  else if (OP == RELU) r = v < zero ? zero : v;  // NaN stays NaN
  else if (OP == SIGN) r = v > zero ? one : (v < zero ? -one : v);  // keeps -0 and NaN
  else if (OP == CLAMP) r = is_nan(v) ? v : min(max(v, pc.p0), pc.p1);
#endif
  else if (OP == SQR) r = v * v;
  else if (OP == RECIP) r = one / v;
  else if (OP == FLOOR) r = floor(v);
  else if (OP == CEIL) r = ceil(v);
  else if (OP == ROUND) r = round_away(v);
  else if (OP == AFFINE) r = v * pc.p0 + pc.p1;
#if DT_KIND == 0
  // include/math.glsl: each within a few ulp, small arguments and tails included.
  else if (OP == EXP) r = exp_accurate(v);
  else if (OP == LOG) r = log_accurate(v);
  else if (OP == SIN) r = sin_accurate(v);
  else if (OP == COS) r = cos_accurate(v);
  else if (OP == TANH) r = tanh_accurate(v);
  else if (OP == GELU) r = gelu_tanh(v);
  else if (OP == GELU_ERF) r = gelu_erf(v);
  else if (OP == ERF) r = erf_accurate(v);
  else if (OP == SILU) r = silu_accurate(v);
  else if (OP == SIGMOID) r = sigmoid_accurate(v);
  else if (OP == POWF) r = pow_c(v, pc.p0);
  else if (OP == ELU) r = v > 0.0 ? v : pc.p0 * expm1_nonpositive(v);  // NaN: the second
#else
  else if (OP == EXP) r = exp64(v);
  else if (OP == LOG) r = log64(v);
  else if (OP == SIN) r = sin64(v);
  else if (OP == COS) r = cos64(v);
  else if (OP == TANH) r = tanh64(v);
  else if (OP == GELU) r = gelu_tanh64(v);
  else if (OP == GELU_ERF) r = gelu_erf64(v);
  else if (OP == ERF) r = erf64(v);
  else if (OP == SILU) r = v * sigmoid64(v);
  else if (OP == SIGMOID) r = sigmoid64(v);
  else if (OP == POWF) r = pow64(v, pc.p0);
  else if (OP == ELU) r = v > 0.0LF ? v : pc.p0 * expm1_64(v);
#endif
  return PACK_W(DT, r);
#else
  // Integers: exact ops wrap like C++ integer arithmetic; affine and clamp go through PARAM_T
  // and convert back with saturation, as wick converts floats to integers.
  if (OP == AFFINE) return CONVERT_W(DT, PARAM_T(v) * pc.p0 + pc.p1);
  if (OP == CLAMP) {  // values inside the bounds stay exact, whatever PARAM_T can hold
    if (PARAM_T(v) < pc.p0) return CONVERT_W(DT, pc.p0);
    if (PARAM_T(v) > pc.p1) return CONVERT_W(DT, pc.p1);
    return PACK_W(DT, v);
  }
  const CT zero = CT(0), one = CT(1);
  CT r = v;
  if (OP == NEG) r = zero - v;
  else if (OP == SQR) r = v * v;
#if DT_KIND == 3
  else if (OP == ABS) r = v < zero ? -v : v;
  else if (OP == RELU) r = v < zero ? zero : v;  // NaN stays NaN
  else if (OP == SIGN) r = v > zero ? one : (v < zero ? -one : zero);
#else
  else if (OP == SIGN) r = v > zero ? one : zero;
#endif
  return PACK_W(DT, r);
#endif
}

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint off[N_STRIDED];
  strided_offsets(i, off);
  y[out_offset(i)] = STORE_W(DT, apply(LOAD(DT, x[off[0]])));
}
