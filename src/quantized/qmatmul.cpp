// QMatMul: y = x @ W^T for a quantized W, on the weight's device.
//
// CPU. Up to kGemmMinRows x rows (decode, prompts): x rows are quantized to 8 bits per block and
// every output is an integer SIMD dot product over W's blocks (kernels.h), threads splitting the
// output rows in units of 16. The common 32-element formats are repacked once (packed.h): on
// AVX-512 CPUs q4_0/q4_1/q8_0 into row tiles, each load of their codes serving up to 8 x rows for
// 16 weight rows (dot_avx512.cpp); on AVX2 CPUs (and for q5_0/q5_1) into slices, up to 4 x rows
// per load (register tiles of x rows by weight rows, dot_avx2.cpp). Longer inputs: W is dequantized
// one tile of rows at a time and multiplied with sgemm. Plain weights (f32/f16/bf16) and formats
// without an integer kernel (q8_1, q8_k) are kept as f32 and go straight to BLAS. These prepared
// weights live here, so the CPU does not go through BackendDevice::qmatmul (see backend.h).
//
// GPU. The blocks are uploaded once into a U8 device storage and every forward is one
// BackendDevice::qmatmul over x viewed as (m, k) in place (a copy only when x's leading dims do
// not collapse into one stride). Plain weights are held as an f32 device tensor and use matmul.
// forward_rms_norm / forward_swiglu hand their prologue to that same call (BackendDevice::qmatmul
// fuses it into the quantization of x where it can); plain weights on GPUs run the ops first.
// On the CPU (f32 x) the prologue runs row by row on the thread that quantizes the row, through
// the ops' own row functions (cpu/fused_rows.h: the same bits), and a residual is added where
// the product is stored: no intermediate tensors, and the rows' work is split between threads.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <vector>

#include "core/rope_kv.h"
#include "core/tensor_impl.h"
#include "cpu/cpu_device.h"
#include "cpu/fused_rows.h"
#include "cpu/parallel.h"
#include "quantized/kernels.h"
#include "quantized/packed.h"
#include "wick/quantized.h"

