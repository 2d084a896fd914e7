// Sums and products in a kernel's compute type, integers wrapping like the CPU's (modulo 2^bits,
// computed unsigned: signed overflow is undefined in C++).
#pragma once

#include "include/common.cuh"

__device__ __forceinline__ float add_wrap(float a, float b) { return a + b; }
__device__ __forceinline__ double add_wrap(double a, double b) { return a + b; }
__device__ __forceinline__ uint32_t add_wrap(uint32_t a, uint32_t b) { return a + b; }
__device__ __forceinline__ int64_t add_wrap(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}

// acc + a * b.
__device__ __forceinline__ float mul_add_wrap(float acc, float a, float b) { return acc + a * b; }
__device__ __forceinline__ double mul_add_wrap(double acc, double a, double b) {
  return acc + a * b;
}
__device__ __forceinline__ uint32_t mul_add_wrap(uint32_t acc, uint32_t a, uint32_t b) {
  return acc + a * b;
}
__device__ __forceinline__ int64_t mul_add_wrap(int64_t acc, int64_t a, int64_t b) {
  return int64_t(uint64_t(acc) + uint64_t(a) * uint64_t(b));
}

// add_wrap as a reduction operator (include/warp.cuh).
struct AddWrapOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return add_wrap(a, b);
  }
};
