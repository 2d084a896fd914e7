// safetensors: round trips, metadata, zero-copy mapping, copy-on-write, hand-made and malformed
// files.
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cpu/cpu_device.h"
#include "harness.h"
#include "io/safetensors_detail.h"
#include "wick/safetensors.h"

namespace wick::testing {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "wick_st_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; i++) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A file as another writer would produce it: length, header text, data.
std::string st_file(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

// Little-endian bytes of one value of dtype `dt` (encoded by hand, not through wick).
std::string le_bytes(double v, DType dt) {
  uint64_t bits = 0;
  size_t n = dtype_size(dt);
  switch (dt) {
    case DType::F32: {
      const float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      bits = u;
      break;
    }
    case DType::F64:
      std::memcpy(&bits, &v, 8);
      break;
    case DType::F16:
      bits = f16(static_cast<float>(v)).bits;
      break;
    case DType::BF16:
      bits = bf16(static_cast<float>(v)).bits;
      break;
    case DType::U8:
    case DType::U32:
      bits = static_cast<uint64_t>(v);
      break;
    case DType::I64:
    case DType::I32:
      bits = static_cast<uint64_t>(static_cast<int64_t>(v));
      break;
  }
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
  return s;
}

Ref random_values(Rng& rng, const Shape& shape, DType dt) {
  switch (dt) {
    case DType::U8:
      return random_int_ref(rng, shape, 0, 255);
    case DType::U32:
      return random_int_ref(rng, shape, 0, 4000000000ll);
    case DType::I64:
      return random_int_ref(rng, shape, -(1ll << 52), 1ll << 52);
    case DType::I32:
      return random_int_ref(rng, shape, INT32_MIN, INT32_MAX);
    default:
      return random_ref(rng, shape, -100, 100);
  }
}

const std::byte* data_ptr(const Tensor& t) {
  return cpu::cpu_storage(*t.storage()).data() +
         static_cast<size_t>(t.layout().start_offset) * dtype_size(t.dtype());
}

// ---- round trips ------------------------------------------------------------------------------

class Safetensors : public DeviceTest {};

TEST_P(Safetensors, RoundTripEveryDTypeAndLayout) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  TempDir dir;
  std::map<std::string, Tensor> tensors;
  std::map<std::string, Ref> want;
  for (DType dt : kAllDTypes) {
    for (Variant v : kAllVariants) {
      const Shape shape = random_shape(rng, 1, 4, 5);
      const Ref r = round_ref(random_values(rng, shape, dt), dt);
      const std::string name = std::string(dtype_name(dt)) + "/" + variant_name(v);
      tensors[name] = make_tensor(r, dt, dev, v);
      want[name] = r;
    }
    const Ref scalar = round_ref(random_values(rng, Shape{}, dt), dt);
    tensors[std::string(dtype_name(dt)) + "/scalar"] = make_tensor(scalar, dt, dev);
    want[std::string(dtype_name(dt)) + "/scalar"] = scalar;
    tensors[std::string(dtype_name(dt)) + "/empty"] = Tensor::zeros({0, 3}, dt, dev);
    want[std::string(dtype_name(dt)) + "/empty"] = Ref{Shape{0, 3}, {}};
  }
  const std::string path = dir.file("all.safetensors");
  save_safetensors(path, tensors);

  const auto loaded = load_safetensors(path, dev);
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    const Tensor& got = loaded.at(name);
    EXPECT_EQ(got.dtype(), t.dtype());
    EXPECT_EQ(got.device(), dev);
    WICK_EXPECT_CLOSE(got, want.at(name), Tol{0, 0});
  }

  // Layout as the reference writer makes it: header padded to 8, every tensor aligned, no gaps.
  const SafetensorsFile file(path);
  const std::string bytes = read_bytes(path);
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ(header_len % 8, 0u);
  uint64_t total = 0;
  for (const std::string& name : file.names()) {
    const auto& e = file.entry(name);
    EXPECT_EQ(e.begin, total) << name;
    EXPECT_EQ(e.begin % dtype_size(tensors.at(name).dtype()), 0u) << name;
    total = e.end;
  }
  EXPECT_EQ(bytes.size(), 8 + header_len + total);
}