namespace wick {

using quantized::ActKind;
using quantized::ActRow;
using quantized::DotRowsFn;

namespace {

// x rows from which dequantized tiles + sgemm may beat integer dots. Measured on SmolLM2 shapes
// (q4_1 and q8_0, 1536x576 and 576x1536, one thread, the shared 2-core build machine): integer
// dots cost ~17 us per x row of 1536x576 q4_1 from m = 4 up and won at every m tried (3-20x;
// OpenBLAS reached only ~9 GFLOP/s there). Even a BLAS at 150 GFLOP/s (~12 us per row) needs
// hundreds of rows to pay for dequantizing W (~0.6 ms for 1536x576), so sgemm is kept for very
// long inputs.
constexpr int64_t kGemmMinRows = 1024;
std::atomic<int64_t> g_gemm_min_rows{kGemmMinRows};
// Weight bytes a thread should get before another one is woken (fork/join costs a few µs).
constexpr int64_t kBytesPerTask = 32 * 1024;
// Output rows handled together across all x rows, so that they stay in L1 (a row tile's rows).
constexpr int64_t kTileRows = quantized::kRowTile;
// f32 elements of one dequantized weight tile in the sgemm path (~1 MiB).
constexpr int64_t kGemmTileElems = 1 << 18;

}  // namespace

int64_t quantized::gemm_min_rows() {
  return g_gemm_min_rows.load(std::memory_order_relaxed);
}
void quantized::set_gemm_min_rows(int64_t rows) {
  g_gemm_min_rows.store(rows > 0 ? rows : kGemmMinRows, std::memory_order_relaxed);
}

namespace {
enum class Packing { None, Slices, RowTiles };
}  // namespace

struct QMatMul::Impl {
  QTensor weight;
  Device device = Device::cpu();
  int64_t n_out = 0, k = 0;
  QuantType type = QuantType::F32;
  // CPU
  std::vector<float> dense;  // W as f32 for types without an integer kernel
  const float* dense_ptr = nullptr;
  // Repacked rows (packed.h): row tiles for q4_0/q4_1/q8_0 on AVX-512, else slices (AVX2 up).
  std::vector<uint8_t> packed;
  Packing packing = Packing::None;
  // GPU
  backend::StoragePtr blocks;  // U8: the QTensor's bytes
  Tensor dense_device;         // plain types: W (n_out, k) as f32
};

namespace {

bool is_plain(QuantType t) {
  return t == QuantType::F32 || t == QuantType::F16 || t == QuantType::BF16;
}

void prepare_cpu(QMatMul::Impl& impl, const QTensor& weight) {
  if (!quantized::dot_kernel_scalar(weight.type())) {
    if (weight.type() == QuantType::F32) {
      impl.dense_ptr = reinterpret_cast<const float*>(weight.data());
    } else {
      impl.dense.resize(static_cast<size_t>(impl.n_out * impl.k));
      if (!impl.dense.empty())
        dequantize_row(weight.type(), weight.data(), impl.dense.data(), impl.n_out * impl.k);
      impl.dense_ptr = impl.dense.data();
    }
  }
  const quantized::SimdLevel level = quantized::active_simd_level();
  if (quantized::tiled_kernel(weight.type(), level)) {
    impl.packed = quantized::pack_row_tiles(weight.type(), weight.data(), impl.n_out, impl.k);
    impl.packing = Packing::RowTiles;
  } else if (quantized::packable(weight.type()) && quantized::packed_kernel(weight.type(), level)) {
    impl.packed = quantized::pack_rows(weight.type(), weight.data(), impl.n_out, impl.k);
    impl.packing = Packing::Slices;
  }
}

void prepare_device(QMatMul::Impl& impl, const QTensor& weight) {
  if (is_plain(weight.type()))
    impl.dense_device = dequantize(weight, DType::F32, impl.device);
  else if (weight.nbytes() > 0)
    impl.blocks = impl.device.backend().from_host(DType::U8, weight.data(), weight.nbytes());
}

}  // namespace

QMatMul::QMatMul(QTensor weight) : QMatMul(std::move(weight), Device::cpu()) {}

QMatMul::QMatMul(QTensor weight, const Device& dev) {
  const char* op = "QMatMul";
  if (weight.shape().rank() != 2)
    fail(ErrorKind::Shape, op, "weight must be 2-D (n_out, k), got ", weight.str());
  if (!quant_type_supported(weight.type()))
    fail(ErrorKind::Unsupported, op, "no matmul for weight ", weight.str());
  auto impl = std::make_shared<Impl>();
  impl->device = dev;
  impl->n_out = weight.shape()[0];
  impl->k = weight.shape()[1];
  impl->type = weight.type();
  if (dev.backend().runs_qmatmul())
    prepare_device(*impl, weight);
  else
    prepare_cpu(*impl, weight);
  impl->weight = std::move(weight);
  impl_ = std::move(impl);
}

const QTensor& QMatMul::weight() const {
  return impl_->weight;
}
const Device& QMatMul::device() const {
  return impl_->device;
}
size_t quantized::packed_weight_bytes(const QMatMul& mm) {
  return mm.impl_->packed.size();
}
int64_t QMatMul::in_features() const {
  return impl_->k;
}
int64_t QMatMul::out_features() const {
  return impl_->n_out;
}

namespace {

// y (m, n) = x (m, k) @ W (n, k)^T with BLAS.
void blas_xwt(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
              int64_t ldy) {
  if (m == 1)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(k), 1.0f, w,
                static_cast<int>(k), x, 1, 0.0f, y, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, x, static_cast<int>(k), w, static_cast<int>(k), 0.0f, y,
                static_cast<int>(ldy));
}

void gemm_dequantized_tiles(const QMatMul::Impl& w, const float* x, float* y, int64_t m) {
  const int64_t tile = std::max<int64_t>(16, kGemmTileElems / std::max<int64_t>(w.k, 1));
  std::vector<float> buf(static_cast<size_t>(std::min(tile, w.n_out) * w.k));
  const size_t row_bytes = w.weight.row_bytes();
  for (int64_t o0 = 0; o0 < w.n_out; o0 += tile) {
    const int64_t rows = std::min(tile, w.n_out - o0);
    cpu::parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
      dequantize_row(w.type, w.weight.data() + static_cast<size_t>(o0 + r0) * row_bytes,
                     buf.data() + r0 * w.k, (r1 - r0) * w.k);
    });
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m),
                static_cast<int>(rows), static_cast<int>(w.k), 1.0f, x, static_cast<int>(w.k),
                buf.data(), static_cast<int>(w.k), 0.0f, y + o0, static_cast<int>(w.n_out));
  }
}

// x's rows on the CPU as a product reads them: f32 rows `stride` floats apart, as they are or
// through a prologue fused into their quantization (forward_rms_norm, forward_swiglu): the
// prologue op's own row function (cpu/fused_rows.h), so the same bits as the ops run first.
struct CpuRows {
  const float* x = nullptr;
  int64_t stride = 0;
  backend::QPrologue::Kind prologue = backend::QPrologue::Kind::None;
  const float* operand = nullptr;  // rms_norm: alpha (k floats); swiglu: up's rows
  int64_t operand_stride = 0;
  double eps = 0;

  // Row r (k elements): x's own row without a prologue, else the prologue's output in buf.
  const float* row(int64_t r, int64_t k, float* buf) const {
    const float* xr = x + r * stride;
    switch (prologue) {
      case backend::QPrologue::Kind::RmsNorm:
        cpu::rms_norm_row(xr, operand, k, eps, buf);
        return buf;
      case backend::QPrologue::Kind::SwiGlu:
        cpu::swiglu_row(xr, operand + r * operand_stride, k, buf);
        return buf;
      default:
        return xr;
    }
  }
};

