// GGUF reader: maps the file, parses and validates the header, metadata and tensor infos.
// Every read goes through Cursor, which checks the bytes left first; every count is bounded by the
// bytes left before anything is allocated from it.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "io/file.h"
#include "io/gguf_format.h"

namespace wick {

namespace {

// Bounds-checked little-endian reads; errors name the file and the field being read.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return bytes_.size() - pos_; }

  template <typename... Parts>
  [[noreturn]] void error(Parts&&... parts) const {
    fail(ErrorKind::Parse, "gguf", file_, ": ", std::forward<Parts>(parts)...);
  }

  void need(uint64_t n, std::string_view what) const {
    if (n > left())
      error("truncated: ", what, " needs ", n, " bytes at offset ", pos_, " but the file has ",
            left(), " left (file size ", bytes_.size(), ")");
  }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > left())
      error("truncated: ", what, " has length ", len, " at offset ", pos_ - 8, " but the file has ",
            left(), " bytes left");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& file_;
  uint64_t pos_ = 0;
};

bool add_overflows(uint64_t a, uint64_t b, uint64_t& out) {
  return __builtin_add_overflow(a, b, &out);
}

}  // namespace

class GgufParser {
 public:
  GgufParser(GgufFile& f, std::span<const std::byte> bytes) : f_(f), c_(bytes, f.name_) {}

  void run() {
    read_header();
    for (uint64_t i = 0; i < kv_count_; i++) read_kv(i);
    read_alignment();
    f_.tensors_.reserve(static_cast<size_t>(tensor_count_));
    for (uint64_t i = 0; i < tensor_count_; i++) read_tensor_info(i);
    place_tensor_data();
  }

 private:
  void read_header() {
    if (c_.left() < 4)
      c_.error("truncated: the file has ", c_.left(), " bytes, too short for the GGUF magic");
    const auto magic = c_.read<std::array<char, 4>>("magic");
    if (std::memcmp(magic.data(), gguf::kMagic, 4) != 0) {
      const uint32_t m = std::bit_cast<uint32_t>(magic);
      c_.error("bad magic 0x", std::hex, m, std::dec, " (expected \"GGUF\"): not a GGUF file");
    }
    const uint32_t version = c_.read<uint32_t>("version");
    // A big-endian file stores the version byte-swapped: a small number in the high bytes.
    if ((version & 0xffffu) == 0 && version != 0)
      c_.error("version field reads 0x", std::hex, version, std::dec,
               ": the file is big-endian, only little-endian GGUF files are supported");
    if (version == 1)
      c_.error("GGUF version 1 (32-bit counts) is not supported; convert the file to version 3");
    if (version != 2 && version != 3)
      c_.error("unsupported GGUF version ", version, " (supported: 2 and 3)");
    f_.version_ = version;
    tensor_count_ = c_.read<uint64_t>("tensor count");
    kv_count_ = c_.read<uint64_t>("metadata count");
    // Each entry takes some bytes: counts the rest of the file cannot hold are refused up front.
    if (kv_count_ > c_.left() / gguf::kMinKvBytes)
      c_.error("metadata count ", kv_count_, " is absurd: ", c_.left(),
               " bytes left cannot hold that many key/values");
    if (tensor_count_ > c_.left() / gguf::kMinTensorInfoBytes)
      c_.error("tensor count ", tensor_count_, " is absurd: ", c_.left(),
               " bytes left cannot hold that many tensor infos");
    if (kv_count_ * gguf::kMinKvBytes + tensor_count_ * gguf::kMinTensorInfoBytes > c_.left())
      c_.error("metadata count ", kv_count_, " and tensor count ", tensor_count_,
               " do not fit in the ", c_.left(), " bytes left");
  }

  GgufValueType read_type(std::string_view what, const std::string& ctx) {
    const uint32_t id = c_.read<uint32_t>(what);
    if (!gguf::valid_value_type(id)) c_.error(ctx, ": unknown value type id ", id);
    return static_cast<GgufValueType>(id);
  }

  void read_kv(uint64_t i) {
    const std::string index = detail::concat("metadata key #", i);
    std::string key = c_.read_string(index);
    const std::string ctx = detail::concat(index, " '", io::excerpt(key), "'");
    if (key.empty()) c_.error(index, ": empty key");
    if (f_.key_index_.count(key)) c_.error(ctx, ": duplicate key");
    const GgufValueType type = read_type("value type", ctx);
    GgufValue v = read_value(type, 0, ctx);
    f_.key_index_.emplace(key, f_.metadata_.size());
    f_.metadata_.emplace_back(std::move(key), std::move(v));
  }

