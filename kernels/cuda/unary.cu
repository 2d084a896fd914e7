// y = op(x) for one dtype DT; OP (WICK_SPEC_0) is wick's UnaryOp value.
// DT_KIND: 0 f32/f16/bf16 (float math), 1 f64, 2 u8/u32, 3 i64. PARAM_T: type of p0, p1.
// Bindings: 0 x, 1 y (contiguous).
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/math.cuh"

#define N_INPUTS 1
#define OUT_STRIDED 0
#define PARAMS_EXTRA WICK_PARAMS_UNARY_EXTRA
#include "include/strided.cuh"

#ifndef WICK_SPEC_0
#error "unary.cu needs WICK_SPEC_0, the op"
#endif
constexpr uint32_t OP = WICK_SPEC_0;

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

typedef COMPUTE_T(DT) CT;

#if DT_KIND <= 1
// Float math in CT (float for f32/f16/bf16, double for f64), written as the CPU writes it
// (src/cpu/unary.cpp), with CUDA's float or double functions.
WICK_DEV CT apply(CT v, CT p0, CT p1) {
  const CT zero = CT(0), one = CT(1);
  if (OP == NEG) return neg_c(v);
  if (OP == ABS) return abs_c(v);
  if (OP == EXP) return exp(v);
  if (OP == LOG) return log(v);
  if (OP == SIN) return sin(v);
  if (OP == COS) return cos(v);
  if (OP == TANH) return tanh(v);
  if (OP == SQRT) return sqrt(v);
  if (OP == SQR) return v * v;
  if (OP == RECIP) return one / v;
  if (OP == RELU) return relu_c(v);
  if (OP == GELU) return gelu_tanh(v);
  if (OP == GELU_ERF) return gelu_erf(v);
  if (OP == ERF) return erf(v);
  if (OP == SILU) return silu_c(v);
  if (OP == SIGMOID) return sigmoid_c(v);
  if (OP == FLOOR) return floor(v);
  if (OP == CEIL) return ceil(v);
  if (OP == ROUND) return round_away(v);
  if (OP == SIGN) return sign_c(v);
  if (OP == AFFINE) return v * p0 + p1;
  if (OP == POWF) return pow_c(v, p0);
  if (OP == ELU) return v > zero ? v : p0 * expm1(zero < v ? zero : v);  // NaN stays NaN
  if (OP == CLAMP) return clamp_c(v, p0, p1);
  return v;
}
#else
// Integers: exact ops wrap like C++ integer arithmetic (in WRAP_T: signed overflow is undefined);
// affine and clamp go through PARAM_T and convert back with saturation, as wick converts floats
// to integers.
typedef WRAP_T(DT) WT;
WICK_DEV STORAGE_T(DT) apply(CT v, PARAM_T p0, PARAM_T p1) {
  if (OP == AFFINE) return CONVERT(DT, static_cast<PARAM_T>(v) * p0 + p1);
  if (OP == CLAMP) {  // values inside the bounds stay exact, whatever PARAM_T can hold
    if (static_cast<PARAM_T>(v) < p0) return CONVERT(DT, p0);
    if (static_cast<PARAM_T>(v) > p1) return CONVERT(DT, p1);
    return PACK(DT, v);
  }
  const CT zero = CT(0), one = CT(1);
  CT r = v;
  if (OP == NEG) r = static_cast<CT>(WT(0) - static_cast<WT>(v));
  if (OP == SQR) r = static_cast<CT>(static_cast<WT>(v) * static_cast<WT>(v));
#if DT_KIND == 3
  if (OP == ABS) r = v < zero ? static_cast<CT>(WT(0) - static_cast<WT>(v)) : v;
  if (OP == RELU) r = v < zero ? zero : v;
  if (OP == SIGN) r = v > zero ? one : v < zero ? CT(-1) : zero;
#else
  if (OP == SIGN) r = v > zero ? one : zero;
#endif
  return PACK(DT, r);
}
#endif

extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const Push& pc = PARAMS(Push, args);
  const uint32_t i = global_index();
  if (i >= pc.numel) return;
  uint32_t off[N_STRIDED];
  strided_offsets(pc, i, off);
  const STORAGE_T(DT)* x = buffer_at<const STORAGE_T(DT)>(args, 0);
  STORAGE_T(DT)* y = buffer_at<STORAGE_T(DT)>(args, 1);
#if DT_KIND <= 1
  y[out_offset(pc, i)] = PACK(DT, apply(LOAD(DT, x[off[0]]), pc.p0, pc.p1));
#else
  y[out_offset(pc, i)] = apply(LOAD(DT, x[off[0]]), pc.p0, pc.p1);
#endif
}