TEST_P(Safetensors, StridedAndBroadcastTensorsWritten) {
  // A strided tensor bigger than one write slice is read back in several slices of dim 0.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  TempDir dir;
  const size_t saved = io::safetensors_write_chunk_bytes();
  io::safetensors_write_chunk_bytes() = 100;  // one 3 x 8 f32 row of dim 0 per slice
  for (Variant v : {Variant::Transposed, Variant::Permuted, Variant::Narrowed}) {
    const Ref r = random_ref(rng, Shape{11, 3, 8});
    save_safetensors(dir.file("s.safetensors"), {{"t", make_tensor(r, DType::F32, dev, v)}});
    WICK_EXPECT_CLOSE(load_safetensors(dir.file("s.safetensors"), dev).at("t"),
                      round_ref(r, DType::F32), Tol{0, 0});
  }
  // Broadcast (stride-0) dims are written out in full.
  const Ref col = random_ref(rng, Shape{5, 1});
  save_safetensors(dir.file("b.safetensors"),
                   {{"t", make_broadcast(col, Shape{5, 4}, DType::F32, dev)}});
  Ref wide{Shape{5, 4}, {}};
  for (int64_t i = 0; i < 20; i++) wide.v.push_back(col.v[static_cast<size_t>(i / 4)]);
  WICK_EXPECT_CLOSE(load_safetensors(dir.file("b.safetensors"), dev).at("t"),
                    round_ref(wide, DType::F32), Tol{0, 0});
  io::safetensors_write_chunk_bytes() = saved;
}

WICK_INSTANTIATE_DEVICES(Safetensors);

TEST(SafetensorsFile, MetadataRoundTrip) {
  TempDir dir;
  Rng rng;
  const std::map<std::string, std::string> meta = {{"format", "pt"},
                                                   {"empty", ""},
                                                   {"unicode ü", "值 \"quoted\" \\ \n"},
                                                   {"seed", std::to_string(rng.seed())}};
  const Tensor t = make_tensor(random_ref(rng, Shape{3}), DType::F32, Device::cpu());
  save_safetensors(dir.file("m.safetensors"), {{"t", t}}, meta);
  EXPECT_EQ(SafetensorsFile(dir.file("m.safetensors")).metadata(), meta);

  save_safetensors(dir.file("n.safetensors"), {{"t", t}});
  EXPECT_TRUE(SafetensorsFile(dir.file("n.safetensors")).metadata().empty());
  EXPECT_EQ(read_bytes(dir.file("n.safetensors")).find("__metadata__"), std::string::npos);
}

// ---- mapping ----------------------------------------------------------------------------------

// The pathname of the mapping of this process that holds address p ("" when none).
std::string mapping_path_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, devno, inode, path;
    in >> range >> perms >> offset >> devno >> inode;
    std::getline(in >> std::ws, path);
    const size_t dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (addr >= lo && addr < hi) return path;
  }
  return "";
}

TEST(SafetensorsFile, CpuTensorsPointIntoTheMapping) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  const std::string path = dir.file("z.safetensors");
  const Ref a = random_ref(rng, Shape{4, 5}), b = random_ref(rng, Shape{7});
  save_safetensors(path, {{"a", make_tensor(a, DType::F32, Device::cpu())},
                          {"b", make_tensor(b, DType::BF16, Device::cpu())}});
  Tensor ta;
  {
    const SafetensorsFile file(path);
    ta = file.tensor("a");
    const Tensor tb = file.tensor("b");
    for (const Tensor& t : {ta, tb}) {
      const std::byte* p = data_ptr(t);
      EXPECT_GE(p, file.mapped_data());
      EXPECT_LE(p + t.numel() * dtype_size(t.dtype()), file.mapped_data() + file.mapped_size());
    }
    EXPECT_EQ(
        data_ptr(ta), file.mapped_data() + 8 + [&] {
          uint64_t n;
          std::memcpy(&n, file.mapped_data(), 8);
          return n;
        }() + file.entry("a").begin);
  }
  // The tensor keeps the mapping alive after the file handle is gone.
  WICK_EXPECT_CLOSE(ta, round_ref(a, DType::F32), Tol{0, 0});

  const auto loaded = load_safetensors(path);
  const std::string mapped = mapping_path_of(data_ptr(loaded.at("a")));
  EXPECT_EQ(fs::path(mapped), fs::canonical(path));
}