// Floats of prologue and quantization work a thread should get before another one is woken.
constexpr int64_t kActElemsPerTask = 2048;

void integer_dots(const QMatMul::Impl& w, const CpuRows& x, float* y, int64_t m) {
  const ActKind kind = quantized::act_kind(w.type);
  const int64_t k = w.k;
  const int64_t ds_per_row = kind == ActKind::Block32 ? 2 * (k / 32) : k / 256;
  const int64_t bsums_per_row = kind == ActKind::Block256 ? k / 16 : 0;
  // Scratch reused across calls: decode runs hundreds of these per token.
  thread_local std::vector<int8_t> qs;
  thread_local std::vector<float> ds;
  thread_local std::vector<int16_t> bsums;
  qs.resize(static_cast<size_t>(m * k));
  ds.resize(static_cast<size_t>(m * ds_per_row));
  bsums.resize(static_cast<size_t>(m * bsums_per_row));
  const quantized::QuantizeActFn quantize_act =
      quantized::act_quantizer(quantized::active_simd_level());
  {  // the rows' prologue and quantization, split by rows (workers see their own thread_locals)
    int8_t* qs_w = qs.data();
    float* ds_w = ds.data();
    int16_t* bsums_w = bsums.data();
    cpu::parallel_for(m, std::max<int64_t>(1, kActElemsPerTask / std::max<int64_t>(k, 1)),
                      [&](int64_t r0, int64_t r1) {
                        thread_local std::vector<float> buf;
                        if (x.prologue != backend::QPrologue::Kind::None)
                          buf.resize(static_cast<size_t>(k));
                        for (int64_t r = r0; r < r1; r++)
                          quantize_act(kind, x.row(r, k, buf.data()), k, qs_w + r * k,
                                       ds_w + r * ds_per_row, bsums_w + r * bsums_per_row);
                      });
  }
  const quantized::SimdLevel level = quantized::active_simd_level();
  // A lowered level (tests) may not run the layout packed at construction: then ggml's blocks.
  const quantized::TiledRowsFn tiled =
      w.packing == Packing::RowTiles ? quantized::tiled_kernel(w.type, level) : nullptr;
  const quantized::PackedRowsFn packed_dot =
      w.packing == Packing::Slices ? quantized::packed_kernel(w.type, level) : nullptr;
  if (packed_dot) {  // sliced rows read activations in their own order (packed.h)
    thread_local std::vector<int8_t> qs_natural;
    thread_local std::vector<float> ds_pairs;
    qs_natural.assign(qs.begin(), qs.end());
    ds_pairs.assign(ds.begin(), ds.end());
    for (int64_t r = 0; r < m; r++)
      quantized::pack_activations(qs_natural.data() + r * k, ds_pairs.data() + r * ds_per_row, k,
                                  qs.data() + r * k, ds.data() + r * ds_per_row);
  }
  const DotRowsFn dot = quantized::dot_kernel(w.type, level);
  // Several x rows per pass over a weight tile: sliced rows, or the format's multi-row kernel.
  const quantized::DotRowsMultiFn multi = packed_dot ? packed_dot
                                          : m > 1    ? quantized::dot_kernel_multi(w.type, level)
                                                     : nullptr;
  const uint8_t* wdata = tiled || packed_dot ? w.packed.data() : w.weight.data();
  // Worker threads see their own thread_local vectors: pass the caller's by pointer.
  const int8_t* qs_p = qs.data();
  const float* ds_p = ds.data();
  const int16_t* bsums_p = bsums.data();
  auto act_row = [&](int64_t r) {
    return ActRow{qs_p + r * k, ds_p + r * ds_per_row, bsums_p + r * bsums_per_row};
  };
  const size_t row_bytes = w.weight.row_bytes();
  // Threads split the output rows in units of kTileRows (row tiles: exactly one tile).
  const int64_t n_units = (w.n_out + kTileRows - 1) / kTileRows;
  const int64_t grain = std::max<int64_t>(
      1, kBytesPerTask / static_cast<int64_t>(std::max<size_t>(row_bytes * kTileRows * m, 1)));
  cpu::parallel_for(n_units, grain, [&](int64_t u_begin, int64_t u_end) {
    for (int64_t u = u_begin; u < u_end; u++) {
      const int64_t o0 = u * kTileRows, rows = std::min(kTileRows, w.n_out - o0);
      const uint8_t* wt = wdata + static_cast<size_t>(o0) * row_bytes;
      if (tiled || multi) {  // groups of x rows per pass over the tile
        static_assert(quantized::kMaxTiledX >= quantized::kMaxPackedX);  // xs holds either group
        const int group = tiled ? quantized::kMaxTiledX : quantized::kMaxPackedX;
        for (int64_t r0 = 0; r0 < m; r0 += group) {
          const int n_x = static_cast<int>(std::min<int64_t>(group, m - r0));
          ActRow xs[quantized::kMaxTiledX];
          for (int i = 0; i < n_x; i++) xs[i] = act_row(r0 + i);
          float* out = y + r0 * w.n_out + o0;
          if (tiled)
            tiled(wt, rows, k, xs, n_x, static_cast<size_t>(w.n_out), out);
          else
            multi(wt, row_bytes, rows, k, xs, n_x, static_cast<size_t>(w.n_out), out);
        }
      } else {
        for (int64_t r = 0; r < m; r++)
          dot(wt, row_bytes, rows, k, act_row(r), y + r * w.n_out + o0);
      }
    }
  });
}

}  // namespace

