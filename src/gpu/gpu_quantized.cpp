// GPU quantized matmul: y = x @ W^T with W's ggml blocks in a device buffer (QMatMul uploads
// them once). For a few x rows (decode) qmatvec.comp decodes W on the fly and reads each weight
// byte once per 8 x rows; longer inputs (prompts) go to qmatmul.comp on GPUs, a tiled GEMM that
// decodes W's tiles into shared memory (the table below says where the switch is). As on the CPU,
// x is first quantized to 8 bits per block (qact.comp, the CPU's activation quantizer value for
// value) for the formats the CPU has integer dot products for, up to the rows where the CPU
// switches to f32 sgemm (quantized::gemm_min_rows()); then both kernels compute the CPU's products
// (qmatvec: integer sums per run of 8; qmatmul: d_x * q staged as f32), so the two backends differ
// only in summation order. Beyond those rows, and for q8_1/q8_k weights (f32 BLAS on the CPU), x
// (f32, f16 or bf16) is read through its strides in f32. The format is a define (QTYPE), so each
// kernel is compiled once per format (and x dtype where it reads x).
// Long x on a device whose matmul has tensor cores (cuBLASLt; Vulkan's cooperative matrices) takes
// neither kernel: dequant.comp decodes W's blocks to f16 (n_out, k) in a pooled scratch buffer for
// this call, x is cast to f16 if it is not, matmul multiplies them (f32 sums, f16 out) and the
// product is cast to f32 (then the residual added). f16, as ggml, rather than bf16: its 11-bit
// significand keeps each rounding (x, w, y) within 2^-11, under the 8-bit x's error, and the
// formats' scales are f16 already, so only weights near f16's limit (65504) could overflow; the
// f16 product bounds |y| to that limit too (activations of the models wick runs stay far below).
// The x rows where this starts are a table entry (default_dequant_rows), WICK_QMATMUL_F16 the
// knob; forced on a device without tensor cores it runs the same steps on the SIMT GEMM (tests).
// A prologue (QMatMul::forward_rms_norm, forward_swiglu) joins the quantization of x: one qact
// kernel computes the rms_norm or silu * up rows exactly as norm / unary + binary would have
// stored them and quantizes them, so the product takes 2 dispatches instead of 3 or 4. Where x is
// not quantized, the prologue's own ops run first.
// Decode takes one: qmatvec's ACT_INLINE variant quantizes its workgroup's x rows itself (with
// the prologue, qact's code and bits) in shared memory, for up to GpuOptions::qmatvec_fuse_rows x
// rows (default_qmatvec_fuse_rows, WICK_QMATVEC_FUSE) where they fit (kInlineActBytes);
// elsewhere qact runs first.
// From GpuOptions::qmatvec_stage_rows x rows (ACT_STAGE), qmatvec copies qact's rows into shared
// memory before its dot loop and reads them there. Where the kernels have 8-bit MMA (CUDA), from
// GpuOptions::qmatvec_mma_rows x rows qmatvec's MMA variant multiplies on the tensor cores (16
// output rows a workgroup, 32-element formats).
#include <algorithm>
#include <limits>
#include <span>
#include <string>

#include "gpu/cache_params.h"
#include "gpu/gpu_device.h"
#include "gpu/kernel_params.h"
#include "quantized/kernels.h"

