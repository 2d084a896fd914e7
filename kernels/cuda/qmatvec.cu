// y (m, n_out) = x (m, k) @ W^T for a few x rows (decode), W in a block format (QTYPE, see
// include/quant.cuh) decoded on the fly, so every weight byte is read once per NUM_COLS x rows.
// A block computes NUM_ROWS output rows for NUM_COLS x rows (blockIdx.z: which NUM_COLS; the
// last group may have fewer). The work is units of 32 consecutive elements of one weight row:
// the block's threads take the (row, unit) pairs in turn, row by row (consecutive threads,
// consecutive units of a row: coalesced, and every thread busy even where a row has fewer units
// than the block has threads), each decoding its unit once for all NUM_COLS x rows. The partial
// sums are added by warp shuffles, then across the block's warps through shared memory.
// ACT_Q8: x comes quantized to 8 bits by qact.cu, and each unit is the CPU's integer dot product
// (unit_dot in include/quant.cuh) times the scales; otherwise x (DT) is read in f32, runs of 8
// dequantized weights at a time.
// RESIDUAL: y = residual + the product (one rounding, as the add kernel's).
// Bindings: 0 the weight's blocks, 1 x (ACT_Q8: its quantized rows), 2 y (f32), 3 (RESIDUAL) the
// residual (f32).
// Specialization: WICK_SPEC_0 NUM_COLS (1 .. 8), WICK_SPEC_1 NUM_ROWS (1 .. 8).
#include "include/common.cuh"
#include "include/dtype.cuh"
#include "include/quant.cuh"
#include "include/warp.cuh"

#ifndef WICK_SPEC_0
#define WICK_SPEC_0 1
#endif
#ifndef WICK_SPEC_1
#define WICK_SPEC_1 1
#endif
constexpr uint32_t NUM_COLS = WICK_SPEC_0;  // x rows per block
constexpr uint32_t NUM_ROWS = WICK_SPEC_1;  // output rows per block
static_assert(NUM_COLS >= 1u && NUM_COLS <= 8u && NUM_ROWS >= 1u && NUM_ROWS <= 8u,
              "qmatvec.cu: 1 .. 8 x rows and output rows per block");
constexpr uint32_t UNIT = 32u;

WICK_PARAMS_STRUCT(QMatmulParams, WICK_PARAMS_QMATMUL(WICK_CU_FIELD, WICK_CU_ARRAY))

#ifdef ACT_Q8
// x quantized by qact.cu: row c at word c * x_row (x_offset and x_k unused).
typedef uint32_t XT;
#else
typedef STORAGE_T(DT) XT;
#endif

// The contribution of unit u of weight row `row` to each x row of the block.
WICK_DEV void unit_products(const QMatmulParams& pc, const uint8_t* w, const XT* x, uint32_t row,
                            uint32_t u, uint32_t col0, uint32_t n_cols, float (&s)[NUM_COLS]) {
  const uint32_t e = u * UNIT;
  const uint32_t blk = row * pc.row_bytes + (e / QK) * BLOCK_BYTES, j = e % QK;
#ifdef ACT_Q8
  const WeightUnit wu = decode_unit(w, blk, j);
  const uint32_t scale_word = act_scale_word(pc.k, e);
#pragma unroll
  for (uint32_t c = 0u; c < NUM_COLS; c++) {
    s[c] = 0.0f;
    if (c >= n_cols) continue;
    const uint32_t base = (col0 + c) * pc.x_row;
    uint32_t xv[8];
    if (pc.x_row % 4u == 0u) {  // rows 16-byte aligned: two vector loads
      const uint4* p = reinterpret_cast<const uint4*>(x + base + e / 4u);
      const uint4 lo = __ldg(p), hi = __ldg(p + 1);
      xv[0] = lo.x, xv[1] = lo.y, xv[2] = lo.z, xv[3] = lo.w;
      xv[4] = hi.x, xv[5] = hi.y, xv[6] = hi.z, xv[7] = hi.w;
    } else {
#pragma unroll
      for (uint32_t i = 0u; i < 8u; i++) xv[i] = __ldg(x + base + e / 4u + i);
    }
    const float dx = __uint_as_float(__ldg(x + base + scale_word));
#if defined(QUANT_MIN) && !defined(QUANT_K)
    const float sx = __uint_as_float(__ldg(x + base + scale_word + 1u));
#else
    const float sx = 0.0f;
#endif
    s[c] = unit_dot(wu, xv, dx, sx);
  }
#else
#pragma unroll
  for (uint32_t c = 0u; c < NUM_COLS; c++) s[c] = 0.0f;
#pragma unroll
  for (uint32_t run = 0u; run < UNIT / 8u; run++) {
    float wv[8];
    dequant8(w, blk, j + 8u * run, wv);
#pragma unroll
    for (uint32_t c = 0u; c < NUM_COLS; c++) {
      if (c >= n_cols) continue;
      const XT* xr = x + pc.x_offset + (col0 + c) * pc.x_row + (e + 8u * run) * pc.x_k;
      float sum = 0.0f;
#pragma unroll
      for (uint32_t i = 0u; i < 8u; i++) sum += wv[i] * float(LOAD(DT, xr[i * pc.x_k]));
      s[c] += sum;
    }
  }
#endif
}