TEST(SafetensorsFile, InPlaceWriteLeavesTheFileAlone) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  const std::string path = dir.file("w.safetensors");
  const Ref r = random_ref(rng, Shape{64, 33});
  save_safetensors(path, {{"t", make_tensor(r, DType::F32, Device::cpu())}});
  const std::string before = read_bytes(path);

  const Tensor t = load_safetensors(path).at("t");
  t.const_set(7.0);
  t.narrow(0, 3, 2).slice_set(Tensor::ones({2, 33}, DType::F32), 0, 0);
  Ref want = r;
  for (int64_t i = 0; i < want.numel(); i++) want.v[i] = (i / 33 == 3 || i / 33 == 4) ? 1.0 : 7.0;
  WICK_EXPECT_CLOSE(t, want, Tol{0, 0});

  EXPECT_EQ(read_bytes(path), before);
  WICK_EXPECT_CLOSE(load_safetensors(path).at("t"), round_ref(r, DType::F32), Tol{0, 0});
}

TEST(SafetensorsFile, SaveReplacesAtomically) {
  // The old mapping still sees the old bytes: the new file was written elsewhere and renamed.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  const std::string path = dir.file("r.safetensors");
  const Ref a = random_ref(rng, Shape{16}), b = random_ref(rng, Shape{16});
  save_safetensors(path, {{"t", make_tensor(a, DType::F32, Device::cpu())}});
  const Tensor old = load_safetensors(path).at("t");
  save_safetensors(path, {{"t", make_tensor(b, DType::F32, Device::cpu())}});
  WICK_EXPECT_CLOSE(old, round_ref(a, DType::F32), Tol{0, 0});
  WICK_EXPECT_CLOSE(load_safetensors(path).at("t"), round_ref(b, DType::F32), Tol{0, 0});
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

// ---- files written by hand --------------------------------------------------------------------

struct HandTensor {
  std::string name;
  DType dt;
  Shape shape;
};

// Builds a file the way another library might: tensors packed back to back in the given order
// (so later ones may be misaligned), header padded or not.
std::string hand_file(Rng& rng, const std::vector<HandTensor>& specs, bool pad,
                      std::map<std::string, Ref>& want) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::string data;
  for (const HandTensor& s : specs) {
    const Ref r = round_ref(random_values(rng, s.shape, s.dt), s.dt);
    want[s.name] = r;
    const size_t begin = data.size();
    for (double v : r.v) data += le_bytes(v, s.dt);
    std::string dims;
    for (size_t i = 0; i < s.shape.rank(); i++) {
      if (i) dims += ",";
      dims += std::to_string(s.shape[i]);
    }
    header += ",\"" + s.name + "\":{\"dtype\":\"" + safetensors_dtype_name(s.dt) +
              "\",\"shape\":[" + dims + "],\"data_offsets\":[" + std::to_string(begin) + "," +
              std::to_string(data.size()) + "]}";
  }
  header += "}";
  if (pad) header.append((8 - header.size() % 8) % 8, ' ');
  return st_file(header, data);
}