namespace wick::gpu {

using backend::Storage;
using backend::View;

namespace {

constexpr int64_t kMaxVecCols = 8;           // MAX_COLS in qmatvec.comp
constexpr uint32_t kMaxVecRowsPerGroup = 8;  // MAX_ROWS
constexpr uint32_t kMmaRows = 16;            // qmatvec.cu's MMA: output rows per workgroup
constexpr uint64_t kActLanes = 32;           // qact's threads per 8-bit block (include/qact.*)
// The most shared memory qmatvec's staged and quantized x rows may take (ACT_INLINE): Vulkan's
// least maxComputeSharedMemorySize; 2 rows of k = 1536 (SmolLM2-135M's down_proj).
constexpr int64_t kInlineActBytes = 16384;
// The most 32-bit words of weight rows a thread of qmatvec's ACT_INLINE holds across its prologue
// (W_STAGE): its registers.
constexpr int64_t kMaxWeightStageWords = 16;

bool has_kernel(QuantType t) {
  switch (t) {
    case QuantType::Q4_0:
    case QuantType::Q4_1:
    case QuantType::Q5_0:
    case QuantType::Q5_1:
    case QuantType::Q8_0:
    case QuantType::Q8_1:
    case QuantType::Q2_K:
    case QuantType::Q3_K:
    case QuantType::Q4_K:
    case QuantType::Q5_K:
    case QuantType::Q6_K:
    case QuantType::Q8_K:
    case QuantType::IQ4_NL:
    case QuantType::IQ4_XS:
      return true;
    default:
      return false;
  }
}

// The tuning tables: data, not code (qmatvec.comp's shape: default_qmatvec_shape below).
// qmatmul.comp: the output tile.
struct TileChoice {
  uint32_t bm, bn;
};
TileChoice choose_tiles(int64_t m, int64_t n_out) {
  if (m >= 128 && n_out >= 128) return {64, 64};
  return {32, 32};
}

// The formats the CPU multiplies with integer dot products of 8-bit x (its dot kernels).
bool quantizes_x(QuantType t) {
  return quantized::dot_kernel_scalar(t) != nullptr;
}

// The elements of an 8-bit block of x for weights of type t (qact's ACT_BLOCK), and the words of
// a quantized row of k elements: k / 4 of codes, then the scales ((d, s) per 32, d per 256).
int64_t act_block_elems(QuantType t) {
  return quantized::act_kind(t) == quantized::ActKind::Block32 ? 32 : 256;
}
int64_t act_row_words(QuantType t, int64_t k) {
  return k / 4 + (act_block_elems(t) == 32 ? 2 * (k / 32) : k / 256);
}
// The shared memory of SWIGLU_Q8's grouped quantizer (qmatvec.comp's ACT_GROUPED, taken where the
// workgroup is whole subgroups of 32): 3 words a thread.
int64_t swiglu_tail_bytes(int64_t threads) {
  return threads % 32 == 0 ? 12 * threads : 0;
}

// The x rows from which qmatmul dequantizes W to f16 for a tensor-core GEMM. Not measured yet:
// ggml moves to cuBLAS (f16) from 32-64 rows of x where it does not use its int8 MMA kernels.
constexpr int64_t kDequantRows = 64;

}  // namespace

int64_t default_dequant_rows() {
  return kDequantRows;
}

bool GpuDevice::qmatmul_dequantizes(int64_t m) const {
  const int64_t rows = options_.dequant_rows >= 0 ? options_.dequant_rows
                       : f16_tensor_gemm()        ? default_dequant_rows()
                                                  : 0;
  return rows > 0 && m >= rows;
}

QMatVecShape default_qmatvec_shape(const DeviceCaps& caps) {
  // CPU implementations (lavapipe) run a workgroup on one host thread, 8 invocations per SIMD
  // vector: one vector per workgroup (no barrier) and 8 rows measured fastest (SmolLM2 shapes,
  // 1.5-2.4x faster than 32 x 2 or 64 x 4). Their barriers are slow: the tiled kernel lost to
  // qmatvec at every m tried (m = 16: 12x, m = 64: 5x), so qmatvec takes every x. GPUs: two
  // 32-wide subgroups and two rows per workgroup, 64 x 4 for wide matrices, and the tiled kernel
  // beyond 8 x rows. On the H200's Vulkan (SmolLM2-135M decode, session 14, WICK_VK_PROFILE):
  // 64 x 2 took 6.9-7.2 us a projection against 7.3-9.0 at ggml's 32 x 2 (decode 520-528 against
  // 482-496 tok/s; 128 x 4 was slower, 466 against 500), and the lm_head 62 us at 64 x 4
  // against 80 at 128 x 8 (162 against 266 us for 8 x rows). The CUDA backend's qmatvec.cu
  // takes its own (CudaOptions::from_knobs).
  // Since the products quantize x themselves (each workgroup repeats the x prologue), 1 or 2 x
  // rows (decode) take 128 threads a workgroup: 2 rows, and 4 for matrices of 2048 to 16383 rows
  // (half the workgroups, each prologue shared by four warps). On the H100 (session 23,
  // WICK_QMATVEC_SHAPE sweeps, WICK_VK_PROFILE, SmolLM2-135M): the feed-forward gate/up kernel
  // (3072 rows) 13.1 us a dispatch against 15.0 at 64 x 2 (18.5 at 128 x 2, 19.6 at 256 x 4),
  // q/k/v 9.6 against 10.4, o 7.5 against 8.0, down 6.9 against 7.9; decode 662-668 against
  // 582-617 tok/s with 64 x 2 everywhere. 128 x 4 for every matrix lost (q/k/v 11.0, o and down
  // 8.6-8.9 us), as did 128 x 4 for passes of 4 and 8 sequences (8: 2.90-2.97 against 2.74-2.82
  // ms) and 128 x 2 there (2.81 against 2.75): from 3 x rows, 64 x 2.
  if (caps.is_cpu) return {8, 8, std::numeric_limits<int64_t>::max()};
  QMatVecShape s{64, 2, kMaxVecCols};
  s.wide_min_out = 16384;  // SmolLM2's lm_head (49152 x 576)
  s.wide_threads = 64;
  s.wide_rows = 4;
  s.few_x_rows = 2;
  s.few_threads = 128;
  s.few_rows = 2;
  s.mid_min_out = 2048;
  s.mid_threads = 128;
  s.mid_rows = 4;
  return s;
}

int64_t default_qmatvec_fuse_rows(const DeviceCaps& caps) {
  // One x row (decode of one sequence) on GPUs, for products of k <= default_qmatvec_fuse_max_k
  // and not of the wide shape; never on CPU implementations (lavapipe: each workgroup's
  // quantization is a host thread's work). On the H200's Vulkan (session 17, WICK_VK_PROFILE of
  // SmolLM2-135M's one-token pass) the products that quantize x themselves took 12.1 (q/k/v,
  // rms_norm), 10.6 (gate/up) and 7.8 us (o) against 12.9, 12.9 and 12.1 for qact + qmatvec, but
  // the down projection (k = 1536, swiglu) 27.8 against 12.8 and the lm_head (12288 workgroups
  // each quantizing x) 65 against 31; fused everywhere, decode was 450-465 against 584-588 tok/s
  // (docs/perf.md). Two rows fused took 3.1 ms a pass against 1.8. CUDA: CudaOptions::from_knobs.
  return caps.is_cpu ? 0 : 1;
}

int64_t default_qmatvec_fuse_max_k(const DeviceCaps&) {
  return 576;  // the measured winners above; 1536 lost
}

int64_t default_qmatvec_swiglu_rows(const DeviceCaps&) {
  // Decode's one or two x rows. From 3 rows each workgroup holds one gate and one up row (64 x
  // 2) and counts every x row's blocks of h: on the H100's Vulkan (SmolLM2-135M, session 24,
  // WICK_VK_PROFILE) the gate/up kernel of 8 rows took 30.1 us against 14.8 + 6.1 for the plain
  // product and qact's swiglu; passes of 3 / 4 / 8 sequences 2.03-2.05 / 2.13 / 2.61-2.63 ms
  // against 2.17-2.21 / 2.47-2.50 / 2.86-2.92 with the stores, 1 and 2 sequences within the
  // runs' spread (docs/perf.md). CUDA: CudaOptions::from_knobs.
  return 2;
}

int64_t default_qmatvec_stage_rows(const DeviceCaps&) {
  // Never on Vulkan: staging qact's rows in shared memory made the H200's passes of 2 to 8
  // sequences slower (session 17: 8 sequences 2.749-2.757 ms against 2.390-2.396). CUDA's
  // qmatvec.cu gained and takes 2 (CudaOptions::from_knobs).
  return 0;
}

QMatVecShape GpuDevice::qmatvec_shape(int64_t n_out, int64_t m) const {
  QMatVecShape v = options_.qmatvec;
  if (n_out >= v.wide_min_out) {
    v.threads = v.wide_threads;
    v.rows = v.wide_rows;
  } else if (m <= v.few_x_rows) {
    const bool mid = n_out >= v.mid_min_out;
    v.threads = mid ? v.mid_threads : v.few_threads;
    v.rows = mid ? v.mid_rows : v.few_rows;
  }
  return v;
}

bool GpuDevice::qmatvec_takes(int64_t m) const {
  const int64_t col_groups = (m + kMaxVecCols - 1) / kMaxVecCols;
  return !qmatmul_dequantizes(m) && m <= options_.qmatvec.max_rows &&
         col_groups <= device_caps().max_group_count_z;
}

bool GpuDevice::qmatvec_mma(int64_t m, QuantType type) const {
  // x quantized in 32-element blocks (the CPU's integer dots) and a 32-element weight format.
  return options_.qmatvec_mma_rows > 0 && m >= options_.qmatvec_mma_rows &&
         device_caps().int8_mma && qmatvec_takes(m) && quantizes_x(type) &&
         m < quantized::gemm_min_rows() && quant_type_info(type)->block_elems == 32 &&
         quantized::act_kind(type) == quantized::ActKind::Block32;
}

void GpuDevice::qmatmul(View x, const backend::QPrologue& prologue, const Storage& wblocks,
                        QuantType type, int64_t n_out, int64_t k, const View* residual,
                        Storage& dst) {
  record_qmatmul(x, prologue, wblocks, type, n_out, k, residual, {}, dst);
}

bool GpuDevice::qmatmul_rope_kv(View x, const backend::QPrologue& prologue, const Storage& wblocks,
                                QuantType type, int64_t n_out, int64_t k,
                                const backend::QRopeKv& rope, Storage& q_out) {
  // qmatvec's stores rotate adjacent pairs (rope_i) in f32 tables read with a unit stride along
  // d/2 and one row stride per pair (rope_kv's direct case); each workgroup's rows are whole
  // pairs. Elsewhere the caller runs the product and rope_kv_cache.
  const int64_t m = x.layout.shape[0];
  const QMatVecShape v = qmatvec_shape(n_out, m);
  const bool even_rows = v.rows % 2 == 0 || qmatvec_mma(m, type);  // MMA: 16 rows
  if (!options_.qmatvec_rope || !rope.interleaved || !qmatvec_takes(m) || !even_rows ||
      rope.d % 2 != 0 || n_out != (rope.h + 2 * rope.kvh) * rope.d ||
      rope.tables.cos_q.storage.dtype() != DType::F32)
    return false;
  const backend::RopeTableViews& t = rope.tables;
  const int64_t half = rope.d / 2, max_seq = rope.k_cache.layout.shape[2];
  if (!tables_in_place(t.cos_q.layout, t.sin_q.layout, half, max_seq) ||
      !tables_in_place(t.cos_k.layout, t.sin_k.layout, half, max_seq))
    return false;
  record_qmatmul(x, prologue, wblocks, type, n_out, k, nullptr, QMatVecStores{.rope = &rope},
                 q_out);
  return true;
}

bool GpuDevice::qmatmul_argmax(View x, const backend::QPrologue& prologue,
                               const backend::QWeights& w, View ids) {
  // qmatvec's plain SIMT product (not its MMA variant, not the tiled kernel's x rows); elsewhere
  // the caller runs the product and argmax.
  const int64_t m = x.layout.shape[0];
  if (!options_.qmatvec_argmax || m < 1 || w.n_out < 1 || w.k < 1 || !has_kernel(w.type) ||
      !qmatvec_takes(m) || qmatvec_mma(m, w.type))
    return false;
  WICK_ASSERT(ids.layout.rank() == 1 && ids.layout.shape[0] == m &&
              ids.storage.dtype() == DType::U32);
  record_qmatmul(x, prologue, *w.blocks, w.type, w.n_out, w.k, nullptr,
                 QMatVecStores{.argmax_ids = &ids}, const_cast<Storage&>(ids.storage));
  return true;
}

bool GpuDevice::swiglu_stores_take(int64_t m, const backend::QWeights& gate_up,
                                   const backend::QWeights& down) const {
  using quantized::act_kind;
  if (m < 1 || m > options_.qmatvec_swiglu_rows || gate_up.n_out != 2 * down.k || down.k < 1)
    return false;
  // Both products of 8-bit x rows in qmatvec (not its MMA variant), in the same 8-bit format.
  for (const backend::QWeights* w : {&gate_up, &down})
    if (!has_kernel(w->type) || !quantizes_x(w->type) || qmatmul_dequantizes(m) ||
        m >= quantized::gemm_min_rows() || !qmatvec_takes(m) || qmatvec_mma(m, w->type))
      return false;
  if (act_kind(gate_up.type) != act_kind(down.type)) return false;
  // Where qact's rows are staged in shared memory (CUDA from 2 rows), the staged products stay.
  if (options_.qmatvec_stage_rows > 0 && m >= options_.qmatvec_stage_rows) return false;
  const int64_t block = act_block_elems(down.type);
  // A workgroup's rows: half gate, half up, its h within one block of h (SWIGLU_Q8).
  const QMatVecShape v = qmatvec_shape(gate_up.n_out, m);
  if (v.rows % 2 != 0 || block % (v.rows / 2) != 0 || down.k % block != 0 ||
      !device_caps().storage16)
    return false;
  // Its shared memory where qact quantized x (ACT_INLINE checks its own): the partial sums, a
  // block of h and its 8-bit words per x row, the grouped quantizer's.
  const int64_t cols = std::min<int64_t>(m, kMaxVecCols), threads = v.threads;
  const int64_t bytes = int64_t{v.rows} * cols * 4 * threads + cols * block * 4 +
                        cols * (block / 4 + 2) * 4 + swiglu_tail_bytes(threads) + 64;
  return bytes <= device_caps().max_shared_memory;
}

backend::StoragePtr GpuDevice::qmatmul_swiglu_ffn(View x, const backend::QPrologue& prologue,
                                                  const backend::QWeights& gate_up,
                                                  const backend::QWeights& down,
                                                  const View* residual) {
  const int64_t m = x.layout.shape[0], half = down.k;
  if (!swiglu_stores_take(m, gate_up, down)) return nullptr;
  to_index(m * down.n_out, "output elements");
  backend::StoragePtr dst = alloc(DType::F32, static_cast<size_t>(m * down.n_out));
  const int64_t row_words = act_row_words(down.type, half);
  to_index(m * row_words, "quantized x words");
  // h in f32 (the gate/up kernel's y) and its 8-bit rows, which down reads as qact's.
  backend::StoragePtr h = alloc(DType::F32, static_cast<size_t>(m * half));
  BufferRef rows = device_pool_->acquire(static_cast<size_t>(m * row_words) * 4);
  record_qmatmul(x, prologue, *gate_up.blocks, gate_up.type, gate_up.n_out, gate_up.k, nullptr,
                 QMatVecStores{.swiglu_rows = rows.get()}, *h);
  const View h_rows{*h, Layout::contiguous(Shape{m, half})};
  record_qmatmul(h_rows, {}, *down.blocks, down.type, down.n_out, down.k, residual,
                 QMatVecStores{.act_rows = rows.get()}, *dst);
  return dst;
}

int64_t GpuDevice::weight_row_bytes(const char* op, const Storage& wblocks, QuantType type,
                                    int64_t n_out, int64_t k) const {
  const QuantTypeInfo* info = quant_type_info(type);
  if (!info || !has_kernel(type))
    fail(ErrorKind::Unsupported, op, "no kernel on ", name(), " for weights of type ",
         info ? info->name : std::to_string(static_cast<uint32_t>(type)));
  if (!device_caps().storage16)
    fail(ErrorKind::Unsupported, op, info->name, " weights need 16-bit storage buffers, which ",
         device_caps().name, " lacks");
  WICK_ASSERT(k > 0 && k % info->block_elems == 0);
  const int64_t row_bytes = k / info->block_elems * info->block_bytes;
  WICK_ASSERT(wblocks.nbytes() == static_cast<size_t>(n_out * row_bytes));
  if (wblocks.nbytes() > device_caps().max_storage_buffer_range)
    fail(ErrorKind::Unsupported, op, "weight [", n_out, ", ", k, "] of ", info->name, ": ",
         wblocks.nbytes(), " bytes exceed the ", device_caps().max_storage_buffer_range,
         " bytes a kernel can bind on ", device_caps().name);
  to_index(n_out * row_bytes, "weight bytes");
  return row_bytes;
}

void GpuDevice::record_qmatmul(View x, const backend::QPrologue& prologue, const Storage& wblocks,
                               QuantType type, int64_t n_out, int64_t k, const View* residual,
                               const QMatVecStores& stores, Storage& dst) {
  using Prologue = backend::QPrologue::Kind;
  const backend::QRopeKv* rope = stores.rope;
  Buffer* const swiglu_rows = stores.swiglu_rows;
  Buffer* const given_rows = stores.act_rows;
  const View* const argmax_ids = stores.argmax_ids;
  const char* op = "qmatmul";
  const DType dt = x.storage.dtype();
  require(dt, op);
  WICK_ASSERT(x.layout.rank() == 2 && x.layout.shape[1] == k &&
              dst.dtype() == (argmax_ids ? DType::U32 : DType::F32));
  const int64_t row_bytes = weight_row_bytes(op, wblocks, type, n_out, k);
  const int64_t m = x.layout.shape[0];
  to_index(m * n_out, "output elements");
  to_index(x.layout.start_offset + (m - 1) * x.layout.strides[0] + (k - 1) * x.layout.strides[1],
           "x index");
  if (residual) {
    const Layout& rl = residual->layout;
    WICK_ASSERT(residual->storage.dtype() == DType::F32 && rl.shape == Shape({m, n_out}));
    to_index(rl.start_offset + (m - 1) * rl.strides[0] + (n_out - 1) * rl.strides[1],
             "residual index");
  }

  // x quantized as the CPU does (integer dots below its sgemm threshold): qact.comp writes each
  // row's k int8 values (k / 4 words) and its f32 scales, which the matmul kernels read in place
  // of x.
  const bool dequantize = qmatmul_dequantizes(m);
  const bool act_q8 = !dequantize && quantizes_x(type) && m < quantized::gemm_min_rows();
  if (prologue.kind != Prologue::None) {
    WICK_ASSERT(prologue.operand && prologue.operand->storage.dtype() == dt);
    if (!act_q8) {  // nothing to fuse into: the prologue's ops, then the product of their rows
      const Layout rows = Layout::contiguous(Shape{m, k});
      backend::StoragePtr staged = alloc(dt, static_cast<size_t>(m * k));
      if (prologue.kind == Prologue::RmsNorm) {
        rms_norm(x, *prologue.operand, prologue.eps, *staged);
      } else {
        backend::StoragePtr silu = alloc(dt, static_cast<size_t>(m * k));
        unary(backend::UnaryOp::Silu, {}, x, *silu);
        binary(backend::BinaryOp::Mul, {*silu, rows}, *prologue.operand, *staged);
      }
      record_qmatmul({*staged, rows}, {}, wblocks, type, n_out, k, residual, stores, dst);
      return;
    }
  }
  const auto qtype = static_cast<uint32_t>(type);
  if (dequantize) {
    // W (n_out, k) in f16, a thread per run of 8 elements; matmul reads it as W^T (k, n_out).
    to_index(n_out * k, "dequantized weight elements");
    backend::StoragePtr w16 = alloc(DType::F16, static_cast<size_t>(n_out * k));
    QMatMulParams dpc{};
    dpc.m = to_index(m, "rows");
    dpc.n_out = to_index(n_out, "n_out");
    dpc.k = to_index(k, "k");
    dpc.row_bytes = to_index(row_bytes, "row bytes");
    const Pipeline& decode = kernel(KernelFamily::Dequant, {qtype, 0u}, [&] {
      Defines defs;
      defs.emplace_back("QTYPE", std::to_string(qtype));
      return key_for("dequant", std::move(defs));
    });
    const BufferAccess dargs[] = {{&buffer(wblocks), Access::Read}, {&buffer(*w16), Access::Write}};
    queue_->record([&](CommandQueue::Recorder& r) {
      r.dispatch(decode, dargs, param_words(dpc), grid(static_cast<uint64_t>(n_out * k / 8)));
    });
    const Layout x_rows = Layout::contiguous(Shape{m, k});
    backend::StoragePtr x16;
    if (dt != DType::F16) {
      x16 = alloc(DType::F16, static_cast<size_t>(m * k));
      cast(x, *x16);
    }
    const Layout wt(Shape{k, n_out}, {1, k}, 0);
    const Layout y_rows = Layout::contiguous(Shape{m, n_out});
    backend::StoragePtr y16 = alloc(DType::F16, static_cast<size_t>(m * n_out));
    matmul(x16 ? View{*x16, x_rows} : x, {*w16, wt}, {1, m, n_out, k}, *y16);
    if (!residual) {
      cast({*y16, y_rows}, dst);
      return;
    }
    // f32 first, then the add: residual + forward(x), bit for bit.
    backend::StoragePtr y32 = alloc(DType::F32, static_cast<size_t>(m * n_out));
    cast({*y16, y_rows}, *y32);
    binary(backend::BinaryOp::Add, *residual, {*y32, y_rows}, dst);
    return;
  }
  const int64_t act_block = act_block_elems(type), row_words = act_row_words(type, k);

  // qmatvec's shape, and whether it takes x.
  const QMatVecShape v = qmatvec_shape(n_out, m);
  // Within qmatvec.comp's limits: MAX_ROWS, and its shared memory (32 KiB, the least of ours).
  WICK_ASSERT(v.rows >= 1 && v.rows <= kMaxVecRowsPerGroup && v.threads >= 1 &&
              v.threads * v.rows * kMaxVecCols * 4 <= 32768);
  const int64_t col_groups = (m + kMaxVecCols - 1) / kMaxVecCols;
  const bool vec = qmatvec_takes(m);
  WICK_ASSERT(vec || !rope);
  WICK_ASSERT((vec && act_q8) || (!swiglu_rows && !given_rows));
  const auto cols = static_cast<uint32_t>(std::min(m, kMaxVecCols));
  // On the tensor cores: workgroups of 16 output rows, their warps splitting k.
  const bool mma = act_q8 && qmatvec_mma(m, type);
  WICK_ASSERT(!argmax_ids || (vec && !mma && !residual && !rope && !swiglu_rows && !given_rows));
  const uint32_t group_rows = mma ? kMmaRows : v.rows;
  const uint32_t group_threads = mma ? options_.qmatvec_mma_threads : v.threads;
  // ARGMAX's blocks of workgroups whose parts one merges: two loads a thread.
  const uint32_t argmax_block = 2 * group_threads;
  WICK_ASSERT(!mma || (group_threads % 32 == 0 && group_threads <= 512));
  // The prologue's operand: alpha (k) along k only, or up (m, k) like x.
  const bool rms = prologue.kind == Prologue::RmsNorm;
  // qmatvec quantizes x itself for up to qmatvec_fuse_rows rows where they fit in shared memory
  // (qmatvec.comp: the rows in f32, then quantized, 16 bytes apart for CUDA's vector loads; with
  // rms_norm alpha and the lane sums), next to its partial sums; its rms_norm sums are norm's
  // lanes folded onto the workgroup, which must divide them.
  const int64_t inline_row_words = (row_words + 3) / 4 * 4;
  const int64_t xq_bytes = cols * inline_row_words * 4;                  // the quantized rows
  const int64_t partial_bytes = int64_t{v.rows} * cols * 4 * v.threads;  // qmatvec.comp's s_part
  const int64_t inline_bytes =
      xq_bytes + cols * k * 4 + (rms ? (k + cols * int64_t{v.threads}) * 4 : 0);
  // Beside them: the partial sums, norm_row.glsl's s_red (a float per thread) and SWIGLU_Q8's
  // grouped quantizer.
  const int64_t inline_shared_bytes = inline_bytes + partial_bytes + 4 * int64_t{v.threads} +
                                      (swiglu_rows ? swiglu_tail_bytes(v.threads) : 0);
  const bool act_inline =
      act_q8 && vec && !mma && !given_rows && m <= options_.qmatvec_fuse_rows &&
      k <= options_.qmatvec_fuse_max_k && (options_.qmatvec_fuse_wide || n_out < v.wide_min_out) &&
      inline_bytes <= kInlineActBytes && (!rms || kWorkgroupSize % v.threads == 0) &&
      inline_shared_bytes <= device_caps().max_shared_memory;
  // From qmatvec_stage_rows x rows, qmatvec copies the quantized rows into shared memory first.
  // MMA reads 8 rows' words at once: rows an odd number of 16-byte vectors apart meet no bank
  // twice. Its partial sums: 4 floats a thread.
  const int64_t stage_row_words =
      mma && inline_row_words / 4 % 2 == 0 ? inline_row_words + 4 : inline_row_words;
  const int64_t stage_bytes = cols * stage_row_words * 4;
  const bool act_stage = act_q8 && vec && !act_inline && !swiglu_rows &&
                         options_.qmatvec_stage_rows > 0 && m >= options_.qmatvec_stage_rows &&
                         stage_bytes <= kInlineActBytes &&
                         stage_bytes + (mma ? 16 * int64_t{group_threads} : partial_bytes) <=
                             device_caps().max_shared_memory;
  int64_t p_row = 0, p_k = 0;
  if (prologue.kind != Prologue::None) {
    const Layout& pl = prologue.operand->layout;
    WICK_ASSERT(rms ? pl.rank() == 1 && pl.shape[0] == k : pl.shape == x.layout.shape);
    p_row = rms ? 0 : pl.strides[0];
    p_k = pl.strides[pl.rank() - 1];
    to_index(pl.start_offset + (m - 1) * p_row + (k - 1) * p_k, "operand index");
    // As norm passes it (PushParam F32: the op parameters of f32/f16/bf16 kernels are floats).
    WICK_ASSERT(param_kind(dt) == PushParam::F32);
  }
  const uint32_t code = prologue.kind == Prologue::None ? 0u : rms ? 1u : 2u;
  // ACT_INLINE's weight rows, loaded before its prologue and kept in shared memory (qmatvec.comp's
  // W_STAGE) where they fit beside the rest, in a few registers a thread.
  const int64_t w_row_halves = row_bytes / 2;
  const int64_t w_words = (int64_t{v.rows} * w_row_halves + 1) / 2;
  const int64_t w_pre = (w_words + v.threads - 1) / v.threads;
  const bool w_stage = act_inline && options_.qmatvec_weight_stage &&
                       w_pre <= kMaxWeightStageWords &&
                       inline_shared_bytes + 4 * w_words <= device_caps().max_shared_memory;
  // The CPU's scalar quantizer rounds halves away from zero, its AVX2 and AVX-512 ones to even:
  // follow the one it uses now (kernels.h), so that the values agree bit for bit.
  const bool ties_away = act_q8 && quantized::act_quantizer(quantized::active_simd_level()) ==
                                       &quantized::quantize_act_row_scalar;
  // The fields of WICK_PARAMS_QACT_PROLOGUE's (qact) and WICK_PARAMS_QMATVEC_ACT's (ACT_INLINE)
  // own that follow x's.
  auto fill_prologue = [&](auto& p) {
    p.ties_away = ties_away ? 1u : 0u;
    if (prologue.kind == Prologue::None) return;
    p.p_offset = to_index(prologue.operand->layout.start_offset, "offset");
    p.p_row = to_index(p_row, "stride");
    p.p_k = to_index(p_k, "stride");
    p.eps = static_cast<float>(prologue.eps);
  };

  BufferRef xq;
  const Pipeline* quantize = nullptr;
  QActParams qpc{};                 // without a prologue
  QActPrologueParams<float> ppc{};  // with one
  std::span<const uint32_t> qwords;
  std::array<uint32_t, 3> qgroups{};
  if (act_q8 && !act_inline && !given_rows) {
    to_index(m * row_words, "quantized x words");
    xq = device_pool_->acquire(static_cast<size_t>(m * row_words) * 4);
    auto fill_qact = [&](auto& p) {  // the fields of WICK_PARAMS_QACT
      p.m = to_index(m, "rows");
      p.k = to_index(k, "k");
      p.x_offset = to_index(x.layout.start_offset, "offset");
      p.x_row = to_index(x.layout.strides[0], "stride");
      p.x_k = to_index(x.layout.strides[1], "stride");
      p.row_words = to_index(row_words, "quantized row words");
    };
    if (prologue.kind == Prologue::None) {
      fill_qact(qpc);
      qpc.ties_away = ties_away ? 1u : 0u;
      quantize = &kernel(KernelFamily::QAct,
                         {static_cast<uint32_t>(act_block), static_cast<uint32_t>(dt)}, [&] {
                           Defines qdefs;
                           add_dtype(qdefs, "", dt);
                           qdefs.emplace_back("ACT_BLOCK", std::to_string(act_block));
                           return key_for("qact", std::move(qdefs));
                         });
      qwords = param_words(qpc);
      qgroups = grid(static_cast<uint64_t>(m * (k / act_block)) * kActLanes);
    } else {
      fill_qact(ppc);
      fill_prologue(ppc);
      quantize = &kernel(KernelFamily::QActPrologue,
                         {static_cast<uint32_t>(act_block), static_cast<uint32_t>(dt), code}, [&] {
                           Defines qdefs;
                           add_dtype(qdefs, "", dt);
                           qdefs.emplace_back("PARAM_T", param_type(dt));
                           qdefs.emplace_back("ACT_BLOCK", std::to_string(act_block));
                           qdefs.emplace_back("PROLOGUE", std::to_string(code));
                           // rms_norm: norm's workgroup size, so that its sums are norm's.
                           return key_for("qact", std::move(qdefs), {}, kWorkgroupSize);
                         });
      qwords = param_words(ppc);
      // rms_norm: workgroups of norm's size per row (each sums the whole row, as norm does, and
      // quantizes kWorkgroupSize / 32 blocks); swiglu: 32 threads per block.
      const uint64_t parts =
          (k / act_block + kWorkgroupSize / kActLanes - 1) / (kWorkgroupSize / kActLanes);
      qgroups = rms ? grid(static_cast<uint64_t>(m) * parts * kWorkgroupSize)
                    : grid(static_cast<uint64_t>(m * (k / act_block)) * kActLanes);
    }
  }

  // Its first fields are WICK_PARAMS_QMATMUL's, then WICK_PARAMS_QMATVEC_ACT's, then rope's.
  QMatVecRopeParams<float> pc{};
  pc.m = to_index(m, "rows");
  pc.n_out = to_index(n_out, "n_out");
  pc.k = to_index(k, "k");
  pc.row_bytes = to_index(row_bytes, "row bytes");
  if (act_q8 && !act_inline) {  // the quantized rows: contiguous, row_words apart
    pc.x_offset = 0;
    pc.x_row = static_cast<uint32_t>(row_words);
    pc.x_k = 1;
  } else {
    pc.x_offset = to_index(x.layout.start_offset, "offset");
    pc.x_row = to_index(x.layout.strides[0], "stride");
    pc.x_k = to_index(x.layout.strides[1], "stride");
  }
  if (residual) {
    pc.r_offset = to_index(residual->layout.start_offset, "offset");
    pc.r_row = to_index(residual->layout.strides[0], "stride");
    pc.r_col = to_index(residual->layout.strides[1], "stride");
  }
  if (argmax_ids) {  // ARGMAX's ids take the residual's fields
    const Layout& il = argmax_ids->layout;
    pc.r_offset = to_index(il.start_offset, "offset");
    pc.r_row = to_index(il.strides[0], "stride");
    to_index(il.start_offset + (m - 1) * il.strides[0], "id index");
  }
  if (act_inline) fill_prologue(pc);
  if (swiglu_rows) pc.ties_away = ties_away ? 1u : 0u;
  uint32_t rope_key = 0;  // the kernel ids' ROPE_KV bits: on, and the caches' dtype
  if (rope) {
    const DType kv = rope->k_cache.storage.dtype();
    rope_key = 1u | static_cast<uint32_t>(kv) << 1;
    pc.h = to_index(rope->h, "dim");
    pc.kvh = to_index(rope->kvh, "dim");
    pc.d = to_index(rope->d, "dim");
    pc.max_seq = to_index(rope->k_cache.layout.shape[2], "dim");
    put_items(pc, rope->pos, rope->slots, rope->k_cache.layout.shape[0]);
    pc.pos_stride = per_item(rope->pos) ? 1u : 0u;
    pc.kc_offset = to_index(rope->k_cache.layout.start_offset, "offset");
    pc.vc_offset = to_index(rope->v_cache.layout.start_offset, "offset");
    for (const backend::CacheView* c : {&rope->k_cache, &rope->v_cache}) {
      backend::check_span(c->layout, c->storage, op);
      check_reach(c->layout, "element offset");
    }
    const View* tabs[4] = {&rope->tables.cos_q, &rope->tables.sin_q, &rope->tables.cos_k,
                           &rope->tables.sin_k};
    const Shape used{rope->k_cache.layout.shape[2], rope->d / 2};  // the rows positions reach
    for (size_t i = 0; i < 4; i++) {
      const Layout& l = tabs[i]->layout;
      pc.table_offsets[i] = to_index(l.start_offset, "offset");
      check_reach(Layout(used, l.strides, l.start_offset), "element offset");
    }
    pc.table_rows[0] = to_index(pc.max_seq > 1 ? tabs[0]->layout.strides[0] : 0, "stride");
    pc.table_rows[1] = to_index(pc.max_seq > 1 ? tabs[2]->layout.strides[0] : 0, "stride");
  }
  // ROPE_KV takes all 31 words, ACT_INLINE the first 15, the others WICK_PARAMS_QMATMUL's 10.
  const std::span<const uint32_t> words =
      param_words(pc).first(rope                        ? sizeof(pc) / 4
                            : act_inline || swiglu_rows ? sizeof(QMatVecActParams<float>) / 4
                                                        : sizeof(QMatMulParams) / 4);

  // Kernel ids: x's dtype, or one past the last dtype code for the quantized rows.
  const uint32_t x_code = act_q8 ? 0xffu : static_cast<uint32_t>(dt);
  auto base_defines = [&] {
    Defines defs;
    if (act_q8)
      defs.emplace_back("ACT_Q8", "1");
    else
      add_dtype(defs, "", dt);
    defs.emplace_back("QTYPE", std::to_string(qtype));
    return defs;
  };
  const Pipeline* pipeline;
  std::array<uint32_t, 3> groups{};
  // The residual joins qmatvec's stores (decode: one dispatch less); the tiled kernel's product
  // goes to a scratch buffer and the residual is added by the add kernel, as unfused.
  const bool fuse_residual = residual && vec;
  backend::StoragePtr product;
  if (residual && !vec) product = alloc(DType::F32, static_cast<size_t>(m * n_out));
  if (vec) {
    const uint32_t with_residual = fuse_residual ? 1u : 0u;
    auto vec_defines = [&](Defines defs) {
      if (fuse_residual) defs.emplace_back("RESIDUAL", "1");
      if (mma) defs.emplace_back("MMA", "1");
      if (rope) {
        defs.emplace_back("ROPE_KV", "1");
        add_dtype(defs, "KV_", rope->k_cache.storage.dtype());
        if (!act_inline) defs.emplace_back("PARAM_T", "float");  // the ACT block's eps field
      }
      if (argmax_ids) defs.emplace_back("ARGMAX", std::to_string(argmax_block));
      if (swiglu_rows) {
        defs.emplace_back("SWIGLU_Q8", "1");
        if (!act_inline) {  // ACT_INLINE names them already
          defs.emplace_back("ACT_BLOCK", std::to_string(act_block));
          defs.emplace_back("PARAM_T", "float");  // the ACT block's eps field
        }
      }
      if (device_caps().subgroup_arithmetic && options_.subgroups)
        defs.emplace_back("WICK_SUBGROUP_ARITHMETIC", "1");
      if (act_q8 && device_caps().int_dot && options_.int_dot)
        defs.emplace_back("WICK_INT_DOT", "1");
      return key_for("qmatvec", std::move(defs), {cols, group_rows}, group_threads);
    };
    if (act_inline) {
      pipeline =
          &kernel(KernelFamily::QMatVecAct,
                  {cols, v.rows, v.threads, qtype, static_cast<uint32_t>(dt),
                   with_residual | code << 1 | rope_key << 3 | (swiglu_rows ? 1u << 12 : 0u) |
                       (w_stage ? 1u << 13 : 0u) | (argmax_ids ? 1u << 14 : 0u),
                   static_cast<uint32_t>(k)},
                  [&] {
                    Defines defs;
                    add_dtype(defs, "", dt);
                    defs.emplace_back("PARAM_T", param_type(dt));
                    defs.emplace_back("QTYPE", std::to_string(qtype));
                    defs.emplace_back("ACT_INLINE", std::to_string(code));
                    defs.emplace_back("ACT_BLOCK", std::to_string(act_block));
                    defs.emplace_back("ACT_K", std::to_string(k));
                    defs.emplace_back("ACT_ROW_WORDS", std::to_string(inline_row_words));
                    // rms_norm: the sums of norm's workgroup size.
                    defs.emplace_back("NORM_LANES", std::to_string(kWorkgroupSize));
                    if (w_stage) {
                      defs.emplace_back("W_STAGE", "1");
                      defs.emplace_back("W_ROW_HALVES", std::to_string(w_row_halves));
                      defs.emplace_back("W_WORDS", std::to_string(w_words));
                      defs.emplace_back("W_PRE", std::to_string(w_pre));
                    }
                    return vec_defines(std::move(defs));
                  });
    } else {
      pipeline = &kernel(KernelFamily::QMatVec,
                         {cols, group_rows, group_threads, qtype, x_code,
                          with_residual | rope_key << 1 | (mma ? 1u << 12 : 0u) |
                              (swiglu_rows ? 1u << 13 : 0u) | (argmax_ids ? 1u << 14 : 0u),
                          act_stage ? static_cast<uint32_t>(stage_row_words) : 0u},
                         [&] {
                           Defines defs = base_defines();
                           if (act_stage) {
                             defs.emplace_back("ACT_STAGE", "1");
                             defs.emplace_back("ACT_ROW_WORDS", std::to_string(stage_row_words));
                           }
                           return vec_defines(std::move(defs));
                         });
    }
    // A 2-D grid of workgroups over the output rows (group_index() in include/common.glsl), z
    // over the groups of x rows.
    const uint64_t n = (static_cast<uint64_t>(n_out) + group_rows - 1) / group_rows;
    const uint64_t gx = std::clamp<uint64_t>(n, 1, device_caps().max_group_count_x);
    groups = {static_cast<uint32_t>(gx), static_cast<uint32_t>((n + gx - 1) / gx),
              static_cast<uint32_t>(col_groups)};
  } else {
    const TileChoice t = choose_tiles(m, n_out);
    const uint32_t aligned = (m % t.bm == 0 ? 1u : 0u) | (n_out % t.bn == 0 ? 2u : 0u);
    pipeline = &kernel(KernelFamily::QMatMul, {t.bm, t.bn, aligned, qtype, x_code}, [&] {
      return key_for("qmatmul", base_defines(), {t.bm, t.bn, aligned});
    });
    const int64_t gy = (m + t.bm - 1) / t.bm;
    if (gy > 65535)  // the smallest maxComputeWorkGroupCount[1] Vulkan allows
      fail(ErrorKind::Unsupported, op, m, " rows of x need ", gy,
           " workgroups along y, more than 65535; split x");
    groups = {to_index((n_out + t.bn - 1) / t.bn, "tile count"), static_cast<uint32_t>(gy), 1};
  }
  // Bindings: the blocks (include/quant.glsl's QUANT_BINDING 0), x (or its quantized rows), y,
  // the residual when it joins, then (ACT_INLINE) the prologue's operand; ROPE_KV: the operand's
  // binding (x again when there is none), then rope_kv's buffers and the error record.
  // SWIGLU_Q8: then the 8-bit rows of h and the split counters. ARGMAX: the ids at y's binding;
  // after the operand's, the parts' values and indices and the split counters.
  Buffer* counters = nullptr;
  if (swiglu_rows) {
    WICK_ASSERT(vec && n_out % (2 * act_block) == 0 && !residual && !rope);
    counters = &split_counters(static_cast<size_t>(m * (n_out / 2 / act_block)));
  }
  // ARGMAX's parts: a (value, index) per x row and workgroup, then per x row and block of
  // argmax_block workgroups; a counter per block and one for the blocks, per group of x rows.
  BufferRef part_values, part_indices;
  if (argmax_ids) {
    const int64_t n_groups = (n_out + group_rows - 1) / group_rows;
    const int64_t blocks = (n_groups + argmax_block - 1) / argmax_block;
    const auto parts = static_cast<size_t>(m * (n_groups + blocks));
    to_index(m * (n_groups + blocks), "argmax parts");
    part_values = device_pool_->acquire(parts * 4);
    part_indices = device_pool_->acquire(parts * 4);
    counters = &split_counters(static_cast<size_t>(col_groups * (blocks + 1)));
  }
  std::array<BufferAccess, 13> args{};
  size_t n_args = 0;
  args[n_args++] = {&buffer(wblocks), Access::Read};
  args[n_args++] = {given_rows ? given_rows : xq ? xq.get() : &buffer(x.storage), Access::Read};
  args[n_args++] = {&buffer(product ? *product : dst), Access::Write};
  if (fuse_residual) args[n_args++] = {&buffer(residual->storage), Access::Read};
  if (act_inline && prologue.kind != Prologue::None)
    args[n_args++] = {&buffer(prologue.operand->storage), Access::Read};
  else if (rope || swiglu_rows || argmax_ids)
    args[n_args++] = {&buffer(x.storage), Access::Read};
  if (swiglu_rows) {
    args[n_args++] = {swiglu_rows, Access::Write};
    args[n_args++] = {counters, Access::Write};
  }
  if (argmax_ids) {
    args[n_args++] = {part_values.get(), Access::Write};
    args[n_args++] = {part_indices.get(), Access::Write};
    args[n_args++] = {counters, Access::Write};
  }
  BufferRef record;
  if (rope) {
    record = errors_->acquire();
    const backend::RopeTableViews& t = rope->tables;
    args[n_args++] = {&buffer(rope->pos.storage), Access::Read};
    args[n_args++] = {&buffer(rope->slots ? rope->slots->storage : rope->pos.storage),
                      Access::Read};
    for (const View* tab : {&t.cos_q, &t.sin_q, &t.cos_k, &t.sin_k})
      args[n_args++] = {&buffer(tab->storage), Access::Read};
    args[n_args++] = {&buffer(rope->k_cache.storage), Access::Write};
    args[n_args++] = {&buffer(rope->v_cache.storage), Access::Write};
    args[n_args++] = {record.get(), Access::Unordered};
  }
  const std::span<const BufferAccess> bound(args.data(), n_args);
  // qact's: x, the prologue's operand if any, the quantized rows.
  std::array<BufferAccess, 3> qargs{};
  size_t n_qargs = 0;
  qargs[n_qargs++] = {&buffer(x.storage), Access::Read};
  if (prologue.kind != Prologue::None)
    qargs[n_qargs++] = {&buffer(prologue.operand->storage), Access::Read};
  qargs[n_qargs++] = {xq.get(), Access::Write};
  const std::span<const BufferAccess> qbound(qargs.data(), n_qargs);
  const uint64_t submission = queue_->record([&](CommandQueue::Recorder& r) {
    if (quantize) r.dispatch(*quantize, qbound, qwords, qgroups);
    r.dispatch(*pipeline, bound, words, groups);
  });
  if (rope)  // a position or slot past the caches, as rope_kv_cache reports it
    errors_->add(std::move(record), submission, "rope_kv_cache", std::to_string(m) + " sequences");
  if (act_stage) staged_qmatvecs_.fetch_add(1, std::memory_order_relaxed);
  if (mma) mma_qmatvecs_.fetch_add(1, std::memory_order_relaxed);
  if (product) {
    const Layout rows = Layout::contiguous(Shape{m, n_out});
    binary(backend::BinaryOp::Add, *residual, {*product, rows}, dst);
  }
}

// Rows of W by id in f32 (QMatMul::rows): dequant.comp's GATHER mode, a thread per 8 values. The
// ids are read on the device, so an id past W is found there and raised at the next wait.
void GpuDevice::qmatmul_rows(View ids, const Storage& wblocks, QuantType type, int64_t n_out,
                             int64_t k, Storage& dst) {
  const char* op = "QMatMul::rows";
  WICK_ASSERT(ids.layout.rank() == 1 && ids.storage.dtype() == DType::U32 &&
              dst.dtype() == DType::F32);
  const int64_t row_bytes = weight_row_bytes(op, wblocks, type, n_out, k);
  const int64_t n = ids.layout.shape[0];
  if (n == 0) return;
  to_index(n * k, "output elements");
  to_index(ids.layout.start_offset + (n - 1) * ids.layout.strides[0], "id index");
  QMatMulParams pc{};
  pc.m = to_index(n, "rows");
  pc.n_out = to_index(n_out, "n_out");
  pc.k = to_index(k, "k");
  pc.row_bytes = to_index(row_bytes, "row bytes");
  pc.x_offset = to_index(ids.layout.start_offset, "id offset");
  pc.x_row = to_index(ids.layout.strides[0], "id stride");
  const auto qtype = static_cast<uint32_t>(type);
  const Pipeline& gather = kernel(KernelFamily::Dequant, {qtype, 1u}, [&] {
    Defines defs;
    defs.emplace_back("QTYPE", std::to_string(qtype));
    defs.emplace_back("GATHER", "1");
    return key_for("dequant", std::move(defs));
  });
  BufferRef record = errors_->acquire();
  const BufferAccess args[] = {{&buffer(wblocks), Access::Read},
                               {&buffer(ids.storage), Access::Read},
                               {&buffer(dst), Access::Write},
                               {record.get(), Access::Unordered}};
  const uint64_t submission = queue_->record([&](CommandQueue::Recorder& r) {
    r.dispatch(gather, args, param_words(pc), grid(static_cast<uint64_t>(n * k / 8)));
  });
  errors_->add(std::move(record), submission, op, {});
}

}  // namespace wick::gpu
