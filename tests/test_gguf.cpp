// GGUF: write-then-read round trips of metadata and tensors, version 2 files, alignments, the
// tensor bridge (zero copy, lifetime), writer errors, and the tiny llama model.
// Malformed files are in test_gguf_malformed.cpp.
#include <cmath>
#include <limits>

#include "cpu/cpu_device.h"
#include "gguf_bytes.h"
#include "tiny_llama.h"

namespace wick::testing {
namespace {

std::string random_string(Rng& rng, size_t max_len) {
  std::string s(static_cast<size_t>(rng.integer(0, static_cast<int64_t>(max_len))), ' ');
  for (char& c : s) c = static_cast<char>(rng.integer(0, 255));  // any bytes, NUL included
  return s;
}

template <typename T>
T random_int(Rng& rng) {
  return static_cast<T>(rng.gen()());
}

// One random value of each scalar type, as GgufValues.
GgufValue random_scalar(Rng& rng, GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
      return random_int<uint8_t>(rng);
    case GgufValueType::I8:
      return random_int<int8_t>(rng);
    case GgufValueType::U16:
      return random_int<uint16_t>(rng);
    case GgufValueType::I16:
      return random_int<int16_t>(rng);
    case GgufValueType::U32:
      return random_int<uint32_t>(rng);
    case GgufValueType::I32:
      return random_int<int32_t>(rng);
    case GgufValueType::F32:
      return static_cast<float>(rng.uniform(-1e6, 1e6));
    case GgufValueType::Bool:
      return rng.integer(0, 1) == 1;
    case GgufValueType::String:
      return random_string(rng, 40);
    case GgufValueType::U64:
      return random_int<uint64_t>(rng);
    case GgufValueType::I64:
      return random_int<int64_t>(rng);
    case GgufValueType::F64:
      return rng.uniform(-1e300, 1e300);
    case GgufValueType::Array:
      break;
  }
  return GgufValue();
}

const GgufValueType kScalarTypes[] = {
    GgufValueType::U8,     GgufValueType::I8,  GgufValueType::U16, GgufValueType::I16,
    GgufValueType::U32,    GgufValueType::I32, GgufValueType::F32, GgufValueType::Bool,
    GgufValueType::String, GgufValueType::U64, GgufValueType::I64, GgufValueType::F64};

// Every value type, with extremes, empty strings and arrays, and arrays nested three deep.
std::vector<std::pair<std::string, GgufValue>> all_kinds_of_metadata(Rng& rng) {
  std::vector<std::pair<std::string, GgufValue>> kv;
  for (GgufValueType t : kScalarTypes) {
    const std::string name = gguf_value_type_name(t);
    kv.emplace_back("scalar." + name, random_scalar(rng, t));
    std::vector<GgufValue> items;
    const int64_t n = rng.integer(1, 20);
    for (int64_t i = 0; i < n; i++) items.push_back(random_scalar(rng, t));
    kv.emplace_back("array." + name, GgufValue::array(t, items));
    kv.emplace_back("empty_array." + name, GgufValue::array(t, {}));
  }
  kv.emplace_back("extreme.u64", std::numeric_limits<uint64_t>::max());
  kv.emplace_back("extreme.i64", std::numeric_limits<int64_t>::min());
  kv.emplace_back("extreme.f32_inf", std::numeric_limits<float>::infinity());
  kv.emplace_back("extreme.f64_denormal", std::numeric_limits<double>::denorm_min());
  kv.emplace_back("extreme.f32_nan", std::numeric_limits<float>::quiet_NaN());
  kv.emplace_back("string.empty", "");
  kv.emplace_back("string.utf8", "h\xc3\xa9llo \xe2\x9c\x93");
  kv.emplace_back("string.nul", std::string("a\0b", 3));
  std::vector<GgufValue> rows;
  for (int64_t i = 0; i < 4; i++) {  // ragged: lengths 0..3
    std::vector<uint32_t> row;
    for (int64_t j = 0; j < i; j++) row.push_back(random_int<uint32_t>(rng));
    rows.push_back(GgufValue::array(row));
  }
  const GgufValue nested = GgufValue::array(GgufValueType::Array, rows);
  kv.emplace_back("nested.u32", nested);
  kv.emplace_back(
      "nested.deeper",
      GgufValue::array(GgufValueType::Array, {nested, GgufValue::array(GgufValueType::Array, {})}));
  kv.emplace_back(
      "nested.strings",
      GgufValue::array(GgufValueType::Array, {GgufValue::array(std::vector<std::string>{"", "x"}),
                                              GgufValue::array(std::vector<std::string>{})}));
  return kv;
}

TEST(Gguf, MetadataOfEveryTypeRoundTrips) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  const auto kv = all_kinds_of_metadata(rng);
  GgufWriter w;
  for (const auto& [k, v] : kv) w.set(k, v);
  w.write(dir.file("meta.gguf"));

