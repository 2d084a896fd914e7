// Quantized tensors in ggml's block formats (the layouts GGUF files store) and the matmul that
// runs on them.
//
//   QTensor  raw blocks + type + logical shape; owns its bytes or views external memory (a file
//            mapping) kept alive by a shared owner.
//   quantize(x, type)        f32 (or f16/bf16/f64) tensor -> QTensor, ggml's reference rounding
//                            (iq4_nl/iq4_xs: wick's own scale search, ggml's block layout).
//   dequantize(q, dt, dev)   QTensor -> f32/f16/bf16 tensor.
//   QMatMul                  y = x @ W^T for a weight W of shape (n_out, k), on the CPU (x rows
//                            quantized to 8 bits per block, integer SIMD dot products; long inputs
//                            use dequantized tiles + sgemm) or on a GPU (blocks uploaded once and
//                            decoded by the kernels).
//
// Formats: q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 q2_k q3_k q4_k q5_k q6_k q8_k iq4_nl iq4_xs, and the
// plain f32, f16, bf16. The last dim of a QTensor is the block dim and must be a multiple of the
// block size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wick/attention.h"
#include "wick/quant_type.h"
#include "wick/tensor.h"

namespace wick {

class QMatMul;
namespace quantized {
size_t packed_weight_bytes(const QMatMul& mm);  // internal (src/quantized/packed.h)
}

class QTensor {
 public:
  QTensor() = default;
  // Takes the bytes: rows of blocks, row-major over `shape` (last dim = block dim).
  // Throws Error(Shape) when the last dim is not a multiple of the block size or the byte count
  // does not fit the shape, Error(Unsupported) for a type id wick does not know.
  QTensor(QuantType type, Shape shape, std::vector<uint8_t> bytes);
  // Views `nbytes` bytes at `data`, kept alive by `owner` (e.g. a memory-mapped file). Data that
  // is not 4-byte aligned is copied, so that blocks can be read in place.
  QTensor(QuantType type, Shape shape, std::shared_ptr<const void> owner, const void* data,
          size_t nbytes);

  QuantType type() const { return type_; }
  const Shape& shape() const { return shape_; }
  const uint8_t* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  int64_t rows() const;      // product of all dims but the last
  size_t row_bytes() const;  // bytes of one row of the last dim
  std::string str() const;   // "QTensor[1536, 576; q4_1]"
  bool defined() const { return shape_.rank() > 0; }

