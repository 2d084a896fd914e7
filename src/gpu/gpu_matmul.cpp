// The shared GEMM: a tiled SIMT kernel with tile sizes from a table, and gemv when m == 1 or
// n == 1.
// Every operand is read through its own strides, batch dims included (each batch dim has its own
// stride per operand, broadcast dims stride 0): transposed and narrowed inputs need no copy, and
// the seed's batch-stride defect cannot happen.
#include <algorithm>

#include "core/strided_plan.h"
#include "gpu/gpu_device.h"
#include "gpu/kernel_params.h"

namespace wick::gpu {

bool vectors_fit(int64_t width, int64_t stride_along, int64_t len_along, int64_t stride_other,
                 int64_t offset, const std::vector<int64_t>& batch_strides) {
  auto fits = [width](int64_t v) { return v % width == 0; };
  return stride_along == 1 && fits(len_along) && fits(stride_other) && fits(offset) &&
         std::all_of(batch_strides.begin(), batch_strides.end(), fits);
}

using backend::Storage;
using backend::View;

namespace {

constexpr size_t kBatchRank = WICK_BATCH_RANK;

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

}  // namespace

StridedPlan<3> batch_plan(View a, View b, const backend::MatmulDims& d) {
  const Shape batch_shape(
      std::vector<int64_t>(a.layout.shape.dims().begin(), a.layout.shape.dims().end() - 2));
  const Layout la(batch_shape, {a.layout.strides.begin(), a.layout.strides.end() - 2}, 0);
  const Layout lb(batch_shape, {b.layout.strides.begin(), b.layout.strides.end() - 2}, 0);
  std::vector<int64_t> out_strides = batch_shape.contiguous_strides();
  for (int64_t& s : out_strides) s *= d.m * d.n;
  const Layout lo(batch_shape, out_strides, 0);
  return make_plan<3>(batch_shape, {&la, &lb, &lo});
}

MatmulPlan GpuDevice::plan_matmul(View a, View b, const backend::MatmulDims& d) const {
  const size_t r = a.layout.rank();
  const auto plan = batch_plan(a, b, d);
  if (plan.shape.size() > kBatchRank)
    fail(
        ErrorKind::Unsupported, "matmul", "batch dims ",
        Shape(std::vector<int64_t>(a.layout.shape.dims().begin(), a.layout.shape.dims().end() - 2)),
        " do not collapse to ", kBatchRank, " on ", name(), "; make the inputs contiguous first");
  const int64_t sa_m = a.layout.strides[r - 2], sa_k = a.layout.strides[r - 1];
  const int64_t sb_k = b.layout.strides[r - 2], sb_n = b.layout.strides[r - 1];

  MatmulPlan p;
  p.d = d;
  p.gemv = d.m == 1 || d.n == 1;
  p.first = &buffer(a.storage);
  p.second = &buffer(b.storage);
  p.rows = d.m;
  p.cols = d.n;
  p.a_off = a.layout.start_offset;
  p.b_off = b.layout.start_offset;
  p.a_row = sa_m;
  p.a_k = sa_k;
  p.b_k = sb_k;
  p.b_col = sb_n;
  p.batch_shape = plan.shape.to_vector();
  p.a_batch = plan.strides[0].to_vector();
  p.b_batch = plan.strides[1].to_vector();
  // A size-1 batch dim (the plan of no batch dims is one, of stride 1) is only ever indexed at 0:
  // its stride must not keep the kernels from reading by vectors.
  for (size_t i = 0; i < p.batch_shape.size(); i++)
    if (p.batch_shape[i] == 1) p.a_batch[i] = p.b_batch[i] = 0;
  // gemv: the matrix operand and the vector, oriented so the output runs along "rows".
  if (p.gemv && d.m == 1 && d.n != 1) {  // y = b^T a: b is the matrix, its rows are the n columns
    std::swap(p.first, p.second);
    std::swap(p.a_off, p.b_off);
    std::swap(p.a_batch, p.b_batch);
    p.rows = d.n;
    p.a_row = sb_n;
    p.a_k = sb_k;
    p.b_k = sa_k;
  }
  return p;
}

uint32_t MatmulPlan::aligned_flags(int64_t bm, int64_t bn, int64_t bk) const {
  return (d.m % bm == 0 ? 1u : 0u) | (d.n % bn == 0 ? 2u : 0u) | (d.k % bk == 0 ? 4u : 0u);
}

std::array<uint32_t, 3> MatmulPlan::tile_grid(int64_t bm, int64_t bn) const {
  return {to_index((d.n + bn - 1) / bn, "tile count"), to_index((d.m + bm - 1) / bm, "tile count"),
          1};
}

void GpuDevice::record_matmul(const Pipeline& pipeline, std::array<uint32_t, 3> groups,
                              const MatmulPlan& p, Storage& dst) {
  // The batch runs along the grid's z; beyond the device limit, in several dispatches.
  const int64_t max_z = device_caps().max_group_count_z;
  std::vector<BatchParams> pushes;
  for (int64_t z0 = 0; z0 < p.d.batch; z0 += max_z) {
    BatchParams pc{};
    pc.rows = to_index(p.rows, "rows");
    pc.cols = to_index(p.cols, "cols");
    pc.depth = to_index(p.d.k, "k");
    pc.batch_rank = static_cast<uint32_t>(p.batch_shape.size());
    pc.batch_base = to_index(z0, "batch");
    for (size_t i = 0; i < kBatchRank; i++) {
      const bool used = i < p.batch_shape.size();
      pc.batch_shape[i] = used ? to_index(p.batch_shape[i], "batch") : 1;
      pc.a_batch[i] = used ? to_index(p.a_batch[i], "stride") : 0;
      pc.b_batch[i] = used ? to_index(p.b_batch[i], "stride") : 0;
    }
    pc.a_offset = to_index(p.a_off, "offset");
    pc.a_row = to_index(p.a_row, "stride");
    pc.a_k = to_index(p.a_k, "stride");
    pc.b_offset = to_index(p.b_off, "offset");
    pc.b_k = to_index(p.b_k, "stride");
    pc.b_col = to_index(p.b_col, "stride");
    pushes.push_back(pc);
  }
  const BufferAccess args[] = {
      {p.first, Access::Read}, {p.second, Access::Read}, {&buffer(dst), Access::Write}};
  queue_->record([&](CommandQueue::Recorder& rec) {
    for (size_t i = 0; i < pushes.size(); i++) {
      auto g = groups;
      g[2] = static_cast<uint32_t>(
          std::min<int64_t>(max_z, p.d.batch - static_cast<int64_t>(i) * max_z));
      rec.dispatch(pipeline, args, param_words(pushes[i]), g);
    }
  });
}

void GpuDevice::matmul(View a, View b, const backend::MatmulDims& d, Storage& dst) {
  const DType dt = a.storage.dtype();
  require(dt, "matmul");
  const MatmulPlan p = plan_matmul(a, b, d);
  auto dtype_defines = [dt] {
    Defines defs;
    add_dtype(defs, "", dt);
    return defs;
  };
  const Pipeline* pipeline;
  std::array<uint32_t, 3> groups{};
  if (p.gemv) {
    const bool per_group = p.a_k == 1 && d.k >= 64;  // rows contiguous along k: coalesce
    const uint32_t group = per_group ? 1u : 0u;
    pipeline = &kernel(KernelFamily::Gemv, {group, static_cast<uint32_t>(dt)},
                       [&] { return key_for("gemv", dtype_defines(), {group}); });
    groups = per_group ? grid(static_cast<uint64_t>(p.rows) * kWorkgroupSize)
                       : grid(static_cast<uint64_t>(p.rows));
  } else {
    const TileChoice t = choose_tiles(d.m, d.n, d.batch, dt, device_caps().max_shared_memory);
    const uint32_t aligned = p.aligned_flags(t.bm, t.bn, t.bk);
    // Small tiles keep one fetch order: fewer pipelines to build (lavapipe's CI builds them all).
    const uint32_t loads =
        t.bm < 64 ? 0u
                  : load_mode(p.a_k, p.a_row, d.k, d.m, p.a_off, p.a_batch, true) |
                        load_mode(p.b_k, p.b_col, d.k, d.n, p.b_off, p.b_batch, false) << 2;
    pipeline = &kernel(
        KernelFamily::Matmul, {t.bm, t.bn, t.bk, aligned, loads, static_cast<uint32_t>(dt)}, [&] {
          return key_for("matmul", dtype_defines(), {t.bm, t.bn, t.bk, aligned, loads});
        });
    groups = p.tile_grid(t.bm, t.bn);
  }
  record_matmul(*pipeline, groups, p, dst);
}

}  // namespace wick::gpu