  const GgufFile f = GgufFile::open(dir.file("meta.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_TRUE(f.tensors().empty());
  ASSERT_EQ(f.metadata().size(), kv.size());
  for (size_t i = 0; i < kv.size(); i++) {
    EXPECT_EQ(f.metadata()[i].first, kv[i].first);
    EXPECT_TRUE(f.metadata()[i].second == kv[i].second)
        << kv[i].first << ": wrote " << kv[i].second.str() << ", read "
        << f.metadata()[i].second.str();
    ASSERT_NE(f.find(kv[i].first), nullptr);
    EXPECT_TRUE(*f.find(kv[i].first) == kv[i].second);
  }
  EXPECT_EQ(f.get<std::string>("string.empty"), "");
  EXPECT_EQ(f.get<std::string>("string.nul"), std::string("a\0b", 3));
  EXPECT_EQ(f.get<uint64_t>("extreme.u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(std::isnan(f.get<float>("extreme.f32_nan")));
  const GgufArray& nested = f.value("nested.u32").as_array();
  ASSERT_EQ(nested.type, GgufValueType::Array);
  ASSERT_EQ(nested.items.size(), 4u);
  EXPECT_EQ(nested.items[3].to_vector<uint32_t>().size(), 3u);
  EXPECT_EQ(f.get_array<GgufArray>("nested.strings")[0].items.size(), 2u);
  expect_error([&] { f.get_array<std::string>("nested.strings"); }, ErrorKind::Parse,
               {"nested.strings", "an array of string"});
}

TEST(Gguf, TypedAccessors) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  GgufWriter w;
  const auto u = random_int<uint32_t>(rng);
  const auto i16 = random_int<int16_t>(rng);
  const float f32 = static_cast<float>(rng.uniform(-10, 10));
  std::vector<std::string> words = {"", random_string(rng, 10), random_string(rng, 10)};
  std::vector<int32_t> ints = {random_int<int32_t>(rng), random_int<int32_t>(rng)};
  w.set("a.u32", u);
  w.set("a.i16", i16);
  w.set("a.f32", f32);
  w.set("a.f64", 2.5);
  w.set("a.bool", true);
  w.set("a.big", std::numeric_limits<uint64_t>::max());
  w.set("a.words", GgufValue::array(words));
  w.set("a.ints", GgufValue::array(ints));
  const std::vector<std::byte> bytes = w.to_bytes();
  const GgufFile f = GgufFile::parse(bytes, nullptr, "acc.gguf");

  EXPECT_EQ(f.get<uint32_t>("a.u32"), u);
  EXPECT_EQ(f.get_int("a.u32"), static_cast<int64_t>(u));
  EXPECT_EQ(f.get_int("a.i16"), i16);
  EXPECT_EQ(f.get_int("a.bool"), 1);
  EXPECT_EQ(f.get_float("a.f32"), f32);
  EXPECT_EQ(f.get_float("a.f64"), 2.5);
  EXPECT_EQ(f.get_array<std::string>("a.words"), words);
  EXPECT_EQ(f.get_array<int32_t>("a.ints"), ints);
  EXPECT_EQ(f.find("a.missing"), nullptr);

  expect_error([&] { f.get<float>("a.u32"); }, ErrorKind::Parse,
               {"acc.gguf", "a.u32", "u32", "expected f32"});
  expect_error([&] { f.value("a.missing"); }, ErrorKind::Parse,
               {"acc.gguf", "missing key 'a.missing'"});
  expect_error([&] { f.get<uint32_t>("a.missing"); }, ErrorKind::Parse, {"a.missing"});
  expect_error([&] { f.get_int("a.f32"); }, ErrorKind::Parse, {"a.f32", "not an integer"});
  expect_error([&] { f.get_int("a.big"); }, ErrorKind::Parse, {"a.big", "does not fit"});
  expect_error([&] { f.get_float("a.u32"); }, ErrorKind::Parse, {"a.u32", "expected f32 or f64"});
  expect_error([&] { f.get_array<int64_t>("a.ints"); }, ErrorKind::Parse,
               {"a.ints", "array<i32>", "an array of i64"});
  expect_error([&] { f.get_array<uint32_t>("a.u32"); }, ErrorKind::Parse,
               {"a.u32", "an array of u32"});
  expect_error([&] { f.value("a.words").as<std::string>(); }, ErrorKind::Parse,
               {"array", "expected string"});
}

TEST(Gguf, ValuePrinting) {
  EXPECT_EQ(GgufValue(uint32_t{32}).str(), "u32 32");
  EXPECT_EQ(GgufValue(int8_t{-3}).str(), "i8 -3");
  EXPECT_EQ(GgufValue("ll\"a\n").str(), "string \"ll\\\"a\\x0a\"");
  EXPECT_EQ(GgufValue::array(std::vector<int32_t>{1, 2, 3}).str(2), "array<i32>[3] {1, 2, ...}");
  EXPECT_EQ(GgufValue(true).str(), "bool true");
}

// Random plain tensors of every GGUF-representable dtype, each written from every layout variant.
TEST(Gguf, PlainTensorsRoundTrip) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  struct Written {
    std::string name;
    DType dt;
    Ref ref;
  };
  std::vector<Written> written;
  GgufWriter w;
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64}) {
    for (Variant v : kAllVariants) {
      const Shape shape = random_shape(rng, 0, 4, 5);
      Ref ref = is_float(dt) ? random_ref(rng, shape, -100, 100)
                             : random_int_ref(rng, shape, -1000000, 1000000);
      ref = round_ref(ref, dt);
      const std::string name = std::string("t.") + dtype_name(dt) + "." + variant_name(v);
      w.add_tensor(name, make_tensor(ref, dt, Device::cpu(), v));
      written.push_back({name, dt, ref});
    }
  }
  w.write(dir.file("plain.gguf"));

