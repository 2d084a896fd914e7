// QTensor, quantize and dequantize: validation, then whole rows through the format routines.
#include <cstring>

#include "cpu/parallel.h"
#include "quantized/formats.h"
#include "wick/quantized.h"

namespace wick {

using quantized::format_ops;
using quantized::FormatOps;

namespace {

const QuantTypeInfo& info_or_fail(QuantType type, const char* op) {
  const QuantTypeInfo* info = quant_type_info(type);
  if (!info)
    fail(ErrorKind::Unsupported, op, "unknown quant type id ", static_cast<uint32_t>(type));
  return *info;
}

const FormatOps& ops_or_fail(QuantType type, const char* op) {
  const FormatOps* ops = format_ops(type);
  if (!ops)
    fail(ErrorKind::Unsupported, op, "no block routines for type ", info_or_fail(type, op).name);
  return *ops;
}

// Rows split across threads when the work is big enough to pay for waking them.
constexpr int64_t kElementsPerTask = 1 << 16;

}  // namespace

QTensor::QTensor(QuantType type, Shape shape, std::vector<uint8_t> bytes)
    : type_(type), shape_(std::move(shape)) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  data_ = owned->data();
  nbytes_ = owned->size();
  owner_ = std::move(owned);
  init("QTensor");
}

QTensor::QTensor(QuantType type, Shape shape, std::shared_ptr<const void> owner, const void* data,
                 size_t nbytes)
    : type_(type),
      shape_(std::move(shape)),
      owner_(std::move(owner)),
      data_(static_cast<const uint8_t*>(data)),
      nbytes_(nbytes) {
  if (reinterpret_cast<uintptr_t>(data_) % 4 != 0) {
    auto copy = std::make_shared<std::vector<uint8_t>>(data_, data_ + nbytes_);
    data_ = copy->data();
    owner_ = std::move(copy);
  }
  init("QTensor");
}

void QTensor::init(const char* op) {
  const QuantTypeInfo& info = info_or_fail(type_, op);
  if (shape_.rank() == 0) fail(ErrorKind::Shape, op, "a quantized tensor needs at least one dim");
  for (int64_t d : shape_.dims())
    if (d < 0) fail(ErrorKind::Shape, op, "negative dim in shape ", shape_);
  const int64_t last = shape_[shape_.rank() - 1];
  if (last % info.block_elems != 0)
    fail(ErrorKind::Shape, op, "last dim of shape ", shape_, " is not a multiple of the ",
         info.name, " block size ", info.block_elems);
  const size_t want = static_cast<size_t>(rows()) * row_bytes();
  if (want != nbytes_)
    fail(ErrorKind::Shape, op, "shape ", shape_, " of ", info.name, " needs ", want, " bytes, got ",
         nbytes_);
}

int64_t QTensor::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape_.rank(); i++) r *= shape_[i];
  return r;
}

size_t QTensor::row_bytes() const {
  const QuantTypeInfo* info = quant_type_info(type_);
  if (!info || shape_.rank() == 0) return 0;
  return static_cast<size_t>(shape_[shape_.rank() - 1] / info->block_elems * info->block_bytes);
}

std::string QTensor::str() const {
  const QuantTypeInfo* info = quant_type_info(type_);
  std::string dims;
  for (size_t i = 0; i < shape_.rank(); i++) dims += (i ? ", " : "") + std::to_string(shape_[i]);
  return "QTensor[" + dims + "; " + (info ? info->name : "?") + "]";
}

bool quant_type_supported(QuantType type) {
  return format_ops(type) != nullptr;
}

void dequantize_row(QuantType type, const void* src, float* dst, int64_t n) {
  const QuantTypeInfo& info = info_or_fail(type, "dequantize_row");
  const FormatOps& ops = ops_or_fail(type, "dequantize_row");
  if (n < 0 || n % info.block_elems != 0)
    fail(ErrorKind::Shape, "dequantize_row", n, " elements is not a multiple of the ", info.name,
         " block size ", info.block_elems);
  ops.dequantize(src, dst, n);
}

QTensor quantize(const Tensor& x, QuantType type) {
  const char* op = "quantize";
  const QuantTypeInfo& info = info_or_fail(type, op);
  const FormatOps& ops = ops_or_fail(type, op);
  if (!is_float(x.dtype()))
    fail(ErrorKind::DType, op, "input must be a float tensor, got ", x.dtype(), " of shape ",
         x.shape());
  if (x.rank() == 0) fail(ErrorKind::Shape, op, "input must have at least one dim, got a scalar");
  const int64_t k = x.dim(-1);
  if (k % info.block_elems != 0)
    fail(ErrorKind::Shape, op, "last dim of shape ", x.shape(), " is not a multiple of the ",
         info.name, " block size ", info.block_elems);
  const std::vector<float> values = x.to_vec<float>();
  const int64_t rows = k == 0 ? 0 : x.numel() / k;
  const size_t row_bytes = static_cast<size_t>(k / info.block_elems * info.block_bytes);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows) * row_bytes);
  cpu::parallel_for(
      rows, kElementsPerTask / std::max<int64_t>(k, 1) + 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; r++)
          ops.quantize(values.data() + r * k, bytes.data() + static_cast<size_t>(r) * row_bytes, k);
      });
  return QTensor(type, x.shape(), std::move(bytes));
}

Tensor dequantize(const QTensor& q, DType dt, const Device& dev) {
  const char* op = "dequantize";
  if (!q.defined()) fail(ErrorKind::Shape, op, "empty QTensor");
  const FormatOps& ops = ops_or_fail(q.type(), op);
  if (dt != DType::F32 && dt != DType::F16 && dt != DType::BF16)
    fail(ErrorKind::DType, op, "output dtype must be f32, f16 or bf16, got ", dt, " for ", q.str());
  const int64_t k = q.shape()[q.shape().rank() - 1];
  const int64_t rows = q.rows();
  const size_t elems = static_cast<size_t>(rows * k);
  std::vector<float> f32(elems);
  std::vector<uint16_t> half(dt == DType::F32 ? 0 : elems);
  cpu::parallel_for(rows, kElementsPerTask / std::max<int64_t>(k, 1) + 1,
                    [&](int64_t r0, int64_t r1) {
                      for (int64_t r = r0; r < r1; r++) {
                        float* row = f32.data() + r * k;
                        ops.dequantize(q.data() + static_cast<size_t>(r) * q.row_bytes(), row, k);
                        if (dt == DType::F16)
                          for (int64_t j = 0; j < k; j++)
                            half[static_cast<size_t>(r * k + j)] = f16::from_float(row[j]);
                        else if (dt == DType::BF16)
                          for (int64_t j = 0; j < k; j++)
                            half[static_cast<size_t>(r * k + j)] = bf16::from_float(row[j]);
                      }
                    });
  return Tensor::from_data(dt == DType::F32 ? static_cast<const void*>(f32.data()) : half.data(),
                           dt, q.shape(), dev);
}

}  // namespace wick