  GgufValue read_value(GgufValueType type, int depth, const std::string& ctx) {
    switch (type) {
      case GgufValueType::U8:
        return c_.read<uint8_t>(ctx);
      case GgufValueType::I8:
        return c_.read<int8_t>(ctx);
      case GgufValueType::U16:
        return c_.read<uint16_t>(ctx);
      case GgufValueType::I16:
        return c_.read<int16_t>(ctx);
      case GgufValueType::U32:
        return c_.read<uint32_t>(ctx);
      case GgufValueType::I32:
        return c_.read<int32_t>(ctx);
      case GgufValueType::F32:
        return c_.read<float>(ctx);
      case GgufValueType::U64:
        return c_.read<uint64_t>(ctx);
      case GgufValueType::I64:
        return c_.read<int64_t>(ctx);
      case GgufValueType::F64:
        return c_.read<double>(ctx);
      case GgufValueType::Bool: {
        const uint8_t b = c_.read<uint8_t>(ctx);
        if (b > 1) c_.error(ctx, ": bool value ", static_cast<int>(b), " is neither 0 nor 1");
        return b == 1;
      }
      case GgufValueType::String:
        return c_.read_string(ctx);
      case GgufValueType::Array:
        return read_array(depth, ctx);
    }
    c_.error(ctx, ": unknown value type id ", static_cast<uint32_t>(type));
  }

  GgufValue read_array(int depth, const std::string& ctx) {
    if (depth >= gguf::kMaxArrayDepth)
      c_.error(ctx, ": arrays nested deeper than ", gguf::kMaxArrayDepth, " levels");
    GgufArray a;
    a.type = read_type("array element type", ctx);
    const uint64_t count = c_.read<uint64_t>(ctx);
    const uint64_t min_size = gguf::min_encoded_size(a.type);
    if (count > c_.left() / min_size)
      c_.error(ctx, ": array length ", count, " of ", gguf_value_type_name(a.type),
               " is absurd: only ", c_.left(), " bytes left");
    a.items.reserve(static_cast<size_t>(count));
    for (uint64_t j = 0; j < count; j++) a.items.push_back(read_value(a.type, depth + 1, ctx));
    return GgufValue(std::move(a));
  }

  void read_alignment() {
    const GgufValue* v = f_.find(gguf::kAlignmentKey);
    if (!v) return;
    if (!v->is<uint32_t>()) c_.error("general.alignment must be a u32, got ", v->str(2));
    const uint32_t a = v->as<uint32_t>();
    if (!gguf::is_power_of_two(a)) c_.error("general.alignment ", a, " is not a power of two");
    f_.alignment_ = a;
  }

  void read_tensor_info(uint64_t i) {
    const std::string index = detail::concat("tensor #", i);
    GgufTensorInfo t;
    t.name = c_.read_string(detail::concat(index, " name"));
    const std::string ctx = detail::concat(index, " '", io::excerpt(t.name), "'");
    if (f_.tensor_index_.count(t.name)) c_.error(ctx, ": duplicate tensor name");
    const uint32_t n_dims = c_.read<uint32_t>(ctx);
    if (n_dims > gguf::kMaxDims)
      c_.error(ctx, ": ", n_dims, " dims (GGUF allows at most ", gguf::kMaxDims, ")");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
      const uint64_t ne = c_.read<uint64_t>(ctx);
      if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        c_.error(ctx, ": dim ne[", d, "] = ", ne, " (must be in 1..2^63-1)");
      if (__builtin_mul_overflow(numel, ne, &numel) ||
          numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        c_.error(ctx, ": element count overflows at ne[", d, "] = ", ne);
      t.ne.push_back(static_cast<int64_t>(ne));
    }
    t.numel = static_cast<int64_t>(numel);
    t.shape = Shape(std::vector<int64_t>(t.ne.rbegin(), t.ne.rend()));
    const uint32_t type_id = c_.read<uint32_t>(ctx);
    t.type = static_cast<QuantType>(type_id);
    // A type this build does not know (a newer ggml format) leaves the file readable: its size is
    // unknown (nbytes 0, only its offset is checked), and reading it names the type id
    // (GgufFile::tensor; QTensor for its blocks).
    if (const QuantTypeInfo* info = quant_type_info(type_id)) {
      const int64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
      if (ne0 % info->block_elems != 0)
        c_.error(ctx, ": innermost dim ne[0] = ", ne0, " is not a multiple of the ", info->name,
                 " block of ", info->block_elems, " elements");
      const uint64_t blocks = numel / static_cast<uint64_t>(info->block_elems);
      if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(info->block_bytes), &t.nbytes))
        c_.error(ctx, ": byte size overflows (", numel, " elements of ", info->name, ")");
    }
    t.offset = c_.read<uint64_t>(ctx);
    f_.tensor_index_.emplace(t.name, f_.tensors_.size());
    f_.tensors_.push_back(std::move(t));
  }

  // Checks each tensor's data range (aligned, inside the file, disjoint) and points at it.
  void place_tensor_data() {
    const uint64_t align = f_.alignment_;
    const uint64_t end = c_.pos() + c_.left();
    uint64_t start;
    if (add_overflows(c_.pos(), align - 1, start)) c_.error("data section offset overflows");
    start -= start % align;
    f_.data_offset_ = start;
    if (f_.tensors_.empty()) return;
    if (start > end)
      c_.error("truncated: the data section starts at ", start, " (aligned to ", align,
               ") but the file ends at ", end);
    const uint64_t room = end - start;
    for (const GgufTensorInfo& t : f_.tensors_) {
      if (t.offset % align != 0)
        c_.error("tensor '", io::excerpt(t.name), "': offset ", t.offset,
                 " is not a multiple of the alignment ", align);
      if (t.offset > room || t.nbytes > room - t.offset)
        c_.error("tensor '", io::excerpt(t.name), "': data [", t.offset, ", ", t.offset, " + ",
                 t.nbytes, ") lies outside the ", room, "-byte data section (file size ", end, ")");
    }
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(f_.tensors_.size());
    for (const GgufTensorInfo& t : f_.tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); i++) {
      const GgufTensorInfo& a = *by_offset[i - 1];
      const GgufTensorInfo& b = *by_offset[i];
      if (a.offset + a.nbytes > b.offset)
        c_.error("tensors '", io::excerpt(a.name), "' [", a.offset, ", ", a.offset + a.nbytes,
                 ") and '", io::excerpt(b.name), "' [", b.offset, ", ", b.offset + b.nbytes,
                 ") overlap");
    }
    for (GgufTensorInfo& t : f_.tensors_) t.data = base_ + start + t.offset;
  }

 public:
  const std::byte* base_ = nullptr;

 private:
  GgufFile& f_;
  Cursor c_;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
};

