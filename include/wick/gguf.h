// GGUF model files: reading (versions 2 and 3, little-endian) through a memory mapping, and
// writing (version 3). The format is ggml's (docs/gguf.md in ggml):
//
//   "GGUF" | u32 version | u64 tensor_count | u64 kv_count | kv_count x (string key, u32 type,
//   value) | tensor_count x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset) |
//   zero padding to `alignment` | tensor data
//
// Strings are a u64 byte length then the bytes. Tensor offsets count from the start of the data
// section (the aligned end of the tensor infos) and are multiples of the alignment, which is the
// u32 key "general.alignment" (a power of two) or 32 when absent.
//
// Dims: GGUF lists a tensor's dims innermost first: ne[0] is the dim whose elements are adjacent
// in memory. wick shapes are row-major (last dim adjacent), so a tensor's wick shape is ne
// reversed: a matrix stored with ne = {4096, 32000} (32000 rows of 4096) has shape [32000, 4096],
// which for llama weights is PyTorch's (out_features, in_features).
//
// Every malformed file (truncated, bad magic or version, absurd counts or lengths, unknown types,
// misaligned, out-of-file or overlapping tensor data, duplicate names) is reported as
// Error(Parse) naming the file, the field and the value; nothing is allocated from a count that
// the file's size has not bounded first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "wick/device.h"
#include "wick/error.h"
#include "wick/quant_type.h"
#include "wick/shape.h"
#include "wick/tensor.h"

namespace wick {

// Metadata value types; the numbers are the ids GGUF stores.
enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);  // "u8", ..., "string", "array", "f64"

class GgufValue;

namespace detail {
template <typename T, typename V>
struct VariantIndex;
template <typename T, typename... Ts>
struct VariantIndex<T, std::variant<Ts...>> {
  static constexpr size_t find() {
    constexpr bool same[] = {std::is_same_v<T, Ts>...};
    for (size_t i = 0; i < sizeof...(Ts); i++)
      if (same[i]) return i;
    return sizeof...(Ts);
  }
  static constexpr size_t value = find();
  static constexpr bool found = value < sizeof...(Ts);
};
}  // namespace detail

// A metadata array: every item has the element type `type` (arrays may nest).
struct GgufArray {
  GgufValueType type = GgufValueType::U8;
  std::vector<GgufValue> items;
};

// One metadata value of any GGUF type. The variant's alternative index is the type id.
class GgufValue {
 public:
  using Variant = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, GgufArray, uint64_t, int64_t, double>;
  // True when T is one of the alternatives (uint8_t ... double, std::string, GgufArray).
  template <typename T>
  static constexpr bool holds_type = detail::VariantIndex<T, Variant>::found;

  GgufValue() = default;  // u8 0
  template <typename T>
  requires holds_type<std::remove_cvref_t<T>> GgufValue(T&& v) : v_(std::forward<T>(v)) {}
  GgufValue(const char* s) : v_(std::string(s)) {}
  GgufValue(std::string_view s) : v_(std::string(s)) {}

  // An array of `elem`-typed items; throws Error(DType) when an item has another type.
  static GgufValue array(GgufValueType elem, std::vector<GgufValue> items);
  template <typename T>
  requires holds_type<T>
  static GgufValue array(const std::vector<T>& items) {
    GgufArray a{type_of<T>(), {}};
    a.items.reserve(items.size());
    for (const T& x : items) a.items.emplace_back(x);
    return GgufValue(std::move(a));
  }

  GgufValueType type() const { return static_cast<GgufValueType>(v_.index()); }
  template <typename T>
  bool is() const {
    return std::holds_alternative<T>(v_);
  }
  // The value as T (exactly its type); throws Error(Parse) naming both types otherwise.
  template <typename T>
  const T& as() const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    type_mismatch(type_of<T>());
  }
  const std::string& as_string() const { return as<std::string>(); }
  const GgufArray& as_array() const { return as<GgufArray>(); }
  // Any integer type (and bool) as int64 (a u64 above INT64_MAX throws); f32/f64 as double.
  int64_t to_int() const;
  double to_float() const;
  // An array whose items are exactly T, copied out.
  template <typename T>
  std::vector<T> to_vector() const {
    const GgufArray& a = as_array();
    if (a.type != type_of<T>()) array_type_mismatch(type_of<T>());
    std::vector<T> out;
    out.reserve(a.items.size());
    for (const GgufValue& x : a.items) out.push_back(x.as<T>());
    return out;
  }

  const Variant& variant() const { return v_; }
  // For people: `u32 32`, `string "llama"`, `array<string>[49152] {"a", "b", ...}`. Strings
  // show at most 80 bytes, then "... (N bytes)".
  std::string str(size_t max_items = 8) const;
  // Exact equality of type and value; floats compare by their bits (so a NaN equals itself).
  bool operator==(const GgufValue& o) const;

  template <typename T>
  requires holds_type<T>
  static constexpr GgufValueType type_of() {
    return static_cast<GgufValueType>(detail::VariantIndex<T, Variant>::value);
  }

 private:
  [[noreturn]] void type_mismatch(GgufValueType wanted) const;
  [[noreturn]] void array_type_mismatch(GgufValueType wanted) const;
  Variant v_;
};

// Where one tensor lives in a GGUF file.
struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // GGUF order: ne[0] is the innermost (contiguous) dim
  Shape shape;              // wick row-major order: ne reversed
  // The file's type id; one wick does not know (quant_type_info: nullptr) has nbytes 0.
  QuantType type = QuantType::F32;
  int64_t numel = 0;
  uint64_t offset = 0;  // from the start of the data section (GgufFile::data_offset())
  uint64_t nbytes = 0;
  const std::byte* data = nullptr;  // the bytes in the mapping; valid while the GgufFile lives

  std::span<const std::byte> bytes() const { return {data, static_cast<size_t>(nbytes)}; }
  // True for block formats (q4_0, q4_1, ...): tensor() refuses them, bytes() holds the blocks.
  bool is_quantized() const;
};