TEST(SafetensorsFile, HandWrittenFileLoads) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  const std::vector<HandTensor> specs = {
      {"tok", DType::U8, Shape{3}},   {"w", DType::F32, Shape{2, 3}},
      {"b", DType::BF16, Shape{5}},   {"ids", DType::I64, Shape{2, 2}},
      {"h", DType::F16, Shape{3, 1}}, {"d", DType::F64, Shape{4}},
      {"u", DType::U32, Shape{2}},    {"s", DType::F32, Shape{}},
  };
  for (bool pad : {false, true}) {
    SCOPED_TRACE(pad ? "padded header" : "unpadded header");
    std::map<std::string, Ref> want;
    const std::string path = dir.file("hand.safetensors");
    write_bytes(path, hand_file(rng, specs, pad, want));
    const SafetensorsFile file(path);
    EXPECT_EQ(file.metadata().at("format"), "pt");
    ASSERT_EQ(file.names().size(), specs.size());
    for (size_t i = 0; i < specs.size(); i++) EXPECT_EQ(file.names()[i], specs[i].name);
    for (const HandTensor& s : specs) {
      SCOPED_TRACE(s.name);
      const Tensor t = file.tensor(s.name);
      EXPECT_EQ(t.dtype(), s.dt);
      // Misaligned tensors are copied; every tensor wick hands out is aligned for its type.
      EXPECT_EQ(reinterpret_cast<uintptr_t>(data_ptr(t)) % dtype_size(s.dt), 0u);
      WICK_EXPECT_CLOSE(t, want.at(s.name), Tol{0, 0});
    }
  }
}

TEST(SafetensorsFile, UnsupportedDTypesAreListedButNotLoaded) {
  TempDir dir;
  const std::string path = dir.file("u.safetensors");
  const std::string header = R"({"ok":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("flag":{"dtype":"BOOL","shape":[2],"data_offsets":[8,10]},)"
                             R"("q":{"dtype":"I8","shape":[2],"data_offsets":[10,12]},)"
                             R"("s":{"dtype":"I16","shape":[1],"data_offsets":[12,14]},)"
                             R"("f8":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[14,16]},)"
                             R"("f4":{"dtype":"F4","shape":[4],"data_offsets":[16,18]}})";
  write_bytes(path, st_file(header, le_bytes(1.5, DType::F32) + le_bytes(-2, DType::F32) +
                                        std::string(10, '\1')));
  const SafetensorsFile file(path);
  EXPECT_EQ(file.names().size(), 6u);
  EXPECT_EQ(file.tensor("ok").to_vec<float>(), (std::vector<float>{1.5f, -2.0f}));
  for (const char* name : {"flag", "q", "s", "f8", "f4"})
    expect_error([&] { file.tensor(name); }, ErrorKind::Unsupported,
                 {path, name, file.entry(name).dtype});
  expect_error([&] { load_safetensors(path); }, ErrorKind::Unsupported, {path, "flag", "BOOL"});
  expect_error([&] { file.tensor("nope"); }, ErrorKind::OutOfRange, {path, "nope"});
}

// ---- malformed files --------------------------------------------------------------------------

struct Malformed {
  const char* what;
  std::string bytes;
  ErrorKind kind;
  std::vector<std::string> needles;  // besides the path
};

std::string one_tensor(const std::string& entry, size_t data_bytes) {
  return st_file("{\"t\":" + entry + "}", std::string(data_bytes, '\0'));
}

