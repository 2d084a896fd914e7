// Arg-sort of every row of the last dim, a block per row: a bitonic sort of (key, index) pairs
// in shared memory (rows up to MAX_SORT; the host refuses longer ones). Keys order like the
// values with NaN largest and -0 == +0; the index breaks ties, so the result is stable in both
// directions, as on the CPU. DESCENDING flips the keys, not the indices.
// Bindings: 0 x, 1 y (u32 indices, contiguous rows). Specialization: WICK_SPEC_0 DESCENDING.
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/rows.cuh"

#define MAX_SORT 2048u
#ifndef WICK_SPEC_0
#define WICK_SPEC_0 0
#endif
constexpr uint32_t DESCENDING = WICK_SPEC_0;

typedef STORAGE_T(DT) ST;
typedef COMPUTE_T(DT) CT;

// 64-bit keys for f64 and i64, 32-bit otherwise.
#if DT_KIND == 1 || DT_KIND == 3
typedef uint64_t Key;
#else
typedef uint32_t Key;
#endif

#if DT_KIND == 0
WICK_DEV Key sort_key(float v) {
  if (is_nan(v)) return 0xffffffffu;
  const uint32_t bits = __float_as_uint(v == 0.0f ? 0.0f : v);  // -0 -> +0
  return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
}
#elif DT_KIND == 1
WICK_DEV Key sort_key(double v) {
  if (is_nan(v)) return ~0ull;
  const uint64_t bits = uint64_t(__double_as_longlong(v == 0.0 ? 0.0 : v));  // -0 -> +0
  return (bits >> 63) != 0u ? ~bits : bits | 0x8000000000000000ull;
}
#elif DT_KIND == 2
WICK_DEV Key sort_key(uint32_t v) {
  return v;
}
#else
WICK_DEV Key sort_key(int64_t v) {
  return uint64_t(v) ^ 0x8000000000000000ull;
}
#endif

__shared__ Key s_key[MAX_SORT];
__shared__ uint32_t s_idx[MAX_SORT];

// Whether pair a (key, index) sorts before pair b.
WICK_DEV bool before(uint32_t a, uint32_t b) {
  if (s_key[a] != s_key[b]) return s_key[a] < s_key[b];
  return s_idx[a] < s_idx[b];
}

WICK_DEV void swap_pairs(uint32_t a, uint32_t b) {
  const Key k = s_key[a];
  s_key[a] = s_key[b];
  s_key[b] = k;
  const uint32_t i = s_idx[a];
  s_idx[a] = s_idx[b];
  s_idx[b] = i;
}

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const RowsParams& pc = PARAMS(RowsParams, args);
  const ST* x = buffer_at<const ST>(args, 0);
  uint32_t* y = buffer_at<uint32_t>(args, 1);
  const uint32_t o = group_index();
  if (o >= pc.n_outer) return;  // uniform per block
  const uint32_t t = threadIdx.x, n = pc.n_inner, base = outer_offset(pc, o);
  uint32_t padded = 1u;
  while (padded < n) padded <<= 1;
  const Key flip = DESCENDING != 0u ? ~Key(0) : Key(0);
  for (uint32_t j = t; j < padded; j += WG_SIZE) {
    Key k = ~Key(0);  // padding sorts last, after every real element
    uint32_t idx = 0xffffffffu;
    if (j < n) {
      k = sort_key(LOAD(DT, x[base + j * pc.inner_strides[0]])) ^ flip;
      idx = j;
    }
    s_key[j] = k;
    s_idx[j] = idx;
  }
  __syncthreads();
  for (uint32_t size = 2u; size <= padded; size <<= 1) {
    for (uint32_t stride = size >> 1; stride > 0u; stride >>= 1) {
      for (uint32_t i = t; i < padded; i += WG_SIZE) {
        const uint32_t l = i ^ stride;
        if (l > i) {
          const bool up = (i & size) == 0u;
          if (up == before(l, i)) swap_pairs(i, l);
        }
      }
      __syncthreads();
    }
  }
  for (uint32_t j = t; j < n; j += WG_SIZE) y[pc.out_offset + o * n + j] = s_idx[j];
}
