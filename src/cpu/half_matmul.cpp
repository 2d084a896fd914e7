// f16/bf16 products with few rows: x @ W^T for one or a few tokens (Linear::forward of a plain
// weight), where b is the transpose of a row-major W, so b's column j is row j of W, contiguous.
// Each output is a dot product over that row, widened to f32 in registers as it is read (AVX2:
// vcvtph2ps / a shift for bf16; FMA into f32), with up to 8 x rows sharing each load. Widening
// both operands for sgemm, as matmul.cpp does otherwise, converted all of W through the
// transposed view on every call: an f16 model decoded at 1.7 tok/s where llama.cpp did 76
// (perf.md, session 13). One rounding to the output dtype per element, as there.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/cpu_device.h"
#include "cpu/half_convert.h"
#include "cpu/parallel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace wick::cpu {

using backend::MatmulDims;
using backend::Storage;
using backend::View;

namespace {

// x rows up to which the row-by-row dot products are used. On the 2-core AMD EPYC (AVX2) a
// 44-token prompt through an f16 model ran 3.3x the widened path (62 -> 205 tok/s); by estimate
// (widening W once, then sgemm) the two meet near 90 rows.
constexpr int64_t kMaxRows = 64;
// x rows sharing each load of W (registers: one accumulator per row).
constexpr int kRowsPerPass = 8;
// W bytes a thread should get before another one is woken.
constexpr int64_t kBytesPerTask = 32 * 1024;

template <typename H>
float widen_bits(uint16_t b) {
  return std::is_same_v<H, f16> ? f16_bits_to_float(b) : bf16_bits_to_float(b);
}

// c[i * ldc] = sum_p x[i * k + p] * w[p] for i < rows (x: f32 rows, w: k 16-bit floats).
template <typename H>
void dots_portable(const float* x, int rows, int64_t k, const uint16_t* w, float* c, int64_t ldc) {
  for (int i = 0; i < rows; i++) {
    float s = 0;
    for (int64_t p = 0; p < k; p++) s += x[i * k + p] * widen_bits<H>(w[p]);
    c[i * ldc] = s;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
WICK_AVX2_F16C inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// dots_portable for ROWS x rows: U independent accumulators per row hide the FMA latency when
// few rows share a load.
template <typename H, int ROWS>
WICK_AVX2_F16C void dots_avx2(const float* x, int64_t k, const uint16_t* w, float* c, int64_t ldc) {
  constexpr int U = ROWS == 1 ? 4 : ROWS == 2 ? 2 : 1;
  __m256 acc[ROWS][U];
  for (int i = 0; i < ROWS; i++)
    for (int u = 0; u < U; u++) acc[i][u] = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 8 * U <= k; p += 8 * U)
    for (int u = 0; u < U; u++) {
      const __m256 wv = widen8<H>(w + p + 8 * u);
      for (int i = 0; i < ROWS; i++)
        acc[i][u] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i * k + p + 8 * u), wv, acc[i][u]);
    }
  for (int i = 0; i < ROWS; i++) {
    __m256 a = acc[i][0];
    for (int u = 1; u < U; u++) a = _mm256_add_ps(a, acc[i][u]);
    float s = hsum8(a);
    for (int64_t q = p; q < k; q++) s += x[i * k + q] * widen_bits<H>(w[q]);
    c[i * ldc] = s;
  }
}

template <typename H>
void dots_best(const float* x, int rows, int64_t k, const uint16_t* w, float* c, int64_t ldc) {
  if (!runs_avx2_f16c()) return dots_portable<H>(x, rows, k, w, c, ldc);
  switch (rows) {
    case 1:
      return dots_avx2<H, 1>(x, k, w, c, ldc);
    case 2:
      return dots_avx2<H, 2>(x, k, w, c, ldc);
    case 3:
      return dots_avx2<H, 3>(x, k, w, c, ldc);
    case 4:
      return dots_avx2<H, 4>(x, k, w, c, ldc);
    case 5:
      return dots_avx2<H, 5>(x, k, w, c, ldc);
    case 6:
      return dots_avx2<H, 6>(x, k, w, c, ldc);
    case 7:
      return dots_avx2<H, 7>(x, k, w, c, ldc);
    default:
      return dots_avx2<H, 8>(x, k, w, c, ldc);
  }
}
#else
template <typename H>
void dots_best(const float* x, int rows, int64_t k, const uint16_t* w, float* c, int64_t ldc) {
  dots_portable<H>(x, rows, k, w, c, ldc);
}
#endif

template <typename H>
void half_rows_matmul(View a, View b, const MatmulDims& d, Storage& dst) {
  const size_t r = a.layout.rank();
  const int64_t m = d.m, n = d.n, k = d.k;
  const int64_t a_rs = a.layout.strides[r - 2], a_cs = a.layout.strides[r - 1];
  const int64_t w_row = b.layout.strides[r - 1];  // b's column j = W's row j
  const auto* pa = reinterpret_cast<const H*>(cpu_storage(a.storage).data());
  const auto* pw = reinterpret_cast<const uint16_t*>(cpu_storage(b.storage).data());
  std::vector<float> x(static_cast<size_t>(m * k)), c(static_cast<size_t>(d.batch * m * n));
  const int64_t grain = std::max<int64_t>(1, kBytesPerTask / (2 * k));
  for (int64_t bi = 0; bi < d.batch; bi++) {
    const H* ab = pa + matrix_batch_offset(a.layout, bi);
    for (int64_t i = 0; i < m; i++) widen_row(ab + i * a_rs, a_cs, x.data() + i * k, k);
    const uint16_t* wb = pw + matrix_batch_offset(b.layout, bi);
    float* cb = c.data() + bi * m * n;
    parallel_for(n, grain, [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; j++)
        for (int64_t i0 = 0; i0 < m; i0 += kRowsPerPass)
          dots_best<H>(x.data() + i0 * k, static_cast<int>(std::min<int64_t>(kRowsPerPass, m - i0)),
                       k, wb + j * w_row, cb + i0 * n + j, n);
    });
  }
  H* out = cpu_storage(dst).as<H>();
  parallel_for(static_cast<int64_t>(c.size()), 1 << 14,
               [&](int64_t i0, int64_t i1) { narrow_row(c.data() + i0, out + i0, i1 - i0); });
}

}  // namespace

bool half_matmul_few_rows(View a, View b, const MatmulDims& d, Storage& dst) {
  const DType dt = dst.dtype();
  if (dt != DType::F16 && dt != DType::BF16) return false;
  const size_t r = b.layout.rank();
  // b (k x n) must be W^T for a W whose rows are contiguous: unit steps along k.
  const bool w_rows = d.k == 1 || b.layout.strides[r - 2] == 1;
  if (d.m < 1 || d.m > kMaxRows || d.n < 1 || d.k < 1 || !w_rows) return false;
  if (dt == DType::F16)
    half_rows_matmul<f16>(a, b, d, dst);
  else
    half_rows_matmul<bf16>(a, b, d, dst);
  return true;
}

}  // namespace wick::cpu
