// GGUF writer (version 3): metadata, tensor infos and aligned tensor data, in the order added.
#include <cstring>
#include <limits>

#include "io/file.h"
#include "io/gguf_format.h"

namespace wick {

namespace {

struct VectorSink {
  std::vector<std::byte>& out;
  uint64_t written = 0;
  void put(const void* p, size_t n) {
    if (n == 0) return;
    out.resize(out.size() + n);
    std::memcpy(out.data() + out.size() - n, p, n);
    written += n;
  }
};

struct FileSink {
  io::AtomicFileWriter& file;
  uint64_t written = 0;
  void put(const void* p, size_t n) {
    file.write(p, n);
    written += n;
  }
};

template <typename Sink, typename T>
void put_pod(Sink& s, T v) {
  s.put(&v, sizeof(T));
}

template <typename Sink>
void put_string(Sink& s, const std::string& str) {
  put_pod<Sink, uint64_t>(s, str.size());
  s.put(str.data(), str.size());
}

template <typename Sink>
void put_value(Sink& s, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(s, x);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          put_pod<Sink, uint32_t>(s, static_cast<uint32_t>(x.type));
          put_pod<Sink, uint64_t>(s, x.items.size());
          for (const GgufValue& item : x.items) put_value(s, item);
        } else if constexpr (std::is_same_v<T, bool>) {
          put_pod<Sink, uint8_t>(s, x ? 1 : 0);
        } else {
          put_pod<Sink, T>(s, x);
        }
      },
      v.variant());
}

template <typename Sink>
void pad_to(Sink& s, uint64_t alignment) {
  static constexpr std::byte zeros[256] = {};
  uint64_t pad = (alignment - s.written % alignment) % alignment;
  while (pad > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof(zeros)));
    s.put(zeros, n);
    pad -= n;
  }
}

uint64_t align_up(uint64_t v, uint64_t alignment) {
  return (v + alignment - 1) / alignment * alignment;
}

// Arrays built by hand (GgufArray is a plain struct) must still be well-formed to be written.
void check_value(const GgufValue& v, const std::string& key, int depth) {
  if (!v.is<GgufArray>()) return;
  if (depth >= gguf::kMaxArrayDepth)
    fail(ErrorKind::DType, "GgufWriter::set", "key '", io::excerpt(key),
         "': arrays nested deeper than ", gguf::kMaxArrayDepth, " levels");
  const GgufArray& a = v.as_array();
  if (!gguf::valid_value_type(static_cast<uint32_t>(a.type)))
    fail(ErrorKind::DType, "GgufWriter::set", "key '", io::excerpt(key),
         "': unknown array element type id ", static_cast<uint32_t>(a.type));
  for (size_t i = 0; i < a.items.size(); i++) {
    if (a.items[i].type() != a.type)
      fail(ErrorKind::DType, "GgufWriter::set", "key '", io::excerpt(key), "': item ", i,
           " has type ", gguf_value_type_name(a.items[i].type()), " in an array of ",
           gguf_value_type_name(a.type));
    check_value(a.items[i], key, depth + 1);
  }
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (!gguf::is_power_of_two(alignment))
    fail(ErrorKind::OutOfRange, "GgufWriter", "alignment ", alignment, " is not a power of two");
}