std::vector<Malformed> malformed_cases() {
  const std::string f32_2 = R"("dtype":"F32","shape":[2])";
  return {
      {"empty file", "", ErrorKind::Parse, {"too short"}},
      {"5 bytes", "abcde", ErrorKind::Parse, {"too short"}},
      {"header only length", u64_le(0), ErrorKind::Parse, {"JSON"}},
      {"header past the end", u64_le(1000) + "{}", ErrorKind::Parse, {"1000", "past the end"}},
      {"header length 2^64-1", u64_le(~0ull) + "{}", ErrorKind::Parse, {"past the end"}},
      {"header length 2^63", u64_le(1ull << 63) + "{}", ErrorKind::Parse, {"past the end"}},
      {"truncated JSON", st_file(R"({"t":{"dtype":"F32")", ""), ErrorKind::Parse, {"JSON"}},
      {"trailing garbage", st_file("{} x", ""), ErrorKind::Parse, {"JSON"}},
      {"bad UTF-8", st_file("{\"\xff\":1}", ""), ErrorKind::Parse, {"JSON"}},
      {"not an object", st_file("[1,2]", ""), ErrorKind::Parse, {"not a JSON object"}},
      {"entry not an object",
       st_file(R"({"t":3})", ""),
       ErrorKind::Parse,
       {"'t'", "not an object"}},
      {"no dtype",
       one_tensor(R"({"shape":[2],"data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "dtype"}},
      {"dtype not a string",
       one_tensor(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "dtype"}},
      {"no shape",
       one_tensor(R"({"dtype":"F32","data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "shape"}},
      {"shape not an array",
       one_tensor(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "shape"}},
      {"negative dim",
       one_tensor(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "-2"}},
      {"float dim",
       one_tensor(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "dim"}},
      {"dim 2^63",
       one_tensor(R"({"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "dim"}},
      {"dim product overflows",
       one_tensor(R"({"dtype":"U8","shape":[4294967296,4294967296,16],"data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "too many elements"}},
      {"byte size overflows",
       one_tensor(R"({"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]})", 8),
       ErrorKind::Parse,
       {"'t'", "needs"}},
      {"no offsets", one_tensor("{" + f32_2 + "}", 8), ErrorKind::Parse, {"'t'", "data_offsets"}},
      {"one offset",
       one_tensor("{" + f32_2 + R"(,"data_offsets":[0]})", 8),
       ErrorKind::Parse,
       {"'t'", "data_offsets"}},
      {"negative offset",
       one_tensor("{" + f32_2 + R"(,"data_offsets":[-8,0]})", 8),
       ErrorKind::Parse,
       {"'t'", "data_offsets"}},
      {"end before begin",
       one_tensor("{" + f32_2 + R"(,"data_offsets":[8,0]})", 8),
       ErrorKind::Parse,
       {"'t'", "end before"}},
      {"offsets past the data",
       one_tensor("{" + f32_2 + R"(,"data_offsets":[0,8]})", 7),
       ErrorKind::Parse,
       {"'t'", "past the data section of 7 bytes"}},
      {"huge offsets",
       one_tensor("{" + f32_2 + R"(,"data_offsets":[18446744073709551608,18446744073709551615]})",
                  8),
       ErrorKind::Parse,
       {"'t'", "past the data"}},
      {"size mismatch",
       one_tensor("{" + f32_2 + R"(,"data_offsets":[0,4]})", 8),
       ErrorKind::Parse,
       {"'t'", "4 bytes", "[2]"}},
      {"overlap",
       st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               std::string(12, '\0')),
       ErrorKind::Parse,
       {"'b'", "overlap", "'a'"}},
      {"nested overlap",
       st_file(R"({"a":{"dtype":"U8","shape":[10],"data_offsets":[0,10]},)"
               R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
               R"("c":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})",
               std::string(10, '\0')),
       ErrorKind::Parse,
       {"'b'", "overlap", "'a'"}},
      {"duplicate name",
       st_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
               R"("t":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
               std::string(2, '\0')),
       ErrorKind::Parse,
       {"'t'", "twice"}},
      {"metadata not an object",
       st_file(R"({"__metadata__":[1]})", ""),
       ErrorKind::Parse,
       {"__metadata__"}},
      {"metadata value not a string",
       st_file(R"({"__metadata__":{"k":1}})", ""),
       ErrorKind::Parse,
       {"__metadata__", "'k'"}},
  };
}

TEST(SafetensorsFile, MalformedFilesAreRefused) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  for (const Malformed& m : malformed_cases()) {
    SCOPED_TRACE(m.what);
    write_bytes(path, m.bytes);
    std::vector<std::string> needles = m.needles;
    needles.push_back(path);
    expect_error([&] { load_safetensors(path); }, m.kind, needles);
    expect_error([&] { SafetensorsFile f(path); }, m.kind, needles);
  }
}

