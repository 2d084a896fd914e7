#version 450
// y = op(x) for one dtype DT; OP (a specialization constant) is wick's UnaryOp value.
// DT_KIND: 0 f32/f16/bf16 (float math), 1 f64, 2 u8/u32, 3 i64. PARAM_T: type of p0, p1.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/math.glsl"

#define N_INPUTS 1
#define OUT_STRIDED 0
#define PUSH_EXTRA PARAM_T p0; PARAM_T p1;
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
  // Float math. f64 takes only the ops GLSL has in double precision (the host refuses others).
  const CT zero = CT(0), one = CT(1);
  CT r = v;
  if (OP == NEG) r = -v;
  else if (OP == ABS) r = abs(v);
  else if (OP == SQRT) r = sqrt(v);
  else if (OP == SQR) r = v * v;
  else if (OP == RECIP) r = one / v;
  else if (OP == RELU) r = v > zero ? v : zero;
  else if (OP == FLOOR) r = floor(v);
  else if (OP == CEIL) r = ceil(v);
  else if (OP == ROUND) r = round_away(v);
  else if (OP == SIGN) r = v > zero ? one : (v < zero ? -one : zero);
  else if (OP == AFFINE) r = v * pc.p0 + pc.p1;
  else if (OP == CLAMP) r = min(max(v, pc.p0), pc.p1);
#if DT_KIND == 0
  else if (OP == EXP) r = exp(v);
  else if (OP == LOG) r = log(v);
  else if (OP == SIN) r = sin(v);
  else if (OP == COS) r = cos(v);
  else if (OP == TANH) r = tanh_stable(v);
  else if (OP == GELU) r = 0.5 * v * (1.0 + tanh_stable(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  else if (OP == GELU_ERF) r = 0.5 * v * (1.0 + erf_approx(v * 0.7071067811865476));
  else if (OP == ERF) r = erf_approx(v);
  else if (OP == SILU) r = v / (1.0 + exp(-v));
  else if (OP == SIGMOID) r = 1.0 / (1.0 + exp(-v));
  else if (OP == POWF) r = pow_c(v, pc.p0);
  else if (OP == ELU) r = v > 0.0 ? v : pc.p0 * (exp(v) - 1.0);
#endif
  return PACK_W(DT, r);
#else
  // Integers: exact ops wrap like C++ integer arithmetic; affine and clamp go through PARAM_T
  // and convert back with saturation, as wick converts floats to integers.
  if (OP == AFFINE) return CONVERT_W(DT, PARAM_T(v) * pc.p0 + pc.p1);
  if (OP == CLAMP) return CONVERT_W(DT, min(max(PARAM_T(v), pc.p0), pc.p1));
  const CT zero = CT(0), one = CT(1);
  CT r = v;
  if (OP == NEG) r = zero - v;
  else if (OP == SQR) r = v * v;
#if DT_KIND == 3
  else if (OP == ABS) r = v < zero ? -v : v;
  else if (OP == RELU) r = v > zero ? v : zero;
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