  const GgufFile f = GgufFile::open(dir.file("plain.gguf"));
  ASSERT_EQ(f.tensors().size(), written.size());
  for (size_t i = 0; i < written.size(); i++) {
    const Written& x = written[i];
    SCOPED_TRACE(x.name);
    const GgufTensorInfo& info = f.tensors()[i];
    EXPECT_EQ(info.name, x.name);
    EXPECT_EQ(info.shape, x.ref.shape);
    EXPECT_EQ(std::vector<int64_t>(info.ne.rbegin(), info.ne.rend()), x.ref.shape.dims());
    EXPECT_EQ(info.numel, x.ref.numel());
    EXPECT_EQ(info.nbytes, static_cast<uint64_t>(x.ref.numel()) * dtype_size(x.dt));
    EXPECT_FALSE(info.is_quantized());
    EXPECT_EQ(info.offset % 32, 0u);
    const Tensor t = f.tensor(x.name);
    EXPECT_EQ(t.dtype(), x.dt);
    WICK_EXPECT_CLOSE(t, x.ref, Tol{0, 0});
    // Zero copy: the tensor's storage is the file's mapping.
    EXPECT_EQ(cpu::cpu_storage(*t.storage()).data(), info.data);
  }
}

// I8/I16/I32 tensors are raw in GGUF and come back as I64.
TEST(Gguf, NarrowIntegerTensorsWidenToI64) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  GgufWriter w;
  std::vector<std::vector<int64_t>> want;
  const QuantType types[] = {QuantType::I8, QuantType::I16, QuantType::I32};
  const int64_t bits[] = {8, 16, 32};
  for (int k = 0; k < 3; k++) {
    const Shape shape = random_shape(rng, 1, 3, 6);
    std::vector<std::byte> bytes;
    std::vector<int64_t> values;
    for (int64_t i = 0; i < shape.numel(); i++) {
      const int64_t lo = -(int64_t{1} << (bits[k] - 1)), hi = (int64_t{1} << (bits[k] - 1)) - 1;
      const int64_t v = rng.integer(lo, hi);
      values.push_back(v);
      const auto u = static_cast<uint64_t>(v);
      for (int64_t b = 0; b < bits[k] / 8; b++)
        bytes.push_back(static_cast<std::byte>(u >> (8 * b)));
    }
    w.add_raw_tensor("int" + std::to_string(bits[k]), types[k], shape, bytes);
    want.push_back(values);
  }
  const std::vector<std::byte> file = w.to_bytes();
  const GgufFile f = GgufFile::parse(file, nullptr, "ints.gguf");
  for (int k = 0; k < 3; k++) {
    const Tensor t = f.tensor("int" + std::to_string(bits[k]));
    EXPECT_EQ(t.dtype(), DType::I64);
    EXPECT_EQ(t.to_vec<int64_t>(), want[static_cast<size_t>(k)]);
  }
}