namespace {

// y = prologue(x) @ W^T (+ residual) on the CPU, x given as rows (see CpuRows); residual: f32
// rows r_stride floats apart, added as the add op would (residual + product).
Tensor forward_cpu(const QMatMul::Impl& w, const CpuRows& x, const Shape& out_shape, int64_t m,
                   const float* residual = nullptr, int64_t r_stride = 0) {
  backend::StoragePtr storage =
      w.device.backend().alloc(DType::F32, static_cast<size_t>(m * w.n_out));
  float* y = cpu::cpu_storage(*storage).as<float>();
  if (m > 0 && w.n_out > 0) {
    const bool dots = w.k > 0 && !w.dense_ptr && m < quantized::gemm_min_rows();
    if (w.k == 0) {
      std::fill(y, y + m * w.n_out, 0.0f);
    } else if (dots) {
      integer_dots(w, x, y, m);
    } else {  // BLAS reads x as one (m, k) matrix
      std::vector<float> rows;
      const float* xp = x.x;
      if (x.prologue != backend::QPrologue::Kind::None || x.stride != w.k) {
        rows.resize(static_cast<size_t>(m * w.k));
        cpu::parallel_for(m, std::max<int64_t>(1, kActElemsPerTask / w.k),
                          [&](int64_t r0, int64_t r1) {
                            for (int64_t r = r0; r < r1; r++) {
                              float* out = rows.data() + r * w.k;
                              const float* v = x.row(r, w.k, out);
                              if (v != out) std::copy(v, v + w.k, out);
                            }
                          });
        xp = rows.data();
      }
      if (w.dense_ptr)
        blas_xwt(xp, w.dense_ptr, y, m, w.n_out, w.k, w.n_out);
      else
        gemm_dequantized_tiles(w, xp, y, m);
    }
    if (residual)
      for (int64_t r = 0; r < m; r++) {
        const float* rr = residual + r * r_stride;
        float* yr = y + r * w.n_out;
        for (int64_t o = 0; o < w.n_out; o++) yr[o] = rr[o] + yr[o];
      }
  }
  return Tensor(std::move(storage), Layout::contiguous(out_shape), DType::F32, w.device);
}

// x (..., k) as an (m, k) layout over the same storage, when its leading dims collapse into one
// row stride (contiguous, narrowed along the last dim, transposed 2-D views, ...).
std::optional<Layout> rows_layout(const Layout& l, int64_t m, int64_t k) {
  const size_t r = l.rank();
  int64_t row_stride = 0, expect = 0;
  bool first = true;
  for (size_t d = r - 1; d-- > 0;) {
    if (l.shape[d] == 1) continue;
    if (first) {
      row_stride = l.strides[d];
      first = false;
    } else if (l.strides[d] != expect) {
      return std::nullopt;
    }
    expect = l.strides[d] * l.shape[d];
  }
  return Layout(Shape{m, k}, {row_stride, l.strides[r - 1]}, l.start_offset);
}

// x (..., k) as (m, k): in place where its rows collapse into one stride, else copied.
Tensor as_rows(const Tensor& x, int64_t m, int64_t k) {
  if (std::optional<Layout> rows = rows_layout(x.layout(), m, k))
    return Tensor(x.storage(), std::move(*rows), x.dtype(), x.device());
  return x.contiguous().reshape(Shape{m, k});
}

// x (..., k) in host memory as f32 rows of unit element stride, `stride` floats apart: in place
// where it already is, else an f32 contiguous copy (held by `hold`).
struct HostRows {
  Tensor hold;
  const float* p = nullptr;
  int64_t stride = 0;
};
HostRows host_rows(const Tensor& x, int64_t m, int64_t k) {
  if (x.dtype() == DType::F32)
    if (std::optional<Layout> l = rows_layout(x.layout(), m, k); l && (l->strides[1] == 1 || k < 2))
      return {x, cpu::cpu_storage(*x.storage()).as<float>() + l->start_offset, l->strides[0]};
  Tensor c = x.to_dtype(DType::F32).contiguous();
  return {c, cpu::cpu_storage(*c.storage()).as<float>() + c.layout().start_offset, k};
}

// y = prologue(x) @ W^T (+ residual) for quantized W, in one BackendDevice::qmatmul; `operand` is
// the prologue's alpha (rms_norm) or up (swiglu, shaped like x); `residual` has y's shape.
Tensor forward_device(const QMatMul::Impl& w, const Tensor& x, const Shape& out_shape, int64_t m,
                      backend::QPrologue::Kind prologue, const Tensor* operand, double eps,
                      const Tensor* residual) {
  const Device& dev = w.device;
  const Tensor x2 = as_rows(x, m, w.k);
  auto plus_residual = [&](const Tensor& y) { return residual ? *residual + y : y; };
  if (w.dense_device.defined())
    return plus_residual(x2.to_dtype(DType::F32).matmul(w.dense_device.t()).reshape(out_shape));
  Tensor y = core::empty(Shape{m, w.n_out}, DType::F32, dev);
  if (y.numel() == 0) return y.reshape(out_shape);
  if (w.k == 0) {
    dev.backend().fill(*y.storage(), y.layout(), 0.0);
    return plus_residual(y.reshape(out_shape));
  }
  Tensor op2;  // alpha as it is; up as (m, k) rows, like x
  if (operand)
    op2 = prologue == backend::QPrologue::Kind::SwiGlu ? as_rows(*operand, m, w.k) : *operand;
  const backend::View op_view = core::view(operand ? op2 : x2);
  const backend::QPrologue pro{prologue, operand ? &op_view : nullptr, eps};
  const Tensor r2 = residual ? as_rows(*residual, m, w.n_out) : Tensor();
  const backend::View r_view = core::view(residual ? r2 : x2);
  dev.backend().qmatmul(core::view(x2), pro, *w.blocks, w.type, w.n_out, w.k,
                        residual ? &r_view : nullptr, *y.storage());
  return y.reshape(out_shape);
}

// The prologue of a product whose x (rows x2) is rms_norm(x, alpha, eps), or none when alpha is
// undefined (forward_rope_kv, forward_swiglu_ffn); it points at its own view of alpha.
struct NormPrologue {
  backend::View alpha;
  backend::QPrologue prologue;
  NormPrologue(const Tensor& norm_alpha, const Tensor& x2, double eps)
      : alpha(core::view(norm_alpha.defined() ? norm_alpha : x2)),
        prologue{norm_alpha.defined() ? backend::QPrologue::Kind::RmsNorm
                                      : backend::QPrologue::Kind::None,
                 norm_alpha.defined() ? &alpha : nullptr, eps} {}
  NormPrologue(const NormPrologue&) = delete;
  NormPrologue& operator=(const NormPrologue&) = delete;
};

// forward's checks of x (`name`: what the caller calls it), and its output shape and row count.
struct XRows {
  Shape out_shape;
  int64_t m = 1;
};
XRows check_x(const char* op, const QMatMul::Impl& w, const Tensor& x, const char* name) {
  if (x.dtype() != DType::F32 && x.dtype() != DType::F16 && x.dtype() != DType::BF16)
    fail(ErrorKind::DType, op, name, " must be f32, f16 or bf16, got ", x.dtype(), " of shape ",
         x.shape(), " (weight ", w.weight.str(), ")");
  if (x.rank() == 0 || x.dim(-1) != w.k)
    fail(ErrorKind::Shape, op, name, " of shape ", x.shape(), " must end in k = ", w.k, " (weight ",
         w.weight.str(), ")");
  if (x.device() != w.device)
    fail(ErrorKind::Device, op, name, " ", x.shape(), " is on ", x.device().name(),
         " but the weight ", w.weight.str(), " is on ", w.device.name(), "; move ", name,
         " there or build the QMatMul on ", x.device().name());
  std::vector<int64_t> out_dims = x.dims();
  out_dims.back() = w.n_out;
  XRows r{Shape(out_dims)};
  for (size_t d = 0; d + 1 < x.rank(); d++) r.m *= x.dims()[d];
  return r;
}

// A prologue operand's dtype and device: x's (`x_name`) and the weight's.
void check_operand(const char* op, const QMatMul::Impl& w, const Tensor& p, const char* name,
                   const Tensor& x, const char* x_name) {
  if (p.dtype() != x.dtype())
    fail(ErrorKind::DType, op, name, " is ", p.dtype(), " but ", x_name, " is ", x.dtype(),
         " (shapes ", p.shape(), " and ", x.shape(), ", weight ", w.weight.str(), ")");
  if (p.device() != w.device)
    fail(ErrorKind::Device, op, name, " ", p.shape(), " is on ", p.device().name(),
         " but the weight ", w.weight.str(), " is on ", w.device.name(), "; move ", name, " there");
}

// rms_norm's alpha for x: 1-D of k elements, x's dtype, on the weight's device.
void check_alpha(const char* op, const QMatMul::Impl& w, const Tensor& alpha, const Tensor& x) {
  if (alpha.rank() != 1 || alpha.dim(0) != w.k)
    fail(ErrorKind::Shape, op, "alpha must have shape [", w.k, "], got ", alpha.shape(), " for x ",
         x.shape(), " (weight ", w.weight.str(), ")");
  check_operand(op, w, alpha, "alpha", x, "x");
}

// A residual: f32, the product's shape, on the weight's device.
void check_residual(const char* op, const QMatMul::Impl& w, const Tensor& residual,
                    const Shape& out_shape) {
  if (residual.dtype() != DType::F32)
    fail(ErrorKind::DType, op, "residual must be f32 (the product's dtype), got ", residual.dtype(),
         " of shape ", residual.shape(), " (weight ", w.weight.str(), ")");
  if (residual.shape() != out_shape)
    fail(ErrorKind::Shape, op, "residual must have the product's shape ", out_shape, ", got ",
         residual.shape(), " (weight ", w.weight.str(), ")");
  if (residual.device() != w.device)
    fail(ErrorKind::Device, op, "residual ", residual.shape(), " is on ", residual.device().name(),
         " but the weight ", w.weight.str(), " is on ", w.device.name(), "; move residual there");
}

// Row ids (rows' input, forward_argmax's output): 1-D u32 on the weight's device.
void check_ids(const char* op, const QMatMul::Impl& w, const Tensor& ids) {
  if (ids.rank() != 1) fail(ErrorKind::Shape, op, "ids must be 1-D, got ", ids.shape());
  if (ids.dtype() != DType::U32)
    fail(ErrorKind::DType, op, "ids must be u32, got ", dtype_name(ids.dtype()));
  if (ids.device() != w.device)
    fail(ErrorKind::Device, op, "ids are on ", ids.device().name(), ", the weight ", w.weight.str(),
         " on ", w.device.name());
}

}  // namespace

