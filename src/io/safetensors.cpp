// safetensors reading (mmap, validated header, zero-copy CPU tensors) and atomic writing.
#include "wick/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "backend/backend.h"
#include "cpu/cpu_device.h"
#include "io/file.h"
#include "io/safetensors_detail.h"

namespace wick {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian data; wick reads it in place");

namespace {

constexpr const char* kLoad = "load_safetensors";
constexpr const char* kSave = "save_safetensors";
// The reference implementation refuses larger headers; so does wick (a bound on parse memory).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr const char* kMetadataKey = "__metadata__";
// A header is 3 levels deep ({name: {"shape": [...]}}); deeper nesting is refused before the DOM
// is built (which bounds nlohmann's recursion in dump()).
constexpr size_t kMaxHeaderDepth = 8;

// Element sizes of the format's dtypes, so offsets are checked even for tensors wick cannot load.
struct FileDType {
  const char* name;
  size_t bytes;
  bool in_wick;
  DType dtype;
};
constexpr FileDType kFileDTypes[] = {
    {"F32", 4, true, DType::F32},     {"F16", 2, true, DType::F16},
    {"BF16", 2, true, DType::BF16},   {"F64", 8, true, DType::F64},
    {"U8", 1, true, DType::U8},       {"U32", 4, true, DType::U32},
    {"I64", 8, true, DType::I64},     {"BOOL", 1, false, DType::U8},
    {"I8", 1, false, DType::U8},      {"I16", 2, false, DType::U8},
    {"U16", 2, false, DType::U8},     {"I32", 4, true, DType::I32},
    {"U64", 8, false, DType::U8},     {"F8_E4M3", 1, false, DType::U8},
    {"F8_E5M2", 1, false, DType::U8}, {"F8_E8M0", 1, false, DType::U8},
    {"C64", 8, false, DType::U8},
};

const FileDType* find_file_dtype(const std::string& name) {
  for (const FileDType& d : kFileDTypes)
    if (name == d.name) return &d;
  return nullptr;  // e.g. sub-byte F4/F6 types: listed, never loadable
}

std::shared_ptr<io::FileMapping> map_file(const std::string& path) {
  std::shared_ptr<io::FileMapping> m = io::map_regular_file(path, kLoad);
  if (m->size() < 8)
    fail(ErrorKind::Parse, kLoad, path, ": file of ", m->size(),
         " bytes is too short for the 8-byte header length");
  return m;
}

uint64_t read_u64_le(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// A non-negative JSON integer that fits `limit`, or nothing.
bool json_uint(const nlohmann::json& v, uint64_t limit, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return out <= limit;
  }
  return false;  // negative, float, or not a number
}

// A first pass over the header text in linear time, before the DOM is built: finds a name given
// twice in one object (the DOM would keep only the last), nesting deeper than kMaxHeaderDepth and
// a top level that is not an object.
class HeaderScan {
 public:
  using json = nlohmann::json;
  std::string problem;  // why the scan stopped
  std::string tensor;   // the tensor the problem is in, if any

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool string(json::string_t&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool start_object(size_t) {
    if (!enter()) return false;
    // A fresh set per object (reusing one would make clearing it cost its largest size so far).
    open_objects_.emplace_back();
    return true;
  }
  bool key(json::string_t& k) {
    if (depth_ == 1) top_key_ = k;
    if (open_objects_.back().insert(k).second) return true;
    if (depth_ == 1) {
      tensor = k;
      problem = "name appears twice in the header";
    } else if (top_key_ == kMetadataKey) {
      problem = detail::concat(kMetadataKey, ": key '", io::excerpt(k), "' appears twice");
    } else {
      tensor = top_key_;
      problem = detail::concat("key '", io::excerpt(k), "' appears twice");
    }
    return false;
  }
  bool end_object() {
    open_objects_.pop_back();
    depth_--;
    return true;
  }
  bool start_array(size_t) { return value() && enter(); }
  bool end_array() {
    depth_--;
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    problem = detail::concat("bad JSON header: ", io::excerpt(e.what(), 200));
    return false;
  }

 private:
  // Anything but an object at the top level stops the scan.
  bool value() {
    if (depth_ == 0) problem = "header is not a JSON object";
    return depth_ != 0;
  }
  bool enter() {
    if (++depth_ <= kMaxHeaderDepth) return true;
    problem = detail::concat("header nests deeper than ", kMaxHeaderDepth, " levels");
    return false;
  }

  size_t depth_ = 0;
  std::vector<std::unordered_set<std::string>> open_objects_;  // the keys of each
  std::string top_key_;
};

}  // namespace

struct SafetensorsFile::Impl {
  std::string path;
  std::shared_ptr<io::FileMapping> map;
  uint64_t data_start = 0;  // 8 + header length
  std::vector<std::string> names;
  std::unordered_map<std::string, Entry> entries;
  std::map<std::string, std::string> metadata;

