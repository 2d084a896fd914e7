// Compile cases (tests/cuda_compile.h) of the row, matrix, attention and quantized CUDA kernels:
// reduce, norm, sort, rope, rope_kv, attention, gemv, matmul, qact, qmatvec and qmatmul, with the
// defines and constants the host keys them by (src/gpu/gpu_reduce.cpp, gpu_attention.cpp,
// gpu_matmul.cpp, gpu_quantized.cpp), plus block sizes other than the default where a kernel
// takes any.
#ifdef WICK_WITH_CUDA

#include <string>
#include <vector>

#include "backend/backend.h"
#include "cuda_compile.h"
#include "quantized/kernels.h"
#include "wick/quant_type.h"

namespace wick::test {
namespace {

using backend::ReduceOp;

constexpr DType kFloatDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64};
constexpr DType kActDTypes[] = {DType::F32, DType::F16, DType::BF16};  // QMatMul's x
constexpr QuantType kBlockTypes[] = {
    QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0,   QuantType::Q5_1,  QuantType::Q8_0,
    QuantType::Q8_1, QuantType::Q2_K, QuantType::Q3_K,   QuantType::Q4_K,  QuantType::Q5_K,
    QuantType::Q6_K, QuantType::Q8_K, QuantType::IQ4_NL, QuantType::IQ4_XS};

gpu::Defines define(const char* name, uint32_t value) {
  return {{name, std::to_string(value)}};
}

// Block sizes the row kernels are compiled with besides the default 256 (any multiple of 32).
constexpr uint32_t kOtherBlock = 64;

WICK_CUDA_COMPILE_CASES(rows) {
  for (DType dt : kAllDTypes) {
    if (dt == DType::I32) continue;  // compute kernels do not take i32 (GpuDevice::require)
    for (uint32_t op = 0; op <= static_cast<uint32_t>(ReduceOp::Mean); op++) {
      const bool arg = op == static_cast<uint32_t>(ReduceOp::ArgMax) ||
                       op == static_cast<uint32_t>(ReduceOp::ArgMin);
      for (uint32_t per_group : {0u, 1u})
        cases.add("reduce.cu", {dtype_defines("", dt), define("OUT_INDEX", arg ? 1 : 0),
                                spec_define(0, op), spec_define(1, per_group)});
      if (op != static_cast<uint32_t>(ReduceOp::Sum) && op != static_cast<uint32_t>(ReduceOp::Mean))
        cases.add("reduce.cu", {dtype_defines("", dt), define("OUT_INDEX", arg ? 1 : 0),
                                spec_define(0, op), spec_define(1, 1), define("SPLIT_ROWS", 1)});
    }
    cases.add("reduce.cu", {dtype_defines("", dt), define("OUT_INDEX", 0), spec_define(0, 0),
                            spec_define(1, 1), define("WG_SIZE", kOtherBlock)});
    for (uint32_t descending : {0u, 1u})
      cases.add("sort.cu", {dtype_defines("", dt), spec_define(0, descending)});
  }
  cases.add("sort.cu",
            {dtype_defines("", DType::F64), spec_define(0, 1), define("WG_SIZE", kOtherBlock)});
  for (DType dt : kFloatDTypes) {
    for (uint32_t op = 0; op < 4; op++)  // softmax, log_softmax, rms_norm, layer_norm
      cases.add("norm.cu", {dtype_defines("", dt), param_defines(dt), spec_define(0, op)});
    cases.add("norm.cu", {dtype_defines("", dt), param_defines(dt), spec_define(0, 3),
                          define("WG_SIZE", kOtherBlock)});
    for (uint32_t interleaved : {0u, 1u})
      cases.add("rope.cu", {dtype_defines("", dt), spec_define(0, interleaved)});
  }
}

// Decode attention (gpu_attention.cpp): rope_kv with INTERLEAVED and PER_ITEM_POS, attention with
// its block of 128 threads in the scalar form and the vector form (LANES, WICK_SPEC_0: 1 .. 32
// lanes a row); caches of q's dtype (KV_SAME), or f16/bf16 under f32.
WICK_CUDA_COMPILE_CASES(attention) {
  struct Pair {
    DType q, kv;
  };
  std::vector<Pair> pairs = {{DType::F32, DType::F16}, {DType::F32, DType::BF16}};
  for (DType dt : kFloatDTypes) pairs.push_back({dt, dt});
  for (const Pair& p : pairs) {
    const gpu::Defines same = p.q == p.kv ? gpu::Defines{{"KV_SAME", "1"}} : gpu::Defines{};
    const gpu::Defines q = dtype_defines("", p.q), kv = dtype_defines("KV_", p.kv);
    for (uint32_t interleaved : {0u, 1u})
      for (uint32_t per_item : {0u, 1u})
        cases.add("rope_kv.cu",
                  {q, kv, same, spec_define(0, interleaved), spec_define(1, per_item)});
    const gpu::Defines bytes = define("KV_BYTES", static_cast<uint32_t>(dtype_size(p.kv)));
    for (uint32_t lanes : {0u, 1u, 4u, 8u, 16u, 32u})
      cases.add("attention.cu",
                {q, kv, same, bytes, spec_define(0, lanes), define("WG_SIZE", 128)});
  }
}

// vk_matmul.cpp's tile table: (bm, bn, bk) per dtype width; the 32 x 32 tile fetches by scalars
// only. Of its 8 alignments x 12 fetch orders per tile (1,200 compiles over the dtypes), the cases
// take every fetch order of each operand and every alignment bit set and clear once per dtype and
// tile: each is a template parameter of its own code path.
struct Tile {
  uint32_t bm, bn, bk;
};
constexpr Tile kNarrowTiles[] = {{128, 128, 8}, {64, 64, 16}, {32, 32, 16}};
constexpr Tile kWideTiles[] = {{64, 64, 8}, {32, 32, 16}};
struct Fetch {
  uint32_t a_mode, b_mode, aligned;  // LOADS = a_mode | b_mode << 2
};
constexpr Fetch kFetches[] = {{0, 1, 0}, {1, 0, 7}, {2, 3, 3}, {3, 0, 4}};

WICK_CUDA_COMPILE_CASES(matrix) {
  for (DType dt : kAllDTypes) {
    if (dt == DType::I32) continue;  // compute kernels do not take i32 (GpuDevice::require)
    for (uint32_t per_group : {0u, 1u})
      cases.add("gemv.cu", {dtype_defines("", dt), spec_define(0, per_group)});
    const bool wide = dtype_size(dt) == 8;
    for (const Tile& t :
         wide ? std::vector<Tile>(std::begin(kWideTiles), std::end(kWideTiles))
              : std::vector<Tile>(std::begin(kNarrowTiles), std::end(kNarrowTiles))) {
      for (const Fetch& f : kFetches) {
        const uint32_t loads = t.bm < 64 ? 0u : f.a_mode | f.b_mode << 2;
        cases.add("matmul.cu",
                  {dtype_defines("", dt), spec_define(0, t.bm), spec_define(1, t.bn),
                   spec_define(2, t.bk), spec_define(3, f.aligned), spec_define(4, loads)});
      }
    }
  }
  cases.add("gemv.cu",
            {dtype_defines("", DType::BF16), spec_define(0, 1), define("WG_SIZE", kOtherBlock)});
}

// gpu_quantized.cpp: x quantized by qact.cu (ACT_Q8, no dtype) for the formats the CPU has integer
// dot products for, else read in its dtype (every format: q8_1 and q8_k always, the others from
// quantized::gemm_min_rows() x rows on); qmatvec takes 1..8 x rows (NUM_COLS), NUM_ROWS output
// rows and WG_SIZE threads per block (knobs: 2 and 32 by default), qmatmul 32 or 64 tiles. The x
// dtype only changes x's loads: the formats take the three in turn. dequant.cu: every format,
// both modes.
WICK_CUDA_COMPILE_CASES(quantized) {
  for (DType dt : kActDTypes)
    for (uint32_t block : {32u, 256u}) {
      cases.add("qact.cu", {dtype_defines("", dt), define("ACT_BLOCK", block)});
      // With QMatMul's prologues (forward_rms_norm: 1, forward_swiglu: 2), whose epsilon is a
      // PARAM_T, at norm.cu's block size.
      for (uint32_t prologue : {1u, 2u})
        cases.add("qact.cu", {dtype_defines("", dt), param_defines(dt), define("ACT_BLOCK", block),
                              define("PROLOGUE", prologue), define("WG_SIZE", 256)});
    }
  uint32_t variant = 0;
  for (QuantType t : kBlockTypes) {
    const gpu::Defines qtype = define("QTYPE", static_cast<uint32_t>(t));
    if (quantized::dot_kernel_scalar(t)) {
      const gpu::Defines act = define("ACT_Q8", 1);
      for (uint32_t cols : {1u, 8u})
        cases.add("qmatvec.cu",
                  {act, qtype, define("WG_SIZE", 32), spec_define(0, cols), spec_define(1, 2)});
      cases.add("qmatvec.cu",
                {act, qtype, define("WG_SIZE", 128), spec_define(0, 3), spec_define(1, 4)});
      // The decode step's residual, joined to the stores (one warp and several).
      cases.add("qmatvec.cu", {act, qtype, define("RESIDUAL", 1), define("WG_SIZE", 32),
                               spec_define(0, 1), spec_define(1, 2)});
      cases.add("qmatvec.cu", {act, qtype, define("RESIDUAL", 1), define("WG_SIZE", 128),
                               spec_define(0, 2), spec_define(1, 1)});
      // x staged in shared memory (ACT_STAGE): 8 and 2 x rows, with and without the residual.
      cases.add("qmatvec.cu", {act, qtype, define("ACT_STAGE", 1), define("ACT_ROW_WORDS", 180),
                               define("WG_SIZE", 128), spec_define(0, 8), spec_define(1, 4)});
      cases.add("qmatvec.cu", {act, qtype, define("ACT_STAGE", 1), define("ACT_ROW_WORDS", 482),
                               define("RESIDUAL", 1), define("WG_SIZE", 32), spec_define(0, 2),
                               spec_define(1, 2)});
      for (uint32_t tile : {32u, 64u})
        cases.add("qmatmul.cu", {act, qtype, spec_define(0, tile), spec_define(1, tile),
                                 spec_define(2, tile == 64 ? 3 : 0)});
      // On the tensor cores (MMA, 32-element formats): x in place and staged, one warp and four,
      // with the residual.
      if (quant_type_info(t)->block_elems == 32) {
        const gpu::Defines mma = define("MMA", 1);
        cases.add("qmatvec.cu",
                  {act, qtype, mma, define("WG_SIZE", 128), spec_define(0, 8), spec_define(1, 16)});
        cases.add("qmatvec.cu", {act, qtype, mma, define("ACT_STAGE", 1),
                                 define("ACT_ROW_WORDS", 484), define("RESIDUAL", 1),
                                 define("WG_SIZE", 32), spec_define(0, 3), spec_define(1, 16)});
      }
    }
    // Long x on the tensor-core GEMM: W decoded to f16; QMatMul::rows: rows by id in f32.
    cases.add("dequant.cu", {qtype});
    cases.add("dequant.cu", {qtype, define("GATHER", 1)});
    const uint32_t v = variant++;
    const DType dt = kActDTypes[v % 3];
    cases.add("qmatvec.cu", {dtype_defines("", dt), qtype, define("WG_SIZE", v % 2 ? 128 : 32),
                             spec_define(0, 1 + v % 8), spec_define(1, 1 + v % 3)});
    const uint32_t tile = v % 2 ? 64 : 32;
    cases.add("qmatmul.cu", {dtype_defines("", kActDTypes[(v + 1) % 3]), qtype,
                             spec_define(0, tile), spec_define(1, tile), spec_define(2, v % 4)});
  }
  // The decode q/k/v projection's stores rotating q and k and writing the caches (ROPE_KV): each
  // cache dtype, one warp and several, after qact, staged, x in f32, and quantizing its own x.
  const DType kv_types[] = {DType::F32, DType::F16, DType::BF16};
  for (uint32_t i = 0; i < 3; i++) {
    const gpu::Defines rope = define("ROPE_KV", 1), kv = dtype_defines("KV_", kv_types[i]);
    const gpu::Defines qtype = define("QTYPE", static_cast<uint32_t>(QuantType::Q4_1));
    cases.add("qmatvec.cu", {define("ACT_Q8", 1), qtype, rope, kv, param_defines(DType::F32),
                             define("WG_SIZE", i == 1 ? 32 : 128), spec_define(0, 1 + 3 * i),
                             spec_define(1, i == 1 ? 2 : 4)});
    cases.add("qmatvec.cu", {define("ACT_Q8", 1), qtype, rope, kv, param_defines(DType::F32),
                             define("ACT_STAGE", 1), define("ACT_ROW_WORDS", 180),
                             define("WG_SIZE", 128), spec_define(0, 8), spec_define(1, 2 * i + 2)});
    cases.add("qmatvec.cu",
              {dtype_defines("", kActDTypes[i]), qtype, rope, kv, param_defines(DType::F32),
               define("WG_SIZE", 32), spec_define(0, 2), spec_define(1, 2)});
    cases.add("qmatvec.cu",
              {define("ACT_Q8", 1), qtype, rope, kv, param_defines(DType::F32), define("MMA", 1),
               define("ACT_STAGE", 1), define("ACT_ROW_WORDS", 180), define("WG_SIZE", 128 << i),
               spec_define(0, 2 + 3 * i), spec_define(1, 16)});
    cases.add("qmatvec.cu",
              {dtype_defines("", kActDTypes[i]), param_defines(kActDTypes[i]), qtype, rope, kv,
               define("ACT_INLINE", 1), define("ACT_BLOCK", 32), define("ACT_K", 576),
               define("ACT_ROW_WORDS", 180), define("NORM_LANES", 256), define("WG_SIZE", 128),
               spec_define(0, 1), spec_define(1, 4)});
  }
  // qmatvec quantizing its own x (ACT_INLINE, each prologue): 32-element blocks (the staged
  // path, k = 576 in 4.5 rounds of 128 threads, 1536 over two chunks of 32 threads) and 256-element
  // ones (a block per warp), with and without the residual, one and two x rows, each x dtype.
  uint32_t inline_variant = 0;
  for (QuantType t : {QuantType::Q4_1, QuantType::Q4_K})
    for (uint32_t prologue : {0u, 1u, 2u})
      for (uint32_t threads : {32u, 128u}) {
        const uint32_t iv = inline_variant++;
        const uint32_t block = quant_type_info(t)->block_elems == 32 ? 32u : 256u;
        const uint32_t k = block == 32 ? (threads == 32 ? 1536u : 576u) : 512u;
        const uint32_t row_words = (k / 4 + (block == 32 ? 2 * (k / 32) : k / 256) + 3) / 4 * 4;
        const DType dt = kActDTypes[iv % 3];
        cases.add("qmatvec.cu", {dtype_defines("", dt), param_defines(dt),
                                 define("QTYPE", static_cast<uint32_t>(t)),
                                 define("ACT_INLINE", prologue), define("ACT_BLOCK", block),
                                 define("ACT_K", k), define("ACT_ROW_WORDS", row_words),
                                 define("NORM_LANES", 256), define("WG_SIZE", threads),
                                 spec_define(0, 1 + iv % 2), spec_define(1, threads == 32 ? 2 : 4),
                                 iv % 2 ? define("RESIDUAL", 1) : gpu::Defines{}});
      }
  // The feed-forward's gate/up product finishing h and its 8-bit rows (SWIGLU_Q8): after qact
  // and quantizing its own x (rms_norm), 32- and 256-element blocks, one warp and four, 1 to 8 x
  // rows, workgroups of 2, 4 and 8 rows.
  uint32_t swiglu_variant = 0;
  for (QuantType t : {QuantType::Q4_1, QuantType::Q4_K})
    for (uint32_t rows : {2u, 4u, 8u}) {
      const uint32_t sv = swiglu_variant++;
      const uint32_t block = quant_type_info(t)->block_elems == 32 ? 32u : 256u;
      const gpu::Defines qtype = define("QTYPE", static_cast<uint32_t>(t));
      const gpu::Defines swiglu = define("SWIGLU_Q8", 1), act_block = define("ACT_BLOCK", block);
      const gpu::Defines threads = define("WG_SIZE", sv % 2 ? 32 : 128);
      const gpu::Defines cols = spec_define(0, 1 + 7 * (sv % 2)), shape = spec_define(1, rows);
      cases.add("qmatvec.cu", {define("ACT_Q8", 1), param_defines(DType::F32), qtype, swiglu,
                               act_block, threads, cols, shape});
      const uint32_t k = block == 32 ? 576u : 512u;
      const uint32_t row_words = (k / 4 + (block == 32 ? 2 * (k / 32) : k / 256) + 3) / 4 * 4;
      cases.add("qmatvec.cu",
                {dtype_defines("", DType::F32), param_defines(DType::F32), define("ACT_INLINE", 1),
                 define("ACT_K", k), define("ACT_ROW_WORDS", row_words), define("NORM_LANES", 256),
                 qtype, swiglu, act_block, threads, cols, shape});
    }
  // The product's argmax in its kernel (ARGMAX, QMatMul::forward_argmax): after qact, on x read in
  // its dtype, and quantizing its own x (rms_norm); one warp and four, 1 and 8 x rows.
  uint32_t argmax_variant = 0;
  for (QuantType t : {QuantType::Q8_0, QuantType::Q4_K})
    for (uint32_t rows : {1u, 4u}) {
      const uint32_t av = argmax_variant++;
      const uint32_t block = quant_type_info(t)->block_elems == 32 ? 32u : 256u;
      const uint32_t threads = av % 2 ? 32u : 128u;
      const gpu::Defines qtype = define("QTYPE", static_cast<uint32_t>(t));
      const gpu::Defines argmax = define("ARGMAX", 2 * threads);
      const gpu::Defines wg = define("WG_SIZE", threads);
      const gpu::Defines cols = spec_define(0, 1 + 7 * (av % 2)), shape = spec_define(1, rows);
      cases.add("qmatvec.cu",
                {define("ACT_Q8", 1), param_defines(DType::F32), qtype, argmax, wg, cols, shape});
      const DType dt = kActDTypes[av % 3];
      cases.add("qmatvec.cu", {dtype_defines("", dt), qtype, argmax, wg, cols, shape});
      const uint32_t k = block == 32 ? 576u : 512u;
      const uint32_t row_words = (k / 4 + (block == 32 ? 2 * (k / 32) : k / 256) + 3) / 4 * 4;
      cases.add("qmatvec.cu",
                {dtype_defines("", DType::F32), param_defines(DType::F32), define("ACT_INLINE", 1),
                 define("ACT_BLOCK", block), define("ACT_K", k), define("ACT_ROW_WORDS", row_words),
                 define("NORM_LANES", 256), qtype, argmax, wg, cols, shape});
    }
}

}  // namespace
}  // namespace wick::test

#endif  // WICK_WITH_CUDA