Tensor QMatMul::rows(const Tensor& ids) const {
  const char* op = "QMatMul::rows";
  const Impl& w = *impl_;
  check_ids(op, w, ids);
  const int64_t n = ids.dim(0);
  if (w.dense_device.defined()) return w.dense_device.index_select(ids, 0);
  if (!w.device.backend().runs_qmatmul()) {  // the host's QTensor
    const std::vector<uint32_t> id = ids.to_vec<uint32_t>();
    std::vector<float> out(static_cast<size_t>(n * w.k));
    const size_t row_bytes = w.weight.row_bytes();
    for (int64_t r = 0; r < n; r++) {
      const uint32_t i = id[static_cast<size_t>(r)];
      if (i >= w.n_out)
        fail(ErrorKind::OutOfRange, op, "index ", i, " out of range for a dim of size ", w.n_out);
      if (w.k > 0)
        dequantize_row(w.type, w.weight.data() + i * row_bytes, out.data() + r * w.k, w.k);
    }
    return Tensor::from_vec(out, {n, w.k}, w.device);
  }
  Tensor y = core::empty(Shape{n, w.k}, DType::F32, w.device);
  if (y.numel() == 0) return y;
  w.device.backend().qmatmul_rows(core::view(ids), *w.blocks, w.type, w.n_out, w.k, *y.storage());
  return y;
}