  [[noreturn]] void parse_error(const std::string& tensor, const std::string& what) const {
    if (tensor.empty()) fail(ErrorKind::Parse, kLoad, path, ": ", what);
    fail(ErrorKind::Parse, kLoad, path, ": tensor '", io::excerpt(tensor), "': ", what);
  }

  void parse_header();
  void parse_metadata(const nlohmann::json& v);
  Entry parse_entry(const std::string& name, const nlohmann::json& v, uint64_t data_len) const;
  // (entry, name) pairs pointing into `entries`.
  using DataOrder = std::vector<std::pair<const Entry*, const std::string*>>;
  void check_overlaps(const DataOrder& order) const;
};

void SafetensorsFile::Impl::parse_header() {
  const uint64_t header_len = read_u64_le(map->data());
  const uint64_t file_size = map->size();
  if (header_len > file_size - 8)
    parse_error("", detail::concat("header length ", header_len, " runs past the end of the file (",
                                   file_size, " bytes)"));
  if (header_len > kMaxHeaderBytes)
    parse_error("", detail::concat("header length ", header_len, " exceeds the limit of ",
                                   kMaxHeaderBytes, " bytes"));
  data_start = 8 + header_len;
  const uint64_t data_len = file_size - data_start;

  const char* text = reinterpret_cast<const char*>(map->data() + 8);
  HeaderScan scan;
  if (!nlohmann::json::sax_parse(text, text + header_len, &scan))
    parse_error(scan.tensor, scan.problem);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + header_len);
  } catch (const nlohmann::json::exception& e) {
    parse_error("", detail::concat("bad JSON header: ", io::excerpt(e.what(), 200)));
  }

  // The tensors in data order, sorted without hash lookups (entries' nodes do not move).
  DataOrder order;
  order.reserve(header.size());
  entries.reserve(header.size());
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      parse_metadata(value);
      continue;
    }
    const auto it = entries.emplace(name, parse_entry(name, value, data_len)).first;
    order.emplace_back(&it->second, &it->first);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first->begin != b.first->begin ? a.first->begin < b.first->begin
                                            : *a.second < *b.second;
  });
  check_overlaps(order);
  names.reserve(order.size());
  for (const auto& [entry, name] : order) names.push_back(*name);
}

void SafetensorsFile::Impl::parse_metadata(const nlohmann::json& v) {
  if (!v.is_object()) parse_error("", "__metadata__ is not an object");
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      parse_error("",
                  detail::concat("__metadata__ value of '", io::excerpt(key), "' is not a string"));
    metadata.emplace(key, value.get<std::string>());
  }
}