TEST(Gguf, QuantizedTensorsRoundTripAsBytes) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  GgufWriter w;
  std::vector<std::pair<std::string, std::vector<std::byte>>> want;
  for (uint32_t id = 0; id < 64; id++) {
    const QuantTypeInfo* info = quant_type_info(id);
    if (!info || info->block_elems == 1) continue;
    const Shape shape{rng.integer(1, 3), rng.integer(1, 3) * info->block_elems};
    std::vector<std::byte> bytes(
        static_cast<size_t>(shape.numel() / info->block_elems * info->block_bytes));
    for (std::byte& b : bytes) b = static_cast<std::byte>(rng.integer(0, 255));
    const std::string name = std::string("q.") + info->name;
    w.add_raw_tensor(name, info->type, shape, bytes);
    want.emplace_back(name, bytes);
  }
  ASSERT_GE(want.size(), 12u);
  w.write(dir.file("q.gguf"));
  const GgufFile f = GgufFile::open(dir.file("q.gguf"));
  for (const auto& [name, bytes] : want) {
    SCOPED_TRACE(name);
    const GgufTensorInfo& info = f.tensor_info(name);
    EXPECT_TRUE(info.is_quantized());
    ASSERT_EQ(info.nbytes, bytes.size());
    EXPECT_EQ(std::memcmp(info.bytes().data(), bytes.data(), bytes.size()), 0);
    expect_error([&] { f.tensor(name); }, ErrorKind::Unsupported,
                 {"q.gguf", name, quant_type_info(info.type)->name, "bytes()"});
  }
  expect_error([&] { f.tensor_info("nope"); }, ErrorKind::Parse,
               {"q.gguf", "no tensor named 'nope'"});
  expect_error([&] { f.tensor("nope"); }, ErrorKind::Parse, {"no tensor named 'nope'"});
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
}

// Version 2 has the same layout as version 3; this file is laid out by hand, not by GgufWriter.
TEST(Gguf, ReadsVersion2) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  std::vector<float> a(6);
  for (float& x : a) x = static_cast<float>(rng.uniform(-5, 5));
  std::vector<std::byte> q4(2 * 20);  // q4_1: ne = {32, 2}: 2 blocks of 20 bytes
  for (std::byte& x : q4) x = static_cast<std::byte>(rng.integer(0, 255));
  const auto blocks = static_cast<uint32_t>(rng.integer(0, 100));
  GgufBytes g;
  g.header(2, 2, 4);
  g.key("general.architecture", GgufValueType::String).str("llama");
  g.kv_u32("llama.block_count", blocks);
  g.key("v2.list", GgufValueType::Array).u32(static_cast<uint32_t>(GgufValueType::I16)).u64(3);
  g.pod<int16_t>(-1).pod<int16_t>(2).pod<int16_t>(-3);
  g.key("v2.flag", GgufValueType::Bool).u8(1);
  g.tensor_info("a", {3, 2}, QuantType::F32, 0);
  g.tensor_info("b", {32, 2}, QuantType::Q4_1, 32);
  g.pad(32).raw(a.data(), 24).pad(32).raw(q4.data(), q4.size());
  write_file(dir.file("v2.gguf"), g.span());

  const GgufFile f = GgufFile::open(dir.file("v2.gguf"));
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(f.get<uint32_t>("llama.block_count"), blocks);
  EXPECT_EQ(f.get_array<int16_t>("v2.list"), (std::vector<int16_t>{-1, 2, -3}));
  EXPECT_TRUE(f.get<bool>("v2.flag"));
  EXPECT_EQ(f.tensor("a").shape(), (Shape{2, 3}));
  EXPECT_EQ(f.tensor("a").to_vec<float>(), a);
  EXPECT_EQ(f.tensor_info("b").shape, (Shape{2, 32}));
  EXPECT_EQ(std::memcmp(f.tensor_info("b").data, q4.data(), q4.size()), 0);
  EXPECT_EQ(f.data_offset() % 32, 0u);
}