Tensor QMatMul::forward(const Tensor& x) const {
  const Impl& w = *impl_;
  const XRows r = check_x("QMatMul::forward", w, x, "x");
  if (!w.device.backend().runs_qmatmul()) {
    const HostRows xr = host_rows(x, r.m, w.k);
    return forward_cpu(w, CpuRows{xr.p, xr.stride}, r.out_shape, r.m);
  }
  return forward_device(w, x, r.out_shape, r.m, backend::QPrologue::Kind::None, nullptr, 0,
                        nullptr);
}

Tensor QMatMul::forward(const Tensor& x, const Tensor& residual) const {
  const char* op = "QMatMul::forward";
  const Impl& w = *impl_;
  const XRows r = check_x(op, w, x, "x");
  check_residual(op, w, residual, r.out_shape);
  if (!w.device.backend().runs_qmatmul()) {
    const HostRows xr = host_rows(x, r.m, w.k), rr = host_rows(residual, r.m, w.n_out);
    return forward_cpu(w, CpuRows{xr.p, xr.stride}, r.out_shape, r.m, rr.p, rr.stride);
  }
  return forward_device(w, x, r.out_shape, r.m, backend::QPrologue::Kind::None, nullptr, 0,
                        &residual);
}

Tensor QMatMul::forward_rms_norm(const Tensor& x, const Tensor& alpha, double eps) const {
  const char* op = "QMatMul::forward_rms_norm";
  const Impl& w = *impl_;
  const XRows r = check_x(op, w, x, "x");
  check_alpha(op, w, alpha, x);
  if (!w.device.backend().runs_qmatmul() && x.dtype() == DType::F32) {  // fused on the CPU
    const HostRows xr = host_rows(x, r.m, w.k), a = host_rows(alpha, 1, w.k);
    return forward_cpu(w, CpuRows{xr.p, xr.stride, backend::QPrologue::Kind::RmsNorm, a.p, 0, eps},
                       r.out_shape, r.m);
  }
  if (!w.device.backend().runs_qmatmul() || w.dense_device.defined())
    return forward(x.rms_norm(alpha, eps));
  return forward_device(w, x, r.out_shape, r.m, backend::QPrologue::Kind::RmsNorm, &alpha, eps,
                        nullptr);
}