SafetensorsFile::Entry SafetensorsFile::Impl::parse_entry(const std::string& name,
                                                          const nlohmann::json& v,
                                                          uint64_t data_len) const {
  if (!v.is_object()) parse_error(name, "entry is not an object");
  Entry e;
  const auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string()) parse_error(name, "missing or non-string \"dtype\"");
  e.dtype = dtype->get<std::string>();

  const auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array()) parse_error(name, "missing or non-array \"shape\"");
  std::vector<int64_t> dims;
  uint64_t numel = 1;
  for (const auto& d : *shape) {
    uint64_t n;
    if (!json_uint(d, static_cast<uint64_t>(INT64_MAX), n))
      parse_error(name,
                  detail::concat("bad dim ", io::excerpt(d.dump()), " in shape ",
                                 io::excerpt(shape->dump()), " (dims are integers in [0, 2^63))"));
    if (__builtin_mul_overflow(numel, n, &numel) || numel > static_cast<uint64_t>(INT64_MAX))
      parse_error(name,
                  detail::concat("shape ", io::excerpt(shape->dump()), " has too many elements"));
    dims.push_back(static_cast<int64_t>(n));
  }
  e.shape = Shape(std::move(dims));

  const auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2 ||
      !json_uint((*offsets)[0], UINT64_MAX, e.begin) ||
      !json_uint((*offsets)[1], UINT64_MAX, e.end))
    parse_error(name, "\"data_offsets\" must be two non-negative integers [begin, end]");
  if (e.begin > e.end)
    parse_error(name,
                detail::concat("data_offsets [", e.begin, ", ", e.end, "] end before they begin"));
  if (e.end > data_len)
    parse_error(name, detail::concat("data_offsets [", e.begin, ", ", e.end,
                                     "] run past the data section of ", data_len, " bytes"));
  if (const FileDType* fd = find_file_dtype(e.dtype)) {
    uint64_t nbytes;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(fd->bytes), &nbytes) ||
        nbytes != e.end - e.begin)
      parse_error(name, detail::concat("data_offsets [", e.begin, ", ", e.end, "] hold ",
                                       e.end - e.begin, " bytes but shape ", e.shape, " of ",
                                       io::excerpt(e.dtype), " needs ", numel, " x ", fd->bytes));
  }
  return e;
}

void SafetensorsFile::Impl::check_overlaps(const DataOrder& order) const {
  // In data order a tensor overlaps an earlier one iff it starts before the furthest end seen so
  // far (empty tensors occupy nothing).
  const DataOrder::value_type* furthest = nullptr;
  for (const auto& tensor : order) {
    const Entry& e = *tensor.first;
    if (e.begin == e.end) continue;
    if (furthest && e.begin < furthest->first->end)
      parse_error(*tensor.second,
                  detail::concat("bytes [", e.begin, ", ", e.end, ") overlap tensor '",
                                 io::excerpt(*furthest->second), "'"));
    if (!furthest || e.end > furthest->first->end) furthest = &tensor;
  }
}

SafetensorsFile::SafetensorsFile(const std::string& path) {
  auto impl = std::make_shared<Impl>();
  impl->path = path;
  impl->map = map_file(path);
  impl->parse_header();
  impl_ = std::move(impl);
}

const std::string& SafetensorsFile::path() const {
  return impl_->path;
}
const std::vector<std::string>& SafetensorsFile::names() const {
  return impl_->names;
}
bool SafetensorsFile::contains(const std::string& name) const {
  return impl_->entries.count(name) != 0;
}
const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return impl_->metadata;
}
const std::byte* SafetensorsFile::mapped_data() const {
  return impl_->map->data();
}
size_t SafetensorsFile::mapped_size() const {
  return impl_->map->size();
}

const SafetensorsFile::Entry& SafetensorsFile::entry(const std::string& name) const {
  const auto it = impl_->entries.find(name);
  if (it == impl_->entries.end())
    fail(ErrorKind::OutOfRange, kLoad, impl_->path, ": no tensor named '", io::excerpt(name), "'");
  return it->second;
}

namespace {
DType wick_dtype_of(const std::string& path, const std::string& name,
                    const SafetensorsFile::Entry& e) {
  const FileDType* fd = find_file_dtype(e.dtype);
  if (!fd || !fd->in_wick)
    fail(ErrorKind::Unsupported, kLoad, path, ": tensor '", io::excerpt(name), "' has dtype ",
         io::excerpt(e.dtype), ", which wick does not support (F32 F16 BF16 F64 U8 U32 I64)");
  return fd->dtype;
}
}  // namespace

Tensor SafetensorsFile::tensor(const std::string& name, const Device& dev) const {
  const Entry& e = entry(name);
  const DType dt = wick_dtype_of(impl_->path, name, e);
  const size_t numel = static_cast<size_t>(e.shape.numel());
  std::byte* bytes = impl_->map->data() + impl_->data_start + e.begin;
  const bool aligned = reinterpret_cast<uintptr_t>(bytes) % dtype_size(dt) == 0;

  backend::StoragePtr storage;
  if (dev.is_cpu() && aligned) {
    auto* cpu = dynamic_cast<cpu::CpuDevice*>(&dev.backend());
    WICK_ASSERT(cpu != nullptr);
    storage = cpu->wrap(dt, numel, impl_->map, bytes);
  } else if (aligned) {
    storage = dev.backend().from_host(dt, bytes, numel);
  } else {
    // Backends may read host data as typed elements: hand them an aligned copy.
    std::vector<uint64_t> copy((e.end - e.begin + 7) / 8 + 1);
    std::memcpy(copy.data(), bytes, e.end - e.begin);
    storage = dev.backend().from_host(dt, copy.data(), numel);
  }
  return Tensor(std::move(storage), Layout::contiguous(e.shape), dt, dev);
}

