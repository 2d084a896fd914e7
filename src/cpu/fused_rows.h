// Single rows of the CPU ops that QMatMul's CPU prologues fuse into the quantization of x
// (quantized/qmatmul.cpp): each gives the bits of the op it stands for, so a fused product
// quantizes the same values as the ops run one after another.
#pragma once

#include <cstdint>

namespace wick::cpu {

// y = x / sqrt(mean(x^2) + eps) * alpha over one contiguous f32 row of n: CpuDevice::rms_norm's
// row. y may be x.
void rms_norm_row(const float* x, const float* alpha, int64_t n, double eps, float* y);

// y = silu(gate) * up over one contiguous f32 row of n: CpuDevice::unary's silu, then the
// product. y may be gate or up.
void swiglu_row(const float* gate, const float* up, int64_t n, float* y);

}  // namespace wick::cpu