class GgufFile {
 public:
  // Maps `path` (read-only, copy-on-write) and parses it. Throws Error(Io) when the file cannot
  // be opened or mapped or is not a regular file (a FIFO or a device is refused without reading
  // or waiting), Error(Parse) when it is malformed. The file must not shrink while open.
  static GgufFile open(const std::string& path);
  // Parses bytes already in memory; `keep_alive` owns them (tensors hold on to it). `name`
  // stands for the file in error messages.
  static GgufFile parse(std::span<const std::byte> bytes, std::shared_ptr<const void> keep_alive,
                        std::string name = "<memory>");
  // A file put together in memory by a loader of another format (a Hugging Face folder): the
  // metadata, and tensors given by name, shape (row-major), type and data; assemble fills in
  // ne, numel and nbytes (offset stays 0). The data lie in memory that `keep_alive` owns and that
  // tensors may write to (a private mapping or the heap): on the CPU tensor() wraps it without a
  // copy. Error(Parse) naming `name` for a duplicate key or tensor, a tensor without data, or a
  // shape the type's blocks do not divide.
  static GgufFile assemble(std::string name,
                           std::vector<std::pair<std::string, GgufValue>> metadata,
                           std::vector<GgufTensorInfo> tensors,
                           std::shared_ptr<const void> keep_alive);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  uint64_t file_size() const { return size_; }

  // ---- metadata -----------------------------------------------------------------------------
  // Every key/value in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;  // nullptr when absent
  // The value of `key`; throws Error(Parse) naming the file and key when it is absent.
  const GgufValue& value(std::string_view key) const;
  // The value of `key` as exactly T; Error(Parse) names the key and both types on a mismatch.
  template <typename T>
  const T& get(std::string_view key) const {
    const GgufValue& v = value(key);
    if (!v.is<T>()) key_type_mismatch(key, v, GgufValue::type_of<T>());
    return v.as<T>();
  }
  // Lenient numeric reads: any integer type / f32 or f64 (converters disagree on widths).
  int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;
  // An array of exactly-T items (std::string for string arrays), copied out.
  template <typename T>
  std::vector<T> get_array(std::string_view key) const {
    const GgufValue& v = value(key);
    if (!v.is<GgufArray>() || v.as_array().type != GgufValue::type_of<T>())
      key_type_mismatch(key, v, GgufValue::type_of<T>(), true);
    return v.to_vector<T>();
  }

  // ---- tensors ------------------------------------------------------------------------------
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;  // nullptr when absent
  // Throws Error(Parse) naming the file and tensor when absent.
  const GgufTensorInfo& tensor_info(std::string_view name) const;
  // A plain-typed tensor as a wick Tensor of the row-major shape. F32, F16, BF16, F64 and I64 map
  // to the same dtype; on the CPU they wrap the mapping without a copy (the tensor keeps the
  // mapping alive; in-place ops write to private pages, never to the file). I8, I16 and I32 are
  // converted to I64 (wick has no narrow signed integers). Quantized types throw
  // Error(Unsupported): take their bytes from tensor_info(name).bytes().
  Tensor tensor(std::string_view name, const Device& dev = Device::cpu()) const;

 private:
  friend class GgufParser;
  GgufFile() = default;
  [[noreturn]] void key_type_mismatch(std::string_view key, const GgufValue& v,
                                      GgufValueType wanted, bool array = false) const;

  std::string name_;
  std::shared_ptr<const void> keep_alive_;
  bool writable_ = false;  // the bytes are a private mapping that tensors may write to
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> key_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Builds a GGUF v3 file in memory and writes it at once. Metadata and tensors keep the order in
// which they were added. Tensor data is padded to `alignment`.
class GgufWriter {
 public:
  // `alignment` must be a power of two; other than 32 it is written as "general.alignment".
  explicit GgufWriter(uint32_t alignment = 32);

  // Adds a key. A duplicate or empty key, or "general.alignment" (set by the constructor), throws
  // Error(Parse); an array whose items do not all have its element type throws Error(DType).
  void set(std::string key, GgufValue value);
  // A plain tensor (any layout; written row-major): F32, F16, BF16, F64 and I64. GGUF has no
  // unsigned tensor types, so U8 and U32 throw Error(DType). Dims must be > 0, rank <= 4.
  void add_tensor(std::string name, const Tensor& t);
  // Raw bytes of any GGML type with the row-major `shape` (rank <= 4, dims > 0); the innermost
  // dim must be a multiple of the type's block and `bytes` exactly the tensor's size (else
  // Error(Shape)). A duplicate tensor name throws Error(Parse).
  void add_raw_tensor(std::string name, QuantType type, const Shape& shape,
                      std::span<const std::byte> bytes);

  // The whole file.
  std::vector<std::byte> to_bytes() const;
  // Writes to a temporary file beside `path`, then renames it over `path`: a reader never sees a
  // half-written file, and a failed or killed write leaves nothing behind. A symlink at `path` is
  // followed (its target is replaced); an existing file keeps its permission bits. Throws
  // Error(Io) naming `path` on failure.
  void write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    QuantType type;
    std::vector<int64_t> ne;
    std::vector<std::byte> bytes;
  };
  template <typename Sink>
  void emit(Sink& sink) const;

  uint32_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> keys_;
  std::vector<PendingTensor> tensors_;
  std::map<std::string, size_t, std::less<>> names_;
};

}  // namespace wick
