// The float math of the row ops (norm.cu), correctly rounded or within ~2 ulp whatever fast-math
// options the kernel is compiled with: softmax's exp(x - max) and the norms' 1 / sqrt meet the
// CPU at ulp level. NVRTC's fast math swaps expf for __expf (error growing with |x|) and makes
// division and sqrt approximate, so under WICK_FAST_MATH exp is our own and the rest use the
// explicitly rounded intrinsics; double math is never approximated.
#pragma once

#include "include/common.cuh"

__device__ __forceinline__ float row_neg_inf(float) { return __int_as_float(0xff800000); }
__device__ __forceinline__ double row_neg_inf(double) { return __longlong_as_double(0xfff0000000000000ll); }

#ifdef WICK_FAST_MATH
// exp within ~2 ulp over f32's range: x = k ln2 + r with |r| <= ln2/2 (ln2 in two parts, so that
// k ln2 is exact enough), exp(r) by its Taylor series to r^7, then scaled by 2^k in two steps
// where 2^k itself is not a float.
__device__ __forceinline__ float exp_accurate(float x) {
  if (x > 88.72284f) return __int_as_float(0x7f800000);
  if (x < -103.97208f) return 0.0f;  // below half the smallest subnormal; also -inf
  if (x != x) return x;
  const float k = rintf(__fmul_rn(x, 1.44269504f));
  const float r = __fmaf_rn(k, -1.4286068e-6f, __fmaf_rn(k, -0.693145751953125f, x));
  float p = 1.0f / 5040.0f;
  p = __fmaf_rn(p, r, 1.0f / 720.0f);
  p = __fmaf_rn(p, r, 1.0f / 120.0f);
  p = __fmaf_rn(p, r, 1.0f / 24.0f);
  p = __fmaf_rn(p, r, 1.0f / 6.0f);
  p = __fmaf_rn(p, r, 0.5f);
  p = __fmaf_rn(p, r, 1.0f);
  p = __fmaf_rn(p, r, 1.0f);
  const int e = int(k);
  if (e < -120) return __fmul_rn(ldexpf(p, e + 64), 5.421010862427522e-20f);  // 2^-64
  if (e > 127) return __fmul_rn(ldexpf(p, e - 1), 2.0f);
  return ldexpf(p, e);
}
__device__ __forceinline__ float row_exp(float x) { return exp_accurate(x); }
#else
__device__ __forceinline__ float row_exp(float x) { return expf(x); }
#endif
__device__ __forceinline__ double row_exp(double x) { return exp(x); }

// log through double (once per row: cheap, and the CPU takes the log of a double sum too).
__device__ __forceinline__ float row_log(float x) { return float(log(double(x))); }
__device__ __forceinline__ double row_log(double x) { return log(x); }

__device__ __forceinline__ float row_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double row_div(double a, double b) { return a / b; }

// 1 / sqrt(x), each step correctly rounded.
__device__ __forceinline__ float row_rsqrt(float x) { return __fdiv_rn(1.0f, __fsqrt_rn(x)); }
__device__ __forceinline__ double row_rsqrt(double x) { return 1.0 / sqrt(x); }