TEST(SafetensorsFile, RandomCorruptionIsRefusedOrLoadsCleanly) {
  // Flipped bytes and truncations anywhere: each file loads (and reads back) or throws
  // wick::Error; under ASan any out-of-bounds read fails the run.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  const std::string good = dir.file("good.safetensors");
  save_safetensors(
      good,
      {{"a", make_tensor(random_ref(rng, Shape{3, 4}), DType::F32, Device::cpu())},
       {"b", make_tensor(random_ref(rng, Shape{5}), DType::BF16, Device::cpu())},
       {"c", make_tensor(random_int_ref(rng, Shape{2}, 0, 9), DType::I64, Device::cpu())}},
      {{"k", "v"}});
  const std::string original = read_bytes(good);
  int refused = 0;
  for (int i = 0; i < 200; i++) {
    std::string bytes = original;
    if (i % 4 == 0) {
      bytes.resize(static_cast<size_t>(rng.integer(0, static_cast<int64_t>(bytes.size()) - 1)));
    } else {
      for (int64_t k = rng.integer(1, 4); k > 0; k--) {
        // Mostly the length and the header, where the structure is.
        const int64_t end = rng.integer(0, 3) ? 8 + 120 : static_cast<int64_t>(bytes.size()) - 1;
        bytes[static_cast<size_t>(rng.integer(0, end))] = static_cast<char>(rng.integer(0, 255));
      }
    }
    // A fresh name each time: truncating a file in place can cost milliseconds.
    const std::string bad = dir.file("bad" + std::to_string(i));
    write_bytes(bad, bytes);
    try {
      for (const auto& [name, t] : load_safetensors(bad)) t.to_vec<double>();
    } catch (const Error& e) {
      refused++;
      EXPECT_TRUE(e.kind() == ErrorKind::Parse || e.kind() == ErrorKind::Unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  EXPECT_GE(refused, 50);  // at least every truncation
}

TEST(SafetensorsFile, EmptyAndGappedFilesAreFine) {
  TempDir dir;
  const std::string path = dir.file("ok.safetensors");
  write_bytes(path, st_file("{}", ""));
  EXPECT_TRUE(load_safetensors(path).empty());
  // A gap between tensors and trailing bytes are allowed; zero-size tensors overlap nothing.
  write_bytes(path, st_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                            R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[1,1]},)"
                            R"("b":{"dtype":"U8","shape":[1],"data_offsets":[5,6]}})",
                            std::string("\x01\x02\x03\x04\x05\x06\x07", 7)));
  const auto t = load_safetensors(path);
  EXPECT_EQ(t.at("a").to_vec<uint8_t>(), (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(t.at("b").to_vec<uint8_t>(), (std::vector<uint8_t>{6}));
  EXPECT_EQ(t.at("e").shape(), (Shape{0, 4}));
}

TEST(SafetensorsFile, FileSystemErrors) {
  TempDir dir;
  const std::string missing = dir.file("missing.safetensors");
  expect_error([&] { load_safetensors(missing); }, ErrorKind::Io, {missing, "cannot open"});
  expect_error([&] { load_safetensors(dir.path().string()); }, ErrorKind::Io,
               {dir.path().string(), "not a regular file"});

  const Tensor t = Tensor::ones({2}, DType::F32);
  const std::string no_dir = dir.file("no/such/dir/x.safetensors");
  expect_error([&] { save_safetensors(no_dir, {{"t", t}}); }, ErrorKind::Io, {no_dir});
  // Renaming over a folder fails: the temporary file must be cleaned up.
  const std::string folder = dir.file("folder.safetensors");
  fs::create_directory(folder);
  expect_error([&] { save_safetensors(folder, {{"t", t}}); }, ErrorKind::Io, {folder, "rename"});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);

  expect_error(
      [&] {
        save_safetensors(dir.file("m.safetensors"), {{"__metadata__", t}});
      },
      ErrorKind::Parse, {"__metadata__", "reserved"});
  expect_error(
      [&] {
        save_safetensors(dir.file("u.safetensors"), {{"u", Tensor()}});
      },
      ErrorKind::Shape, {"'u'", "undefined"});
  expect_error(
      [&] {
        save_safetensors(dir.file("v.safetensors"), {{"\xff", t}});
      },
      ErrorKind::Parse, {"UTF-8"});
}

}  // namespace
}  // namespace wick::testing