std::map<std::string, Tensor> load_safetensors(const std::string& path, const Device& dev) {
  const SafetensorsFile file(path);
  // Refuse before uploading anything.
  for (const std::string& name : file.names()) wick_dtype_of(path, name, file.entry(name));
  std::map<std::string, Tensor> out;
  for (const std::string& name : file.names()) out.emplace(name, file.tensor(name, dev));
  return out;
}

const char* safetensors_dtype_name(DType dt) {
  for (const FileDType& d : kFileDTypes)
    if (d.in_wick && d.dtype == dt) return d.name;
  fail(ErrorKind::Internal, "safetensors_dtype_name", "no name for dtype ", dt);
}

// ---- writing ----------------------------------------------------------------------------------

size_t& io::safetensors_write_chunk_bytes() {
  static size_t bytes = 64u << 20;
  return bytes;
}

namespace {

// Writes t's elements in row-major order. Contiguous CPU tensors go straight from memory;
// others are read back in slices of dim 0 so a huge strided tensor needs no full host copy.
void write_tensor_bytes(io::AtomicFileWriter& out, const Tensor& t) {
  const size_t esize = dtype_size(t.dtype());
  const size_t nbytes = static_cast<size_t>(t.numel()) * esize;
  if (nbytes == 0) return;
  if (t.device().is_cpu() && t.is_contiguous()) {
    const auto& s = cpu::cpu_storage(*t.storage());
    out.write(s.data() + static_cast<size_t>(t.layout().start_offset) * esize, nbytes);
    return;
  }
  const size_t rows = t.rank() == 0 ? 1 : static_cast<size_t>(t.dim(0));
  const size_t row_bytes = nbytes / rows;
  const size_t rows_per_chunk =
      std::min(rows, std::max<size_t>(1, io::safetensors_write_chunk_bytes() / row_bytes));
  std::vector<uint64_t> buf((rows_per_chunk * row_bytes + 7) / 8);
  for (size_t r = 0; r < rows; r += rows_per_chunk) {
    const size_t n = std::min(rows_per_chunk, rows - r);
    const Tensor part =
        t.rank() == 0 ? t : t.narrow(0, static_cast<int64_t>(r), static_cast<int64_t>(n));
    part.read_into(buf.data(), t.dtype());
    out.write(buf.data(), n * row_bytes);
  }
}

}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Largest elements first keeps every tensor aligned for its type (the header is padded to 8).
  std::vector<std::pair<const std::string*, const Tensor*>> order;
  for (const auto& [name, t] : tensors) {
    if (name == kMetadataKey)
      fail(ErrorKind::Parse, kSave, path, ": tensor name '", name, "' is reserved for metadata");
    if (!t.defined())
      fail(ErrorKind::Shape, kSave, path, ": tensor '", io::excerpt(name), "' is undefined");
    order.emplace_back(&name, &t);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second->dtype()) > dtype_size(b.second->dtype());
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& m = header[kMetadataKey] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : order) {
    const uint64_t nbytes = static_cast<uint64_t>(t->numel()) * dtype_size(t->dtype());
    header[*name] = {{"dtype", safetensors_dtype_name(t->dtype())},
                     {"shape", t->dims()},
                     {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::Parse, kSave, path, ": a tensor name or metadata string is not valid UTF-8 (",
         io::excerpt(e.what(), 200), ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  io::AtomicFileWriter out(path, kSave);
  const uint64_t header_len = text.size();
  out.write(&header_len, 8);
  out.write(text.data(), text.size());
  for (const auto& [name, t] : order) write_tensor_bytes(out, *t);
  out.commit();
}

}  // namespace wick
