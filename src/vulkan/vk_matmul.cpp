// Vulkan's own GEMM: f16 products on cooperative matrices (matmul_coop.comp, tensor cores) where
// the device has them. Every other product is GpuDevice's (the SIMT kernel and gemv).
#include "vulkan/vk_device.h"

namespace wick::vulkan {

using backend::Storage;
using backend::View;

namespace {

// How matmul_coop.comp stages an operand (its A_MODE / B_MODE): 1 by 16-byte vectors (8 halves)
// along `first`, 2 along `second`, 0 element by element.
uint32_t operand_mode(int64_t first_stride, int64_t second_stride, int64_t offset,
                      const std::vector<int64_t>& batch_strides, int64_t first_len,
                      int64_t second_len) {
  if (gpu::vectors_fit(8, first_stride, first_len, second_stride, offset, batch_strides)) return 1;
  if (gpu::vectors_fit(8, second_stride, second_len, first_stride, offset, batch_strides)) return 2;
  return 0;
}

}  // namespace

void VulkanDevice::matmul(View a, View b, const backend::MatmulDims& d, Storage& dst) {
  const DType dt = a.storage.dtype();
  const bool gemv = d.m == 1 || d.n == 1;
  if (dt != DType::F16 || gemv || !caps().coopmat_f16 || !options_.cooperative_matrix) {
    GpuDevice::matmul(a, b, d, dst);
    return;
  }
  require(dt, "matmul");
  const gpu::MatmulPlan p = plan_matmul(a, b, d);
  // Tensor cores (matmul_coop.comp): each operand staged by 16-byte vectors where its strides
  // allow, along whichever dim is contiguous; else gathered element by element.
  // Tile and workgroup by shape (measured on an H200, docs/perf.md): 128 x 128 tiles where
  // there are a couple of waves of them (2048^2 has 256), with 4 subgroups of 64 x 64 from 512
  // tiles, 8 subgroups of 64 x 32 below; 64 x 64 tiles for smaller products. A 512-token
  // prompt's projections (20-96 tiles of 128) ran 1.8x faster on 64 x 64 tiles: prefill 33k ->
  // 60k tok/s for SmolLM2-135M (session 14).
  const int64_t tiles128 = ((d.m + 127) / 128) * ((d.n + 127) / 128);
  uint32_t tile = d.m >= 512 && d.n >= 512 && tiles128 >= 256 ? 128u : 64u;
  uint32_t threads = tile == 128 && tiles128 >= 512 ? 128u : 256u;
  if (options_.coop_tile) tile = options_.coop_tile;
  if (options_.coop_threads) threads = options_.coop_threads;
  if ((tile != 64 && tile != 128) || (threads != 128 && threads != 256))
    fail(ErrorKind::Unsupported, "matmul", "the cooperative-matrix kernel takes tiles of 64 or ",
         "128 and 128 or 256 threads, not ", tile, " and ", threads);
  const uint32_t a_mode = operand_mode(p.a_k, p.a_row, p.a_off, p.a_batch, d.k, d.m);
  const uint32_t b_mode = operand_mode(p.b_col, p.b_k, p.b_off, p.b_batch, d.n, d.k);
  // k step 64 (one shared stage) where an operand arrives by vectors along k: its rows are
  // then read 128 bytes at a time instead of 64; 32 (two stages) otherwise (measured on the
  // H200 with gathered operands only, see matmul_coop.comp).
  const uint32_t bk = a_mode == 1 || b_mode == 2 ? 64u : 32u;
  const uint32_t aligned = p.aligned_flags(tile, tile, bk);
  const gpu::Pipeline& pipeline =
      kernel(gpu::KernelFamily::MatmulCoop, {tile, aligned, a_mode, b_mode, threads, bk}, [&] {
        gpu::Defines defs;
        add_dtype(defs, "", dt);
        defs.emplace_back("BK_DEF", std::to_string(bk));
        return key_for("matmul_coop", std::move(defs), {tile, tile, aligned, a_mode, b_mode},
                       threads);
      });
  coop_matmuls_.fetch_add(1, std::memory_order_relaxed);
  record_matmul(pipeline, p.tile_grid(tile, tile), p, dst);
}

}  // namespace wick::vulkan