 private:
  void init(const char* op);
  QuantType type_ = QuantType::F32;
  Shape shape_;
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t nbytes_ = 0;
};

// True when quantize/dequantize take `type`.
bool quant_type_supported(QuantType type);

// x (float dtype, any layout and device) -> blocks of `type`. Throws Error(DType) for integer x,
// Error(Shape) when x is a scalar or its last dim is not a multiple of the block size,
// Error(Unsupported) for a type without a quantizer.
QTensor quantize(const Tensor& x, QuantType type);

// Values of `q` as a tensor of dtype `dt` (f32, f16 or bf16; else Error(DType)) on `dev`.
Tensor dequantize(const QTensor& q, DType dt = DType::F32, const Device& dev = Device::cpu());

// Dequantizes `n` elements (a multiple of the block size) of `type` at `src` into `dst`.
void dequantize_row(QuantType type, const void* src, float* dst, int64_t n);

// y = x @ W^T with W (n_out, k) quantized: x (..., k) -> y (..., n_out), f32, on the weight's
// device. x may be f32, f16 or bf16, in any layout, and must be on the weight's device (else
// Error(Device)): nothing is copied between devices behind the caller's back.
//   CPU: x rows are quantized to 8 bits per block first (as ggml does), so results differ from an
//     f32 matmul by at most half an activation step per block times sum |w|. Keeps the weight
//     QTensor; on AVX2 and AVX-512 CPUs q4_0/q4_1/q8_0 weights are also repacked once (as many
//     bytes again), f16/bf16/q8_1/q8_k weights are held as f32.
//   GPU (Vulkan): the blocks are uploaded once, at construction, and decoded by the kernels; x
//     is quantized to 8 bits exactly as on the CPU (same rows, same formats), so both backends
//     give the same products and differ only in summation order. Plain weights (f32/f16/bf16)
//     are held as an f32 device tensor and go through the f32 matmul. The host QTensor is kept
//     too (weight()).
// Where QMatMul::forward_rope_kv sends its product: rope_kv_cache's arguments (wick/attention.h)
// but q, k and v, which are the product's columns.
struct RopeKvTarget {
  int64_t heads = 0, kv_heads = 0;  // h and kvh: the head dim is n_out / (h + 2 kvh)
  Tensor k_cache, v_cache;
  RotaryTables tables;
  Tensor pos;
  bool interleaved = false;
  Tensor slots;  // optional, as rope_kv_cache's
};

class QMatMul {
 public:
  // On the CPU. Throws Error(Shape) unless `weight` is 2-D, Error(Unsupported) for a type it
  // cannot multiply.
  explicit QMatMul(QTensor weight);
  // On `dev`: the blocks go to the device once, here. Same errors, plus Error(Unsupported) when
  // the device cannot hold U8 storage (8-bit storage buffers).
  QMatMul(QTensor weight, const Device& dev);
  // Throws Error(Shape) unless x ends in k, Error(DType) for other x dtypes, Error(Device) when x
  // is not on device(), Error(Unsupported) when the device has no kernel for the format (Vulkan
  // has all twelve) or cannot bind the weight (beyond maxStorageBufferRange).
  Tensor forward(const Tensor& x) const;
  // residual + forward(x), bit for bit; on a GPU the residual is added where the product is
  // stored (decode: no add dispatch). residual: f32, the product's shape, on device(); else
  // Error(DType) / Error(Shape) / Error(Device) naming it.
  Tensor forward(const Tensor& x, const Tensor& residual) const;
  // forward(x.rms_norm(alpha, eps)), bit for bit, with fewer dispatches: on a GPU, where x is
  // quantized to 8 bits (the formats with integer dot products, fewer rows than the CPU's switch
  // to sgemm), one kernel normalises each row and quantizes it (2 dispatches instead of 3);
  // elsewhere the two ops run one after the other. alpha: 1-D of k elements, x's dtype. Errors
  // as forward's (named QMatMul::forward_rms_norm), plus Error(Shape) / Error(DType) /
  // Error(Device) for alpha.
  Tensor forward_rms_norm(const Tensor& x, const Tensor& alpha, double eps) const;
  // forward(gate.silu() * up), bit for bit, with fewer dispatches (2 instead of 4 on a GPU where
  // x is quantized, as forward_rms_norm). gate and up: the same shape (..., k) and dtype, any
  // layouts (no broadcasting). Errors as forward's for gate (named QMatMul::forward_swiglu), plus
  // Error(Shape) / Error(DType) / Error(Device) for up.
  Tensor forward_swiglu(const Tensor& gate, const Tensor& up) const;
  // residual + forward_swiglu(gate, up), bit for bit, the residual added as forward(x, residual)
  // adds it.
  Tensor forward_swiglu(const Tensor& gate, const Tensor& up, const Tensor& residual) const;
  // A decode step's fused q/k/v projection and its rope_kv_cache: for x (b, k), one new token of
  // batch item i per row, y = forward_rms_norm(x, norm_alpha, eps) (forward(x) when norm_alpha
  // is undefined) is split along its n_out = (h + 2 kvh) d columns into q (b, h, 1, d), k and v
  // (b, kvh, 1, d), and the result is rope_kv_cache(q, k, v, target's caches, tables, pos,
  // interleaved, slots): the rotated q (b, h, 1, d) f32, the caches written in place. Bit for bit
  // those ops; on a GPU one dispatch where it can (rope_i pairs, x rows decode's qmatvec takes:
  // the rotation and the cache writes join the product's stores; WICK_QMATVEC_ROPE=0 turns it
  // off), else the ops one after the other. The tables are f32 (the product's dtype). Errors as
  // forward_rms_norm's for x and alpha (named QMatMul::forward_rope_kv), Error(Shape) for x not
  // 2-D or heads that do not divide n_out, and rope_kv_cache's for the rest.
  Tensor forward_rope_kv(const Tensor& x, const RopeKvTarget& target,
                         const Tensor& norm_alpha = Tensor(), double eps = 0) const;
  // A llama-style feed-forward block with this matrix as its gate and up projections (gate's
  // rows, then up's: n_out = 2 down.in_features()): residual + down.forward_swiglu(gate, up),
  // gate and up the two halves of forward_rms_norm(x, norm_alpha, eps) (of forward(x) when
  // norm_alpha is undefined; no residual when it is undefined). Bit for bit those ops; on a GPU
  // where decode's qmatvec takes x and both formats quantize x alike, two dispatches instead of
  // three: the gate/up kernel finishes silu(gate) * up and its 8-bit quantization for down
  // (WICK_QMATVEC_SWIGLU), else the ops one after the other. Errors as forward_rms_norm's for x
  // and alpha (named QMatMul::forward_swiglu_ffn), Error(Shape) when n_out is not twice down's k,
  // Error(Device) when down is elsewhere, and forward(x, residual)'s for the residual against
  // down's product.
  Tensor forward_swiglu_ffn(const Tensor& x, const QMatMul& down, const Tensor& residual = Tensor(),
                            const Tensor& norm_alpha = Tensor(), double eps = 0) const;

