// Vulkan matmul: a tiled GEMM with tile sizes from a table, and gemv when m == 1 or n == 1.
// Every operand is read through its own strides, batch dims included (each batch dim has its own
// stride per operand, broadcast dims stride 0): transposed and narrowed inputs need no copy, and
// the seed's batch-stride defect cannot happen.
#include <algorithm>

#include "cpu/strided.h"
#include "vulkan/vk_device.h"

namespace wick::vulkan {

using backend::Storage;
using backend::View;

namespace {

constexpr size_t kBatchRank = 3;  // BATCH_RANK in include/batch.glsl

// The tile table: data, not code. The first row whose conditions hold wins. Every tile runs 256
// threads, (bm / 16) x (bn / 16) outputs each, and two shared stages of (bm + bn + 8) x bk
// elements, which must fit the device's shared memory (lavapipe: 32 KiB; an H200: 48, where a
// 128 x 128 tile stepping k by 16 ran at 30 TFLOP/s against 35 by 8, so no row uses it). 64-bit
// dtypes stop at 4 x 4 per thread (registers). The big tile needs workgroups enough to fill a large
// GPU (132 SMs on an H200, two workgroups each), so it asks for a number of tiles over the whole
// batch.
struct TileChoice {
  uint32_t bm, bn, bk;
};
struct TileRow {
  bool wide;          // for 64-bit dtypes (f64, i64): twice the registers and shared memory
  int64_t min_mn;     // m and n at least this
  int64_t min_tiles;  // at least this many bm x bn tiles over the whole batch
  TileChoice tile;
};
constexpr TileRow kTileTable[] = {
    {false, 128, 128, {128, 128, 8}},  // 8 x 8
    {false, 128, 0, {64, 64, 16}},     // 4 x 4
    {false, 0, 0, {32, 32, 16}},       // 2 x 2
    {true, 128, 0, {64, 64, 8}},       // 4 x 4
    {true, 0, 0, {32, 32, 16}},        // 2 x 2
};

TileChoice choose_tiles(int64_t m, int64_t n, int64_t batch, DType dt, uint32_t shared_bytes) {
  const bool wide = dtype_size(dt) == 8;
  for (const TileRow& row : kTileTable) {
    const TileChoice& t = row.tile;
    const int64_t tiles = (m + t.bm - 1) / t.bm * ((n + t.bn - 1) / t.bn) * batch;
    const uint64_t shared = 2ull * t.bk * (t.bm + t.bn + 8) * (wide ? 8 : 4);
    if (row.wide == wide && m >= row.min_mn && n >= row.min_mn && tiles >= row.min_tiles &&
        shared <= shared_bytes)
      return t;
  }
  return {32, 32, 16};
}

// Whether an operand can be read by vectors of `width` elements along one of its matrix dims:
// stride 1 along it, and its length there, the other stride, the offset and every batch stride
// multiples of `width`, so that each vector is aligned and lies wholly inside or outside.
bool vectors_fit(int64_t width, int64_t stride_along, int64_t len_along, int64_t stride_other,
                 int64_t offset, const std::vector<int64_t>& batch_strides) {
  auto fits = [width](int64_t v) { return v % width == 0; };
  return stride_along == 1 && fits(len_along) && fits(stride_other) && fits(offset) &&
         std::all_of(batch_strides.begin(), batch_strides.end(), fits);
}

// How matmul.comp fetches an operand's k-tile (LOADS): 0 scalar, k fastest; 1 scalar, the outer
// dim (m of A, n of B) fastest; 2 vec4 along k; 3 vec4 along the outer dim. B never takes 2: on
// the H200, B stored transposed ran at 29.8 TFLOP/s (f32, 4096) by vec4s along k and 35.7 by
// scalars; for A the two were even (33.7 / 34.1).
uint32_t load_mode(int64_t stride_k, int64_t stride_outer, int64_t k, int64_t outer, int64_t offset,
                   const std::vector<int64_t>& batch_strides, bool vec_along_k) {
  if (vec_along_k && vectors_fit(4, stride_k, k, stride_outer, offset, batch_strides)) return 2;
  if (vectors_fit(4, stride_outer, outer, stride_k, offset, batch_strides)) return 3;
  return stride_outer == 1 && stride_k != 1 ? 1 : 0;
}

// How matmul_coop.comp stages an operand (its A_MODE / B_MODE): 1 by 16-byte vectors (8 halves)
// along `first`, 2 along `second`, 0 element by element.
uint32_t operand_mode(int64_t first_stride, int64_t second_stride, int64_t offset,
                      const std::vector<int64_t>& batch_strides, int64_t first_len,
                      int64_t second_len) {
  if (vectors_fit(8, first_stride, first_len, second_stride, offset, batch_strides)) return 1;
  if (vectors_fit(8, second_stride, second_len, first_stride, offset, batch_strides)) return 2;
  return 0;
}

}  // namespace

void VulkanDevice::matmul(View a, View b, const backend::MatmulDims& d, Storage& dst) {
  const DType dt = a.storage.dtype();
  require(dt, "matmul");
  const size_t r = a.layout.rank();
  // Batch dims of both operands and the contiguous output, collapsed together.
  const std::vector<int64_t> batch_dims(a.layout.shape.dims().begin(),
                                        a.layout.shape.dims().end() - 2);
  const Shape batch_shape(batch_dims);
  const Layout la(batch_shape, {a.layout.strides.begin(), a.layout.strides.end() - 2}, 0);
  const Layout lb(batch_shape, {b.layout.strides.begin(), b.layout.strides.end() - 2}, 0);
  std::vector<int64_t> out_strides = batch_shape.contiguous_strides();
  for (int64_t& s : out_strides) s *= d.m * d.n;
  const Layout lo(batch_shape, out_strides, 0);
  const auto plan = cpu::make_plan<3>(batch_shape, {&la, &lb, &lo});
  if (plan.shape.size() > kBatchRank)
    fail(ErrorKind::Unsupported, "matmul", "batch dims ", batch_shape,
         " do not collapse to 3 on vulkan; make the inputs contiguous first");
  const int64_t sa_m = a.layout.strides[r - 2], sa_k = a.layout.strides[r - 1];
  const int64_t sb_k = b.layout.strides[r - 2], sb_n = b.layout.strides[r - 1];

  // gemv: the matrix operand and the vector, oriented so the output runs along "rows".
  const bool gemv = d.m == 1 || d.n == 1;
  gpu::Buffer *first = &buffer(a.storage), *second = &buffer(b.storage);
  int64_t rows = d.m, cols = d.n, a_off = a.layout.start_offset, b_off = b.layout.start_offset;
  int64_t a_row = sa_m, a_k = sa_k, b_k = sb_k, b_col = sb_n;
  std::vector<int64_t> a_batch = plan.strides[0].to_vector(), b_batch = plan.strides[1].to_vector();
  // A size-1 batch dim (the plan of no batch dims is one, of stride 1) is only ever indexed at 0:
  // its stride must not keep the kernels from reading by vectors.
  for (size_t i = 0; i < plan.shape.size(); i++)
    if (plan.shape[i] == 1) a_batch[i] = b_batch[i] = 0;
  if (gemv && d.m == 1 && d.n != 1) {  // y = b^T a: b is the matrix, its rows are the n columns
    std::swap(first, second);
    std::swap(a_off, b_off);
    std::swap(a_batch, b_batch);
    rows = d.n;
    a_row = sb_n;
    a_k = sb_k;
    b_k = sa_k;
  }
  const bool per_group = gemv && a_k == 1 && d.k >= 64;  // rows contiguous along k: coalesce
  auto dtype_defines = [dt] {
    gpu::Defines defs;
    add_dtype(defs, "", dt);
    return defs;
  };
  const gpu::Pipeline* pipeline;
  std::array<uint32_t, 3> groups{};
  // The tiled kernels' ALIGNED constant (bit 0: m % bm == 0, bit 1: n % bn, bit 2: k % bk: no
  // bound checks there) and their grid of bm x bn tiles.
  auto aligned_flags = [&](int64_t bm, int64_t bn, int64_t bk) {
    return (d.m % bm == 0 ? 1u : 0u) | (d.n % bn == 0 ? 2u : 0u) | (d.k % bk == 0 ? 4u : 0u);
  };
  auto tile_grid = [&](int64_t bm, int64_t bn) -> std::array<uint32_t, 3> {
    return {to_index((d.n + bn - 1) / bn, "tile count"),
            to_index((d.m + bm - 1) / bm, "tile count"), 1};
  };
  if (gemv) {
    const uint32_t group = per_group ? 1u : 0u;
    pipeline = &kernel(KernelFamily::Gemv, {group, static_cast<uint32_t>(dt)},
                       [&] { return key_for("gemv.comp", dtype_defines(), {group}); });
    groups = per_group ? grid(static_cast<uint64_t>(rows) * kWorkgroupSize)
                       : grid(static_cast<uint64_t>(rows));
  } else if (dt == DType::F16 && caps().coopmat_f16 && options_.cooperative_matrix) {
    // Tensor cores (matmul_coop.comp): each operand staged by 16-byte vectors where its strides
    // allow, along whichever dim is contiguous; else gathered element by element.
    // Tile and workgroup by shape (measured on an H200, docs/perf.md): 128 x 128 tiles with 4
    // subgroups of 64 x 64 once there are a few waves of them, 8 subgroups of 64 x 32 below
    // that, 64 x 64 tiles for small products.
    const int64_t tiles128 = ((d.m + 127) / 128) * ((d.n + 127) / 128);
    uint32_t tile = d.m >= 512 && d.n >= 512 ? 128u : 64u;
    uint32_t threads = tile == 128 && tiles128 >= 512 ? 128u : 256u;
    if (options_.coop_tile) tile = options_.coop_tile;
    if (options_.coop_threads) threads = options_.coop_threads;
    if ((tile != 64 && tile != 128) || (threads != 128 && threads != 256))
      fail(ErrorKind::Unsupported, "matmul", "the cooperative-matrix kernel takes tiles of 64 or ",
           "128 and 128 or 256 threads, not ", tile, " and ", threads);
    const uint32_t a_mode = operand_mode(a_k, a_row, a_off, a_batch, d.k, d.m);
    const uint32_t b_mode = operand_mode(b_col, b_k, b_off, b_batch, d.n, d.k);
    // k step 64 (one shared stage) where an operand arrives by vectors along k: its rows are
    // then read 128 bytes at a time instead of 64; 32 (two stages) otherwise (measured on the
    // H200 with gathered operands only, see matmul_coop.comp).
    const uint32_t bk = a_mode == 1 || b_mode == 2 ? 64u : 32u;
    const uint32_t aligned = aligned_flags(tile, tile, bk);
    pipeline = &kernel(KernelFamily::MatmulCoop, {tile, aligned, a_mode, b_mode, threads, bk}, [&] {
      gpu::Defines defs = dtype_defines();
      defs.emplace_back("WG_SIZE", std::to_string(threads));
      defs.emplace_back("BK_DEF", std::to_string(bk));
      return key_for("matmul_coop.comp", std::move(defs), {tile, tile, aligned, a_mode, b_mode});
    });
    groups = tile_grid(tile, tile);
    coop_matmuls_.fetch_add(1, std::memory_order_relaxed);
  } else {
    const TileChoice t = choose_tiles(d.m, d.n, d.batch, dt, caps().max_shared_memory);
    const uint32_t aligned = aligned_flags(t.bm, t.bn, t.bk);
    // Small tiles keep one fetch order: fewer pipelines to build (lavapipe's CI builds them all).
    const uint32_t loads = t.bm < 64
                               ? 0u
                               : load_mode(a_k, a_row, d.k, d.m, a_off, a_batch, true) |
                                     load_mode(b_k, b_col, d.k, d.n, b_off, b_batch, false) << 2;
    pipeline = &kernel(
        KernelFamily::Matmul, {t.bm, t.bn, t.bk, aligned, loads, static_cast<uint32_t>(dt)}, [&] {
          return key_for("matmul.comp", dtype_defines(), {t.bm, t.bn, t.bk, aligned, loads});
        });
    groups = tile_grid(t.bm, t.bn);
  }

  // The batch runs along the grid's z; beyond the device limit, in several dispatches.
  const int64_t max_z = caps().max_group_count_z;
  std::vector<PushConstants> pushes;
  for (int64_t z0 = 0; z0 < d.batch; z0 += max_z) {
    PushConstants pc;
    pc.u32(to_index(rows, "rows"));
    pc.u32(to_index(cols, "cols"));
    pc.u32(to_index(d.k, "k"));
    pc.u32(static_cast<uint32_t>(plan.shape.size()));
    pc.u32(to_index(z0, "batch"));
    for (size_t i = 0; i < kBatchRank; i++)
      pc.u32(i < plan.shape.size() ? to_index(plan.shape[i], "batch") : 1);
    for (const auto* s : {&a_batch, &b_batch})
      for (size_t i = 0; i < kBatchRank; i++)
        pc.u32(i < s->size() ? to_index((*s)[i], "stride") : 0);
    for (int64_t v : {a_off, a_row, a_k, b_off, b_k, b_col}) pc.u32(to_index(v, "stride"));
    pushes.push_back(pc);
  }
  const gpu::BufferAccess args[] = {
      {first, gpu::Access::Read}, {second, gpu::Access::Read}, {&buffer(dst), gpu::Access::Write}};
  queue_->record([&](gpu::CommandQueue::Recorder& rec) {
    for (size_t i = 0; i < pushes.size(); i++) {
      auto g = groups;
      g[2] = static_cast<uint32_t>(
          std::min<int64_t>(max_z, d.batch - static_cast<int64_t>(i) * max_z));
      rec.dispatch(*pipeline, args, pushes[i].words(), g);
    }
  });
}

}  // namespace wick::vulkan