// Alignments other than 32: data offsets follow them and odd-sized tensors are padded.
TEST(Gguf, OtherAlignments) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  for (uint32_t align : {1u, 2u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(align);
    GgufWriter w(align);
    w.set("k", "v");
    std::vector<Ref> refs;
    for (int i = 0; i < 4; i++) {
      const DType dt = i % 2 ? DType::F32 : DType::F16;
      const Ref r = round_ref(random_ref(rng, Shape{rng.integer(1, 7)}), dt);
      w.add_tensor(detail::concat("t", i), make_tensor(r, dt, Device::cpu()));
      refs.push_back(r);
    }
    const std::string path = dir.file(detail::concat("a", align, ".gguf"));
    w.write(path);
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.alignment(), align);
    EXPECT_EQ(f.get<uint32_t>("general.alignment"), align) << "written only when not 32";
    EXPECT_EQ(f.data_offset() % align, 0u);
    for (int i = 0; i < 4; i++) {
      const GgufTensorInfo& info = f.tensors()[static_cast<size_t>(i)];
      EXPECT_EQ(info.offset % align, 0u);
      WICK_EXPECT_CLOSE(f.tensor(info.name), refs[static_cast<size_t>(i)], Tol{0, 0});
    }
  }
}

// A valid but huge alignment (a power of two, 2^30: what fuzz/regressions/gguf/ holds) parses; the
// fuzz target no longer rewrites such files, whose tensors would be padded to gigabytes.
TEST(Gguf, HugeAlignmentParses) {
  GgufBytes b;
  b.header(3, 0, 2).key("k", GgufValueType::U32).u32(7);
  b.key("general.alignment", GgufValueType::U32).u32(1u << 30);
  const GgufFile f = GgufFile::parse(b.bytes, nullptr, "huge.gguf");
  EXPECT_EQ(f.alignment(), 1u << 30);
  EXPECT_EQ(f.get<uint32_t>("k"), 7u);
  EXPECT_TRUE(f.tensors().empty());
}

TEST(Gguf, TensorsOutliveTheFileAndNeverWriteToIt) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  const Ref r = round_ref(random_ref(rng, Shape{3, 5}), DType::F32);
  GgufWriter w;
  w.add_tensor("w", make_tensor(r, DType::F32, Device::cpu()));
  w.write(dir.file("m.gguf"));
  Tensor t;
  {
    const GgufFile f = GgufFile::open(dir.file("m.gguf"));
    t = f.tensor("w");
  }
  WICK_EXPECT_CLOSE(t, r, Tol{0, 0});  // the mapping lives as long as the tensor
  t.const_set(7.0);                    // private pages: the file keeps its values
  const GgufFile again = GgufFile::open(dir.file("m.gguf"));
  WICK_EXPECT_CLOSE(again.tensor("w"), r, Tol{0, 0});
  EXPECT_EQ(t.to_vec<float>(), std::vector<float>(15, 7.0f));
}