  // Greedy picks: ids.slice_set(forward_rms_norm(x, norm_alpha, eps).argmax(1), 0, offset)
  // (forward(x) when norm_alpha is undefined) for x (m, k): each row's first maximum of the
  // product, NaN counting as the largest, as argmax picks it. On a GPU one kernel where decode's
  // qmatvec takes x (WICK_QMATVEC_ARGMAX): its workgroups fold their rows' maxima and the last
  // ones merge them, so no logits are stored and no argmax dispatch follows; else the ops one
  // after the other. ids: 1-D u32 on device(), written in place at offset .. offset + m. Errors
  // as forward_rms_norm's for x and alpha (named QMatMul::forward_argmax), Error(Shape) for x
  // not 2-D or ids not 1-D, Error(DType) / Error(Device) for ids, Error(OutOfRange) for rows
  // past its end, and argmax's for a weight of no rows.
  void forward_argmax(const Tensor& x, const Tensor& ids, int64_t offset = 0,
                      const Tensor& norm_alpha = Tensor(), double eps = 0) const;

  // Rows ids of W dequantized to f32: (n, k) on device() for u32 ids (n) there, each value as
  // dequantize_row gives it (bit for bit): an embedding lookup in a quantized table that stays
  // on the device. On a GPU one kernel that reads the ids there, so a captured step (Device::
  // capture) can pick rows from its own results; an id >= n_out gives zeros and raises
  // Error(OutOfRange) at the thread's next wait (the CPU, and plain f32/f16/bf16 weights, which
  // go through index_select, at once). Errors: Shape (ids not 1-D), DType (not u32), Device
  // (ids elsewhere), Unsupported (a device without a kernel for the format).
  Tensor rows(const Tensor& ids) const;

  const QTensor& weight() const;
  const Device& device() const;  // where forward() runs
  int64_t in_features() const;   // k
  int64_t out_features() const;  // n_out

  struct Impl;

 private:
  friend size_t quantized::packed_weight_bytes(const QMatMul& mm);
  Tensor swiglu(const Tensor& gate, const Tensor& up, const Tensor* residual) const;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace wick