Tensor QMatMul::forward_rope_kv(const Tensor& x, const RopeKvTarget& target,
                                const Tensor& norm_alpha, double eps) const {
  const char* op = "QMatMul::forward_rope_kv";
  const Impl& w = *impl_;
  check_x(op, w, x, "x");
  const bool norm = norm_alpha.defined();
  if (norm) check_alpha(op, w, norm_alpha, x);
  const int64_t h = target.heads, kvh = target.kv_heads, heads = h + 2 * kvh;
  if (x.rank() != 2)
    fail(ErrorKind::Shape, op, "x must be (b, k): a token per row, got ", x.shape(), " (weight ",
         w.weight.str(), ")");
  if (h < 1 || kvh < 1 || w.n_out % heads != 0)
    fail(ErrorKind::Shape, op, "heads ", h, " and kv_heads ", kvh, " must be >= 1 and h + 2 kvh ",
         "must divide the weight's ", w.n_out, " rows (weight ", w.weight.str(), ")");
  const int64_t b = x.dim(0), d = w.n_out / heads;
  // q, k and v as views of the product y (b, n_out).
  auto split = [&](const Tensor& y) {
    auto part = [&](int64_t first, int64_t n) {
      return y.narrow(1, first * d, n * d).reshape({b, 1, n, d}).transpose(1, 2);
    };
    return std::array<Tensor, 3>{part(0, h), part(h, kvh), part(h + kvh, kvh)};
  };
  const bool device = w.device.backend().runs_qmatmul() && !w.dense_device.defined();
  if (!device || b == 0 || w.k == 0) {
    const Tensor y = norm ? forward_rms_norm(x, norm_alpha, eps) : forward(x);
    const std::array<Tensor, 3> qkv = split(y);
    return rope_kv_cache(qkv[0], qkv[1], qkv[2], target.k_cache, target.v_cache, target.tables,
                         target.pos, target.interleaved, target.slots);
  }
  const Tensor y = core::empty(Shape{b, w.n_out}, DType::F32, w.device, op);
  const std::array<Tensor, 3> qkv = split(y);
  const core::RopeKvInputs in =
      core::check_rope_kv("rope_kv_cache", qkv[0], qkv[1], qkv[2], target.k_cache, target.v_cache,
                          target.tables, target.pos, target.slots);
  Tensor out = core::empty(qkv[0].shape(), DType::F32, w.device, op);
  const Tensor x2 = as_rows(x, b, w.k);
  const NormPrologue norm_pro(norm_alpha, x2, eps);
  const backend::QPrologue& pro = norm_pro.prologue;
  const std::optional<backend::View> slot_view =
      in.slots.defined() ? std::optional(core::view(in.slots)) : std::nullopt;
  const backend::QRopeKv rope{
      h,
      kvh,
      d,
      {*target.k_cache.storage(), target.k_cache.layout()},
      {*target.v_cache.storage(), target.v_cache.layout()},
      {core::view(in.cos_q), core::view(in.sin_q), core::view(in.cos_k), core::view(in.sin_k)},
      core::view(in.pos),
      slot_view ? &*slot_view : nullptr,
      target.interleaved};
  backend::BackendDevice& be = w.device.backend();
  if (be.qmatmul_rope_kv(core::view(x2), pro, *w.blocks, w.type, w.n_out, w.k, rope,
                         *out.storage()))
    return out;
  be.qmatmul(core::view(x2), pro, *w.blocks, w.type, w.n_out, w.k, nullptr, *y.storage());
  core::record_rope_kv(in, target.k_cache, target.v_cache, target.interleaved, out);
  return out;
}

