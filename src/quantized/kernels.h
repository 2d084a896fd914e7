// The integer dot-product kernels behind QMatMul, per format and instruction set.
//
// Activations (x rows) are quantized to 8 bits per block, as in ggml: for the 32-element formats
// d = amax/127, q = round(x/d) (ggml's Q8_0/Q8_1 values), for the K formats ggml's Q8_K. Unlike
// ggml the scales stay f32 (not rounded to f16) and live beside the values (struct of arrays), so
// that SIMD kernels load them without unpacking blocks. The AVX-512 row-tile kernels (packed.h)
// read them as they are; the AVX2 sliced ones take the same values in another byte order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wick/quant_type.h"

namespace wick::quantized {

// One quantized x row.
struct ActRow {
  const int8_t* qs;      // k values
  const float* ds;       // 32-element blocks: (d, d * sum(q)) per block; K: d per super-block
  const int16_t* bsums;  // K only: sums of each 16 values
};

enum class SimdLevel { Scalar, Avx2, Avx512 };
enum class ActKind { Block32, Block256 };
// The activation format a weight type's kernels take (K formats: Block256, others Block32).
ActKind act_kind(QuantType t);
// Quantizes k values of x (k a multiple of the block). ds needs 2 floats per 32 (Block32) or
// 1 per 256 (Block256); bsums 16 per 256 (Block256 only). For Block32 the scalar version rounds
// ties away from zero as ggml's reference does, the SIMD versions to even as ggml's AVX2 code
// (both within half a step); Block256 rounds to even everywhere.
using QuantizeActFn = void (*)(ActKind kind, const float* x, int64_t k, int8_t* qs, float* ds,
                               int16_t* bsums);
void quantize_act_row_scalar(ActKind kind, const float* x, int64_t k, int8_t* qs, float* ds,
                             int16_t* bsums);
QuantizeActFn act_quantizer_avx2();    // nullptr where not compiled
QuantizeActFn act_quantizer_avx512();  // nullptr where not compiled
// The best activation quantizer at or below `level`.
QuantizeActFn act_quantizer(SimdLevel level);

// out[r] = dot(weight row r, x) for r in [0, n_rows); rows are row_bytes apart; k elements each.
using DotRowsFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                           const ActRow& x, float* out);

// out[i * ldo + r] = dot(weight row r, xs[i]) for r < n_rows, i < n_x: kernels that read each
// weight block once for several x rows (QMatMul's batched steps).
using DotRowsMultiFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                                const ActRow* xs, int n_x, size_t ldo, float* out);

const char* simd_level_name(SimdLevel level);
// The best level this CPU runs (AVX2 = avx2+fma+f16c; AVX-512 = f/bw/vl/vnni on top).
SimdLevel detected_simd_level();
// The level kernels are picked at; defaults to detected_simd_level().
SimdLevel active_simd_level();
// Caps the level (tests force the scalar path with it); levels above the CPU's are lowered to it.
void set_simd_level(SimdLevel level);

// x rows from which QMatMul switches from integer dots to dequantized tiles + sgemm; settable for
// tests and benchmarks (0 restores the measured default).
int64_t gemm_min_rows();
void set_gemm_min_rows(int64_t rows);

// The best kernel for `t` at or below `level`; nullptr when `t` has no integer kernel.
DotRowsFn dot_kernel(QuantType t, SimdLevel level);

// Per-level tables (nullptr where a level has no kernel for t; the next level down is used).
DotRowsFn dot_kernel_scalar(QuantType t);
DotRowsFn dot_kernel_avx2(QuantType t);
DotRowsFn dot_kernel_avx512(QuantType t);

// The multi-row twin of dot_kernel(t, level) where it has one (AVX2: the K formats), else nullptr
// (QMatMul then calls the DotRowsFn once per x row).
DotRowsMultiFn dot_kernel_multi(QuantType t, SimdLevel level);
DotRowsMultiFn dot_kernel_multi_avx2(QuantType t);

}  // namespace wick::quantized