// Bytes the caller owns are never written through: parse() tensors are copies.
TEST(Gguf, ParsedBytesAreCopiedNotWrapped) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Ref r = round_ref(random_ref(rng, Shape{4}), DType::F64);
  GgufWriter w;
  w.add_tensor("x", make_tensor(r, DType::F64, Device::cpu()));
  const std::vector<std::byte> bytes = w.to_bytes();
  const GgufFile f = GgufFile::parse(bytes, nullptr, "mem");
  const Tensor t = f.tensor("x");
  EXPECT_NE(cpu::cpu_storage(*t.storage()).data(), f.tensor_info("x").data);
  WICK_EXPECT_CLOSE(t, r, Tol{0, 0});
}

TEST(Gguf, WriterRejectsBadInput) {
  GgufWriter w;
  w.set("a", uint8_t{1});
  w.add_tensor("t", Tensor::from_vec(std::vector<float>{1, 2}, Shape{2}));
  expect_error([&] { w.set("a", 2.0); }, ErrorKind::Parse, {"duplicate key 'a'"});
  expect_error([&] { w.set("", 2.0); }, ErrorKind::Parse, {"empty key"});
  expect_error([&] { w.set("general.alignment", uint32_t{64}); }, ErrorKind::Parse,
               {"general.alignment", "GgufWriter(alignment)"});
  expect_error([&] { w.add_tensor("t", Tensor::from_vec(std::vector<float>{1}, Shape{1})); },
               ErrorKind::Parse, {"duplicate tensor name 't'"});
  expect_error([&] { w.add_tensor("u", Tensor::zeros(Shape{2}, DType::U8)); }, ErrorKind::DType,
               {"'u'", "u8"});
  expect_error([&] { w.add_tensor("u", Tensor::zeros(Shape{2}, DType::U32)); }, ErrorKind::DType,
               {"'u'", "u32"});
  expect_error(
      [&] {
        w.add_tensor("r5", Tensor::zeros(Shape{1, 1, 1, 1, 1}, DType::F32));
      },
      ErrorKind::Shape, {"'r5'", "[1, 1, 1, 1, 1]", "more than 4"});
  expect_error(
      [&] {
        w.add_tensor("e", Tensor::zeros(Shape{2, 0}, DType::F32));
      },
      ErrorKind::Shape, {"'e'", "[2, 0]", "<= 0"});
  const std::vector<std::byte> q(20);
  expect_error(
      [&] {
        w.add_raw_tensor("q", QuantType::Q4_1, Shape{1, 16}, q);
      },
      ErrorKind::Shape, {"'q'", "16", "q4_1", "32"});
  expect_error(
      [&] {
        w.add_raw_tensor("q", QuantType::Q4_1, Shape{2, 32}, q);
      },
      ErrorKind::Shape, {"'q'", "20 bytes given", "takes 40"});
  expect_error([&] { w.add_raw_tensor("q", static_cast<QuantType>(4), Shape{32}, q); },
               ErrorKind::DType, {"'q'", "unknown type id 4"});
  expect_error([&] { GgufWriter bad(48); }, ErrorKind::OutOfRange, {"alignment 48"});
  expect_error([&] { GgufWriter bad(0); }, ErrorKind::OutOfRange, {"alignment 0"});
  expect_error([&] { GgufValue::array(GgufValueType::U8, {GgufValue(1.0f)}); }, ErrorKind::DType,
               {"item 0", "f32", "array of u8"});
  GgufArray mixed{GgufValueType::U32, {GgufValue(uint32_t{1}), GgufValue("x")}};
  expect_error([&] { w.set("m", GgufValue(mixed)); }, ErrorKind::DType,
               {"'m'", "item 1", "string", "array of u32"});
  GgufValue deep = GgufValue::array(std::vector<uint8_t>{1});
  for (int i = 0; i < 8; i++) deep = GgufValue::array(GgufValueType::Array, {deep});
  expect_error([&] { w.set("deep", deep); }, ErrorKind::DType, {"'deep'", "nested deeper"});
  // None of the refused calls changed what gets written.
  const std::vector<std::byte> bytes = w.to_bytes();
  const GgufFile f = GgufFile::parse(bytes, nullptr, "w");
  EXPECT_EQ(f.metadata().size(), 1u);
  EXPECT_EQ(f.tensors().size(), 1u);
}