void GgufWriter::set(std::string key, GgufValue value) {
  if (key.empty()) fail(ErrorKind::Parse, "GgufWriter::set", "empty key");
  if (key == gguf::kAlignmentKey)
    fail(ErrorKind::Parse, "GgufWriter::set",
         "general.alignment is set through GgufWriter(alignment)");
  if (keys_.count(key))
    fail(ErrorKind::Parse, "GgufWriter::set", "duplicate key '", io::excerpt(key), "'");
  check_value(value, key, 0);
  keys_.emplace(key, metadata_.size());
  metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::add_raw_tensor(std::string name, QuantType type, const Shape& shape,
                                std::span<const std::byte> bytes) {
  const char* op = "GgufWriter::add_raw_tensor";
  if (names_.count(name))
    fail(ErrorKind::Parse, op, "duplicate tensor name '", io::excerpt(name), "'");
  const QuantTypeInfo* info = quant_type_info(type);
  if (!info)
    fail(ErrorKind::DType, op, "tensor '", io::excerpt(name), "': unknown type id ",
         static_cast<uint32_t>(type));
  if (shape.rank() > gguf::kMaxDims)
    fail(ErrorKind::Shape, op, "tensor '", io::excerpt(name), "': shape ", shape, " has more than ",
         gguf::kMaxDims, " dims");
  uint64_t numel = 1;
  for (int64_t d : shape.dims()) {
    if (d <= 0)
      fail(ErrorKind::Shape, op, "tensor '", io::excerpt(name), "': shape ", shape,
           " has a dim <= 0 (GGUF dims are positive)");
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel))
      fail(ErrorKind::Shape, op, "tensor '", io::excerpt(name), "': shape ", shape, " overflows");
  }
  const int64_t inner = shape.rank() ? shape.dims().back() : 1;
  if (inner % info->block_elems != 0)
    fail(ErrorKind::Shape, op, "tensor '", io::excerpt(name), "': innermost dim ", inner,
         " of shape ", shape, " is not a multiple of the ", info->name, " block of ",
         info->block_elems);
  const uint64_t want =
      numel / static_cast<uint64_t>(info->block_elems) * static_cast<uint64_t>(info->block_bytes);
  if (bytes.size() != want)
    fail(ErrorKind::Shape, op, "tensor '", io::excerpt(name), "': ", bytes.size(), " bytes given, ",
         info->name, " shape ", shape, " takes ", want);
  PendingTensor t{std::move(name), type,
                  std::vector<int64_t>(shape.dims().rbegin(), shape.dims().rend()),
                  std::vector<std::byte>(bytes.begin(), bytes.end())};
  names_.emplace(t.name, tensors_.size());
  tensors_.push_back(std::move(t));
}

template <typename Sink>
void GgufWriter::emit(Sink& sink) const {
  const bool write_alignment = alignment_ != gguf::kDefaultAlignment;
  sink.put(gguf::kMagic, 4);
  put_pod<Sink, uint32_t>(sink, gguf::kWriteVersion);
  put_pod<Sink, uint64_t>(sink, tensors_.size());
  put_pod<Sink, uint64_t>(sink, metadata_.size() + (write_alignment ? 1 : 0));
  if (write_alignment) {
    put_string(sink, gguf::kAlignmentKey);
    put_pod<Sink, uint32_t>(sink, static_cast<uint32_t>(GgufValueType::U32));
    put_pod<Sink, uint32_t>(sink, alignment_);
  }
  for (const auto& [key, value] : metadata_) {
    put_string(sink, key);
    put_pod<Sink, uint32_t>(sink, static_cast<uint32_t>(value.type()));
    put_value(sink, value);
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    put_string(sink, t.name);
    put_pod<Sink, uint32_t>(sink, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put_pod<Sink, uint64_t>(sink, static_cast<uint64_t>(d));
    put_pod<Sink, uint32_t>(sink, static_cast<uint32_t>(t.type));
    put_pod<Sink, uint64_t>(sink, offset);
    offset = align_up(offset + t.bytes.size(), alignment_);
  }
  pad_to(sink, alignment_);
  for (const PendingTensor& t : tensors_) {
    sink.put(t.bytes.data(), t.bytes.size());
    pad_to(sink, alignment_);
  }
}

std::vector<std::byte> GgufWriter::to_bytes() const {
  std::vector<std::byte> out;
  VectorSink sink{out};
  emit(sink);
  return out;
}

void GgufWriter::write(const std::string& path) const {
  io::AtomicFileWriter file(path, "GgufWriter::write");
  FileSink sink{file};
  emit(sink);
  file.commit();
}

}  // namespace wick
