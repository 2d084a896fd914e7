// The bridge between GGUF tensors and wick Tensors (kept apart from the parser, which needs no
// device code: the fuzz targets link the parser alone).
#include <cstring>

#include "cpu/cpu_device.h"
#include "io/file.h"
#include "io/gguf_format.h"

namespace wick {

namespace {

// The wick dtype a plain GGML type maps to without conversion.
bool same_dtype(QuantType t, DType& dt) {
  switch (t) {
    case QuantType::F32:
      dt = DType::F32;
      return true;
    case QuantType::F16:
      dt = DType::F16;
      return true;
    case QuantType::BF16:
      dt = DType::BF16;
      return true;
    case QuantType::F64:
      dt = DType::F64;
      return true;
    case QuantType::I64:
      dt = DType::I64;
      return true;
    default:
      return false;
  }
}

template <typename T>
std::vector<int64_t> widen(const GgufTensorInfo& info) {
  std::vector<int64_t> out(static_cast<size_t>(info.numel));
  for (size_t i = 0; i < out.size(); i++) {
    T v;
    std::memcpy(&v, info.data + i * sizeof(T), sizeof(T));
    out[i] = v;
  }
  return out;
}

}  // namespace

Tensor GgufFile::tensor(std::string_view name, const Device& dev) const {
  const GgufTensorInfo& info = tensor_info(name);
  if (!quant_type_info(info.type))
    fail(ErrorKind::Unsupported, "gguf", name_, ": tensor '", io::excerpt(name),
         "' has unknown tensor type id ", static_cast<uint32_t>(info.type), " (shape ", info.shape,
         "): this build of wick cannot read it");
  DType dt;
  if (same_dtype(info.type, dt)) {
    const bool aligned = reinterpret_cast<uintptr_t>(info.data) % dtype_size(dt) == 0;
    if (dev.is_cpu() && writable_ && aligned) {
      auto& cpu = static_cast<cpu::CpuDevice&>(dev.backend());
      auto storage =
          cpu.wrap(dt, static_cast<size_t>(info.numel), std::const_pointer_cast<void>(keep_alive_),
                   const_cast<std::byte*>(info.data));
      return Tensor(std::move(storage), Layout::contiguous(info.shape), dt, dev);
    }
    // Someone else's (maybe read-only) bytes, or misaligned for the dtype: copy.
    return Tensor::from_data(info.data, dt, info.shape, dev);
  }
  switch (info.type) {
    case QuantType::I8:
      return Tensor::from_vec(widen<int8_t>(info), info.shape, dev);
    case QuantType::I16:
      return Tensor::from_vec(widen<int16_t>(info), info.shape, dev);
    case QuantType::I32:
      return Tensor::from_vec(widen<int32_t>(info), info.shape, dev);
    default:
      break;
  }
  fail(ErrorKind::Unsupported, "gguf", name_, ": tensor '", io::excerpt(name),
       "' has quantized type ", quant_type_info(info.type)->name, " (shape ", info.shape,
       "): read its blocks from tensor_info(name).bytes()");
}

void GgufWriter::add_tensor(std::string name, const Tensor& t) {
  QuantType type;
  switch (t.dtype()) {
    case DType::F32:
      type = QuantType::F32;
      break;
    case DType::F16:
      type = QuantType::F16;
      break;
    case DType::BF16:
      type = QuantType::BF16;
      break;
    case DType::F64:
      type = QuantType::F64;
      break;
    case DType::I64:
      type = QuantType::I64;
      break;
    case DType::I32:
      type = QuantType::I32;
      break;
    default:
      fail(ErrorKind::DType, "GgufWriter::add_tensor", "tensor '", io::excerpt(name), "' ", t.str(),
           ": GGUF has no ", dtype_name(t.dtype()), " tensor type");
  }
  std::vector<std::byte> bytes(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  t.read_into(bytes.data(), t.dtype());
  add_raw_tensor(std::move(name), type, t.shape(), bytes);
}

}  // namespace wick