// y's element (x row c, output row `row`).
WICK_DEV void store(const QMatmulParams& pc, const wick::KernelArgs& args, uint32_t c, uint32_t row,
                    float v) {
#ifdef RESIDUAL
  v = buffer_at<const float>(args, 3)[pc.r_offset + c * pc.r_row + row * pc.r_col] + v;
#endif
  buffer_at<float>(args, 2)[c * pc.n_out + row] = v;
}

// The block's weight rows: constant while the previous kernel runs (common.cuh, prefetch_l2).
WICK_DEV void prefetch_weights(const wick::KernelArgs& args) {
  const QMatmulParams& pc = PARAMS(QMatmulParams, args);
  const uint32_t row0 = group_index() * NUM_ROWS;
  if (row0 >= pc.n_out || blockIdx.z != 0u) return;  // the first x group's blocks fetch them
  prefetch_l2(buffer_at<const uint8_t>(args, 0) + uint64_t(row0) * pc.row_bytes,
              uint64_t(min(NUM_ROWS, pc.n_out - row0)) * pc.row_bytes);
}

extern "C" __global__ void __launch_bounds__(WG_SIZE)
    wick_main(const __grid_constant__ wick::KernelArgs args) {
  prefetch_weights(args);
  wick_kernel_begin();
  const QMatmulParams& pc = PARAMS(QMatmulParams, args);
  const uint8_t* w = buffer_at<const uint8_t>(args, 0);
  const XT* x = buffer_at<const XT>(args, 1);
  const uint32_t t = threadIdx.x;
  const uint32_t row0 = group_index() * NUM_ROWS;
  const uint32_t col0 = blockIdx.z * NUM_COLS, n_cols = min(NUM_COLS, pc.m - col0);
  float acc[NUM_ROWS][NUM_COLS];
#pragma unroll
  for (uint32_t r = 0u; r < NUM_ROWS; r++)
#pragma unroll
    for (uint32_t c = 0u; c < NUM_COLS; c++) acc[r][c] = 0.0f;

  const uint32_t units = pc.k / UNIT;
  for (uint32_t item = t; item < NUM_ROWS * units; item += WG_SIZE) {
    const uint32_t r = item / units, u = item - r * units;
    if (row0 + r >= pc.n_out) break;  // the rows past n_out come last
    float s[NUM_COLS];
    unit_products(pc, w, x, row0 + r, u, col0, n_cols, s);
#pragma unroll
    for (uint32_t rr = 0u; rr < NUM_ROWS; rr++)
      if (rr == r)
#pragma unroll
        for (uint32_t c = 0u; c < NUM_COLS; c++) acc[rr][c] += s[c];
  }

#pragma unroll
  for (uint32_t r = 0u; r < NUM_ROWS; r++)
#pragma unroll
    for (uint32_t c = 0u; c < NUM_COLS; c++) acc[r][c] = warp_sum(acc[r][c]);
  const uint32_t lane = t % 32u, warp = t / 32u;
  if (WICK_WARPS == 1) {  // one warp: its sums are final, and lane r * NUM_COLS + c writes one
#pragma unroll
    for (uint32_t r = 0u; r < NUM_ROWS; r++)
#pragma unroll
      for (uint32_t c = 0u; c < NUM_COLS; c++)
        if (lane == (r * NUM_COLS + c) % 32u && row0 + r < pc.n_out && c < n_cols)
          store(pc, args, col0 + c, row0 + r, acc[r][c]);
    return;
  }
  __shared__ float s_part[NUM_ROWS * NUM_COLS][WICK_WARPS];
  if (lane == 0u)
#pragma unroll
    for (uint32_t r = 0u; r < NUM_ROWS; r++)
#pragma unroll
      for (uint32_t c = 0u; c < NUM_COLS; c++) s_part[r * NUM_COLS + c][warp] = acc[r][c];
  __syncthreads();
  for (uint32_t v = t; v < NUM_ROWS * NUM_COLS; v += WG_SIZE) {
    const uint32_t row = row0 + v / NUM_COLS, c = v % NUM_COLS;
    if (row >= pc.n_out || c >= n_cols) continue;
    float sum = 0.0f;
#pragma unroll
    for (uint32_t p = 0u; p < WICK_WARPS; p++) sum += s_part[v][p];
    store(pc, args, col0 + c, row, sum);
  }
}
