// Shared machinery of the CPU element-wise kernels (unary.cpp, binary.cpp).
//
// An op is a small functor on one element (or two); the row loops below apply it to rows handed
// out by for_each_row. The loops spell out the stride patterns the vectoriser wants (contiguous,
// one broadcast scalar); f16/bf16 rows are widened to f32 in small stack blocks, computed there
// and rounded once on the way out. The row loops are always inlined, so that a caller running
// them under with_best_isa (isa.h) gets them compiled for each ISA.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "cpu/cpu_device.h"
#include "cpu/half_convert.h"
#include "cpu/isa.h"
#include "cpu/strided.h"

namespace wick::cpu::ew {

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T> || kIsHalf<T>;

// The type an element is computed in: f16/bf16 in f32, every other type in itself.
template <typename T>
using compute_t = std::conditional_t<kIsHalf<T>, float, T>;

// Unsigned arithmetic wide enough that u8 does not promote to int: integer ops that wrap
// compute in it (signed overflow would be undefined).
template <typename T>
using WrapT = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

// Elements per f32 staging block of a 16-bit float row (three blocks stay in L1).
inline constexpr int64_t kBlock = 512;

// Grain for ops that cost tens of cycles per element (libm calls): split smaller tensors too.
inline constexpr int64_t kExpensiveGrain = kParallelGrain / 8;

// A layout outside its storage is a front-end bug; refuse it rather than touch foreign memory.
inline void check_view(const backend::View& v, const char* op) {
  backend::check_span(v.layout, v.storage, op);
}

// The stride that walks a layout in row-major order when one number does: 1 when contiguous,
// 0 when every element is the same one (a broadcast scalar), -1 otherwise.
inline int64_t flat_stride(const Layout& l) {
  if (l.is_contiguous()) return 1;
  for (int64_t s : l.strides)
    if (s != 0) return -1;
  return 0;
}

// A transposed input walks its rows with a large stride but steps between rows with a small one.
// Rows are then visited in tiles of kTileRows x kTileCols, so that consecutive rows reuse the
// input's cache lines while they are still in L1. Tiles stay small because with power-of-two
// strides every line of a tile column falls into the same L1 set (measured on 1024^2 f32:
// untiled ~80 ns an element, 32 x 32 tiles ~5 ns, 16 x 128 tiles ~9 ns).
inline constexpr int64_t kTileRows = 32, kTileCols = 32;

template <size_t M>
bool wants_tiles(const StridedPlan<M>& p) {
  const size_t r = p.shape.size();
  if (r < 2 || p.shape[r - 2] < 2) return false;
  for (size_t k = 0; k < M; k++) {
    const int64_t along = std::abs(p.strides[k][r - 1]), across = std::abs(p.strides[k][r - 2]);
    if (along > 1 && across > 0 && across < along) return true;
  }
  return false;
}

// visit() in tiles over the two inner dims of the plan; same callback.
template <size_t M, typename F>
void visit_tiled(const StridedPlan<M>& p, F&& f, int64_t grain) {
  const size_t r = p.shape.size();
  const int64_t rows = p.shape[r - 2], cols = p.shape[r - 1];
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  const int64_t col_tiles = (cols + kTileCols - 1) / kTileCols;
  std::array<int64_t, M> along;
  for (size_t k = 0; k < M; k++) along[k] = p.strides[k][r - 1];
  const int64_t tiles = p.numel / (rows * cols) * row_tiles * col_tiles;
  const int64_t tile_grain = std::max<int64_t>(1, grain / (kTileRows * kTileCols));
  parallel_for(tiles, tile_grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; t++) {
      const int64_t col_tile = t % col_tiles, row_tile = t / col_tiles % row_tiles;
      std::array<int64_t, M> base = p.offsets;
      int64_t outer = t / col_tiles / row_tiles;  // index over the dims before the two inner ones
      for (size_t i = r - 2; i-- > 0;) {
        const int64_t idx = outer % p.shape[i];
        outer /= p.shape[i];
        for (size_t k = 0; k < M; k++) base[k] += idx * p.strides[k][i];
      }
      const int64_t c0 = col_tile * kTileCols, n = std::min(kTileCols, cols - c0);
      const int64_t r_end = std::min(rows, (row_tile + 1) * kTileRows);
      for (int64_t row = row_tile * kTileRows; row < r_end; row++) {
        std::array<int64_t, M> o;
        for (size_t k = 0; k < M; k++) o[k] = base[k] + row * p.strides[k][r - 2] + c0 * along[k];
        f(o, n, along);
      }
    }
  });
}