GgufFile GgufFile::parse(std::span<const std::byte> bytes, std::shared_ptr<const void> keep_alive,
                         std::string name) {
  GgufFile f;
  f.name_ = std::move(name);
  f.keep_alive_ = std::move(keep_alive);
  f.size_ = bytes.size();
  GgufParser p(f, bytes);
  p.base_ = bytes.data();
  p.run();
  return f;
}

GgufFile GgufFile::assemble(std::string name,
                            std::vector<std::pair<std::string, GgufValue>> metadata,
                            std::vector<GgufTensorInfo> tensors,
                            std::shared_ptr<const void> keep_alive) {
  GgufFile f;
  f.name_ = std::move(name);
  f.keep_alive_ = std::move(keep_alive);
  f.writable_ = true;
  for (auto& [key, value] : metadata) {
    if (!f.key_index_.emplace(key, f.metadata_.size()).second)
      fail(ErrorKind::Parse, "gguf", f.name_, ": duplicate key '", io::excerpt(key), "'");
    f.metadata_.emplace_back(std::move(key), std::move(value));
  }
  for (GgufTensorInfo& t : tensors) {
    const QuantTypeInfo* info = quant_type_info(t.type);
    const int64_t inner = t.shape.rank() == 0 ? 1 : t.shape[t.shape.rank() - 1];
    if (!info || !t.data || inner % info->block_elems != 0)
      fail(ErrorKind::Parse, "gguf", f.name_, ": tensor '", io::excerpt(t.name), "' of shape ",
           t.shape, (t.data ? " is not whole blocks of its type" : " has no data"));
    t.ne.assign(t.shape.dims().rbegin(), t.shape.dims().rend());
    t.numel = t.shape.numel();
    t.nbytes = static_cast<uint64_t>(t.numel / info->block_elems * info->block_bytes);
    t.offset = 0;
    if (!f.tensor_index_.emplace(t.name, f.tensors_.size()).second)
      fail(ErrorKind::Parse, "gguf", f.name_, ": duplicate tensor '", io::excerpt(t.name), "'");
    f.tensors_.push_back(std::move(t));
  }
  return f;
}

GgufFile GgufFile::open(const std::string& path) {
  std::shared_ptr<const io::FileMapping> mapping = io::map_regular_file(path, "gguf");
  const std::span<const std::byte> bytes(mapping->data(), mapping->size());
  GgufFile f = parse(bytes, std::move(mapping), path);
  f.writable_ = true;
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufValue& GgufFile::value(std::string_view key) const {
  if (const GgufValue* v = find(key)) return *v;
  fail(ErrorKind::Parse, "gguf", name_, ": missing key '", io::excerpt(key), "'");
}

void GgufFile::key_type_mismatch(std::string_view key, const GgufValue& v, GgufValueType wanted,
                                 bool array) const {
  fail(ErrorKind::Parse, "gguf", name_, ": key '", io::excerpt(key), "' is ", v.str(2),
       ", expected ", array ? "an array of " : "", gguf_value_type_name(wanted));
}

int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue& v = value(key);
  try {
    return v.to_int();
  } catch (const Error& e) {
    fail(ErrorKind::Parse, "gguf", name_, ": key '", io::excerpt(key), "': ", e.what());
  }
}

double GgufFile::get_float(std::string_view key) const {
  const GgufValue& v = value(key);
  if (v.is<float>() || v.is<double>()) return v.to_float();
  fail(ErrorKind::Parse, "gguf", name_, ": key '", io::excerpt(key), "' is ", v.str(2),
       ", expected f32 or f64");
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufFile::tensor_info(std::string_view name) const {
  if (const GgufTensorInfo* t = find_tensor(name)) return *t;
  fail(ErrorKind::Parse, "gguf", name_, ": no tensor named '", io::excerpt(name), "'");
}

}  // namespace wick