// write() goes through a temporary file and a rename: failures leave nothing behind.
TEST(Gguf, WriteIsAtomic) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  GgufWriter first;
  first.set("which", "first");
  first.write(dir.file("m.gguf"));
  GgufWriter second;
  second.set("which", "second");
  second.add_tensor("t", make_tensor(random_ref(rng, Shape{100}), DType::F32, Device::cpu()));
  second.write(dir.file("m.gguf"));
  EXPECT_EQ(GgufFile::open(dir.file("m.gguf")).get<std::string>("which"), "second");

  std::filesystem::create_directory(dir.file("taken"));
  expect_error([&] { second.write(dir.file("taken")); }, ErrorKind::Io, {"taken"});
  expect_error([&] { second.write(dir.file("missing/m.gguf")); }, ErrorKind::Io,
               {"missing/m.gguf"});
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    entries++;
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  EXPECT_EQ(entries, 2u);  // m.gguf and taken/
}

void check_tiny_llama(const TinyLlamaConfig& cfg) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng, cfg);
  const GgufFile f = GgufFile::open(dir.file("tiny.gguf"));
  EXPECT_EQ(f.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.block_count"), cfg.layers);
  EXPECT_EQ(f.get_int("llama.embedding_length"), cfg.hidden);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), cfg.ffn);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), cfg.heads);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), cfg.kv_heads);
  EXPECT_EQ(f.get_int("llama.rope.dimension_count"), cfg.head_dim());
  EXPECT_EQ(f.get_float("llama.rope.freq_base"), cfg.rope_theta);
  EXPECT_EQ(f.get_float("llama.attention.layer_norm_rms_epsilon"), cfg.rms_eps);
  EXPECT_EQ(f.get_array<std::string>("tokenizer.ggml.tokens"), m.tokens);
  EXPECT_EQ(f.get_array<int32_t>("tokenizer.ggml.token_type"), m.token_types);
  EXPECT_EQ(f.get_array<std::string>("tokenizer.ggml.merges"), m.merges);
  EXPECT_EQ(static_cast<int64_t>(m.tokens.size()), cfg.vocab);
  EXPECT_EQ(f.get<uint32_t>("tokenizer.ggml.eos_token_id"), m.eos_id);
  const int64_t expected_tensors = 1 + 9 * cfg.layers + 1 + (cfg.tied_embeddings ? 0 : 1);
  ASSERT_EQ(static_cast<int64_t>(f.tensors().size()), expected_tensors);
  ASSERT_EQ(m.weights.size(), f.tensors().size());
  for (const auto& [name, t] : m.weights) {
    SCOPED_TRACE(name);
    const Tensor got = f.tensor(name);
    EXPECT_EQ(got.dtype(), t.dtype());
    WICK_EXPECT_CLOSE(got, to_ref(t), Tol{0, 0});
  }
  const int64_t kv_dim = cfg.kv_heads * cfg.head_dim();
  EXPECT_EQ(f.tensor_info("token_embd.weight").shape, (Shape{cfg.vocab, cfg.hidden}));
  EXPECT_EQ(f.tensor_info("token_embd.weight").ne, (std::vector<int64_t>{cfg.hidden, cfg.vocab}));
  EXPECT_EQ(f.tensor_info("blk.1.attn_k.weight").shape, (Shape{kv_dim, cfg.hidden}));
  EXPECT_EQ(f.tensor_info("blk.0.ffn_down.weight").shape, (Shape{cfg.hidden, cfg.ffn}));
  EXPECT_EQ(f.tensor_info("output_norm.weight").type, QuantType::F32);
  EXPECT_EQ(f.find_tensor("output.weight") != nullptr, !cfg.tied_embeddings);
}

TEST(Gguf, TinyLlamaRoundTrips) {
  check_tiny_llama({});
}

TEST(Gguf, TinyLlamaF16UntiedAligned64) {
  TinyLlamaConfig cfg;
  cfg.weight_dtype = DType::F16;
  cfg.tied_embeddings = false;
  cfg.alignment = 64;
  cfg.layers = 3;
  cfg.vocab = 50;
  check_tiny_llama(cfg);
}

}  // namespace
}  // namespace wick::testing