// Calls f(offsets, n, strides) for rows that together cover `shape` once, in parallel when large.
// Operands are the N inputs, then the contiguous output (offsets[N]; its stride is always 1).
// When every input walks flat, the whole tensor is one row and nothing is allocated.
template <size_t N, typename F>
void for_each_row(const Shape& shape, const std::array<const Layout*, N>& in, int64_t grain,
                  F&& f) {
  std::array<int64_t, N + 1> base, flat;
  bool all_flat = true;
  for (size_t k = 0; k < N; k++) {
    base[k] = in[k]->start_offset;
    flat[k] = flat_stride(*in[k]);
    all_flat = all_flat && flat[k] >= 0;
  }
  base[N] = 0;
  flat[N] = 1;
  if (all_flat) {
    parallel_for(shape.numel(), grain, [&](int64_t b, int64_t e) {
      std::array<int64_t, N + 1> o;
      for (size_t k = 0; k <= N; k++) o[k] = base[k] + b * flat[k];
      f(o, e - b, flat);
    });
    return;
  }
  const Layout out = Layout::contiguous(shape);
  std::array<const Layout*, N + 1> all;
  for (size_t k = 0; k < N; k++) all[k] = in[k];
  all[N] = &out;
  const auto plan = make_plan<N + 1>(shape, all);
  if (wants_tiles(plan))
    visit_tiled(plan, f, grain);
  else
    visit(plan, f, grain);
}

// y[j] = f(x[j * sx]) for j < n, T not a 16-bit float.
template <typename T, typename Y, typename F>
WICK_ALWAYS_INLINE inline void map_direct(const T* x, int64_t sx, Y* y, int64_t n, const F& f) {
  if (sx == 1) {
    for (int64_t j = 0; j < n; j++) y[j] = f(x[j]);
  } else if (sx == 0) {
    const Y v = f(x[0]);
    for (int64_t j = 0; j < n; j++) y[j] = v;
  } else {
    for (int64_t j = 0; j < n; j++) y[j] = f(x[j * sx]);
  }
}

// y[j] = f(x[j * sx]) for any element type: 16-bit floats go through f32 blocks.
template <typename T, typename F>
WICK_ALWAYS_INLINE inline void map_row(const T* x, int64_t sx, T* y, int64_t n, const F& f) {
  if constexpr (kIsHalf<T>) {
    float buf[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      widen_row(x + s * sx, sx, buf, m);
      for (int64_t j = 0; j < m; j++) buf[j] = f(buf[j]);
      narrow_row(buf, y + s, m);
    }
  } else {
    map_direct(x, sx, y, n, f);
  }
}

// y[j] = f(a[j * sa], b[j * sb]) for j < n, A and B not 16-bit floats.
template <typename A, typename B, typename Y, typename F>
WICK_ALWAYS_INLINE inline void zip_direct(const A* a, int64_t sa, const B* b, int64_t sb, Y* y,
                                          int64_t n, const F& f) {
  if (sa == 1 && sb == 1) {
    for (int64_t j = 0; j < n; j++) y[j] = f(a[j], b[j]);
  } else if (sa == 1 && sb == 0) {
    const B bv = b[0];
    for (int64_t j = 0; j < n; j++) y[j] = f(a[j], bv);
  } else if (sa == 0 && sb == 1) {
    const A av = a[0];
    for (int64_t j = 0; j < n; j++) y[j] = f(av, b[j]);
  } else {
    for (int64_t j = 0; j < n; j++) y[j] = f(a[j * sa], b[j * sb]);
  }
}

// y[j] = f(a[j * sa], b[j * sb]) for any input type. f returns Y, or f32 when Y is a 16-bit
// float (binary ops); 16-bit inputs are widened block by block, broadcast scalars once.
template <typename T, typename Y, typename F>
WICK_ALWAYS_INLINE inline void zip_row(const T* a, int64_t sa, const T* b, int64_t sb, Y* y,
                                       int64_t n, const F& f) {
  if constexpr (kIsHalf<T>) {
    float ba[kBlock], bb[kBlock];
    if (sa == 0) ba[0] = half_to_float(a[0]);
    if (sb == 0) bb[0] = half_to_float(b[0]);
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      if (sa != 0) widen_row(a + s * sa, sa, ba, m);
      if (sb != 0) widen_row(b + s * sb, sb, bb, m);
      const int64_t ua = sa != 0, ub = sb != 0;
      if constexpr (kIsHalf<Y>) {
        float by[kBlock];
        zip_direct(ba, ua, bb, ub, by, m, f);
        narrow_row(by, y + s, m);
      } else {
        zip_direct(ba, ua, bb, ub, y + s, m, f);
      }
    }
  } else {
    zip_direct(a, sa, b, sb, y, n, f);
  }
}

}  // namespace wick::cpu::ew