Tensor QMatMul::forward_swiglu_ffn(const Tensor& x, const QMatMul& down, const Tensor& residual,
                                   const Tensor& norm_alpha, double eps) const {
  const char* op = "QMatMul::forward_swiglu_ffn";
  const Impl& w = *impl_;
  const Impl& dw = *down.impl_;
  const XRows r = check_x(op, w, x, "x");
  const bool norm = norm_alpha.defined();
  if (norm) check_alpha(op, w, norm_alpha, x);
  if (w.n_out != 2 * dw.k)
    fail(ErrorKind::Shape, op, "the gate/up weight ", w.weight.str(),
         " must have twice as many rows as the down weight ", dw.weight.str(), " has columns");
  if (dw.device != w.device)
    fail(ErrorKind::Device, op, "the down weight ", dw.weight.str(), " is on ", dw.device.name(),
         " but the gate/up weight ", w.weight.str(), " is on ", w.device.name());
  std::vector<int64_t> out_dims = x.dims();
  out_dims.back() = dw.n_out;
  const Shape out_shape(out_dims);
  if (residual.defined()) check_residual(op, dw, residual, out_shape);
  backend::BackendDevice& be = w.device.backend();
  if (be.runs_qmatmul() && !w.dense_device.defined() && !dw.dense_device.defined() && r.m > 0 &&
      w.k > 0 && dw.k > 0 && dw.n_out > 0) {
    const Tensor x2 = as_rows(x, r.m, w.k);
    const NormPrologue norm_pro(norm_alpha, x2, eps);
    const backend::QPrologue& pro = norm_pro.prologue;
    const Tensor r2 = residual.defined() ? as_rows(residual, r.m, dw.n_out) : Tensor();
    const backend::View r_view = core::view(residual.defined() ? r2 : x2);
    if (backend::StoragePtr y = be.qmatmul_swiglu_ffn(
            core::view(x2), pro, {w.blocks.get(), w.type, w.n_out, w.k},
            {dw.blocks.get(), dw.type, dw.n_out, dw.k}, residual.defined() ? &r_view : nullptr))
      return Tensor(std::move(y), Layout::contiguous(out_shape), DType::F32, w.device);
  }
  const Tensor gu = norm ? forward_rms_norm(x, norm_alpha, eps) : forward(x);
  const Tensor gate = gu.narrow(gu.rank() - 1, 0, dw.k), up = gu.narrow(gu.rank() - 1, dw.k, dw.k);
  return down.swiglu(gate, up, residual.defined() ? &residual : nullptr);
}

void QMatMul::forward_argmax(const Tensor& x, const Tensor& ids, int64_t offset,
                             const Tensor& norm_alpha, double eps) const {
  const char* op = "QMatMul::forward_argmax";
  const Impl& w = *impl_;
  check_x(op, w, x, "x");
  const bool norm = norm_alpha.defined();
  if (norm) check_alpha(op, w, norm_alpha, x);
  if (x.rank() != 2)
    fail(ErrorKind::Shape, op, "x must be (m, k), got ", x.shape(), " (weight ", w.weight.str(),
         ")");
  check_ids(op, w, ids);
  const int64_t m = x.dim(0);
  if (offset < 0 || offset > ids.dim(0) || m > ids.dim(0) - offset)
    fail(ErrorKind::OutOfRange, op, m, " picks at offset ", offset, " do not fit ids of ",
         ids.dim(0), " elements");
  backend::BackendDevice& be = w.device.backend();
  if (be.runs_qmatmul() && !w.dense_device.defined() && m > 0 && w.k > 0 && w.n_out > 0) {
    const Tensor x2 = as_rows(x, m, w.k);
    const NormPrologue norm_pro(norm_alpha, x2, eps);
    const Tensor target = ids.narrow(0, offset, m);
    if (be.qmatmul_argmax(core::view(x2), norm_pro.prologue, {w.blocks.get(), w.type, w.n_out, w.k},
                          core::view(target)))
      return;
  }
  const Tensor y = norm ? forward_rms_norm(x, norm_alpha, eps) : forward(x);
  ids.slice_set(y.argmax(1), 0, offset);
}

Tensor QMatMul::forward_swiglu(const Tensor& gate, const Tensor& up) const {
  return swiglu(gate, up, nullptr);
}

Tensor QMatMul::forward_swiglu(const Tensor& gate, const Tensor& up, const Tensor& residual) const {
  return swiglu(gate, up, &residual);
}

Tensor QMatMul::swiglu(const Tensor& gate, const Tensor& up, const Tensor* residual) const {
  const char* op = "QMatMul::forward_swiglu";
  const Impl& w = *impl_;
  const XRows r = check_x(op, w, gate, "gate");
  if (up.shape() != gate.shape())
    fail(ErrorKind::Shape, op, "up must have gate's shape ", gate.shape(), ", got ", up.shape(),
         " (weight ", w.weight.str(), ")");
  check_operand(op, w, up, "up", gate, "gate");
  if (residual) check_residual(op, w, *residual, r.out_shape);
  if (!w.device.backend().runs_qmatmul() && gate.dtype() == DType::F32) {  // fused on the CPU
    const HostRows g = host_rows(gate, r.m, w.k), u = host_rows(up, r.m, w.k);
    const HostRows res = residual ? host_rows(*residual, r.m, w.n_out) : HostRows{};
    return forward_cpu(w, CpuRows{g.p, g.stride, backend::QPrologue::Kind::SwiGlu, u.p, u.stride},
                       r.out_shape, r.m, res.p, res.stride);
  }
  if (!w.device.backend().runs_qmatmul() || w.dense_device.defined()) {
    const Tensor y = forward(gate.silu() * up);
    return residual ? *residual + y : y;
  }
  return forward_device(w, gate, r.out_shape, r.m, backend::QPrologue::Kind::SwiGlu, &up, 0,
                        residual);
}

}  // namespace wick
