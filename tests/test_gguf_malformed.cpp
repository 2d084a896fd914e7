// GGUF: every kind of malformed file is an Error(Parse) naming the file, the field and the value —
// never a crash, an out-of-bounds read or an allocation sized by an unchecked count.
#include <chrono>
#include <limits>

#include "gguf_bytes.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

constexpr uint64_t kHuge = uint64_t{1} << 60;

// Writes the bytes as a file, opens it, and expects Error(Parse) naming the file and `needles`.
void expect_malformed(const GgufBytes& g, std::vector<std::string> needles) {
  TempDir dir;
  const std::string path = dir.file("bad.gguf");
  write_file(path, g.span());
  needles.push_back(path);
  expect_error([&] { GgufFile::open(path); }, ErrorKind::Parse, needles);
}

// A header and one u32 key, ready for tensor infos.
GgufBytes with_tensors(uint64_t n_tensors) {
  GgufBytes g;
  g.header(3, n_tensors, 1).kv_u32("general.quantization_version", 2);
  return g;
}

TEST(GgufMalformed, MissingOrNotAFile) {
  TempDir dir;
  expect_error([&] { GgufFile::open(dir.file("absent.gguf")); }, ErrorKind::Io,
               {"absent.gguf", "No such file"});
  expect_error([&] { GgufFile::open(dir.path().string()); }, ErrorKind::Io,
               {dir.path().string(), "not a regular file"});
}

TEST(GgufMalformed, EmptyFile) {
  expect_malformed(GgufBytes{}, {"truncated", "0 bytes"});
}

TEST(GgufMalformed, ShorterThanTheHeader) {
  GgufBytes g;
  g.raw("GGUF", 4).u32(3).u32(0);  // the tensor count is cut short
  expect_malformed(g, {"truncated", "tensor count", "offset 8"});
}

TEST(GgufMalformed, BadMagic) {
  GgufBytes g;
  g.raw("GGML", 4).u32(3).u64(0).u64(0);
  expect_malformed(g, {"bad magic", "0x4c4d4747", "not a GGUF file"});
}

TEST(GgufMalformed, Version1) {
  GgufBytes g;
  g.raw("GGUF", 4).u32(1).u32(0).u32(0);
  expect_malformed(g, {"version 1", "32-bit counts", "not supported"});
}

TEST(GgufMalformed, BigEndian) {
  GgufBytes g;
  g.raw("GGUF", 4).u32(0x03000000u).u64(0).u64(0);
  expect_malformed(g, {"big-endian", "0x3000000"});
}

TEST(GgufMalformed, UnknownVersion) {
  for (uint32_t v : {0u, 4u, 77u}) {
    GgufBytes g;
    g.header(v, 0, 0);
    expect_malformed(g, {"unsupported GGUF version " + std::to_string(v)});
  }
}

// A 24-byte file claiming 2^60 tensors (or key/values) fails at once, allocating nothing.
TEST(GgufMalformed, AbsurdCountsFailFast) {
  const auto start = std::chrono::steady_clock::now();
  GgufBytes t;
  t.header(3, kHuge, 0);
  expect_malformed(t, {"tensor count 1152921504606846976", "absurd"});
  GgufBytes k;
  k.header(3, 0, kHuge);
  expect_malformed(k, {"metadata count 1152921504606846976", "absurd"});
  GgufBytes both;  // each count alone fits in the bytes left, both together do not
  both.header(3, 1, 1).zeros(30);
  expect_malformed(both, {"metadata count 1", "tensor count 1", "do not fit"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

// Every prefix of a valid file is refused with a parse error.
TEST(GgufMalformed, TruncatedAnywhere) {
  GgufWriter w;
  w.set("general.architecture", "llama");
  w.set("list", GgufValue::array(std::vector<std::string>{"ab", "", "cde"}));
  w.set("nested",
        GgufValue::array(GgufValueType::Array, {GgufValue::array(std::vector<int16_t>{1, 2})}));
  w.set("f", 1.5);
  w.add_tensor("x", Tensor::from_vec(std::vector<float>{1, 2, 3}, Shape{3}));
  w.add_raw_tensor("q", QuantType::Q8_0, Shape{32}, std::vector<std::byte>(34));
  const std::vector<std::byte> full = w.to_bytes();
  // The last tensor's padding is not needed: cut only into real bytes.
  const size_t needed = full.size() - (32 - 34 % 32);
  for (size_t n = 0; n < needed; n++) {
    SCOPED_TRACE(n);
    expect_error([&] { GgufFile::parse(std::span(full).first(n), nullptr, "cut.gguf"); },
                 ErrorKind::Parse, {"cut.gguf"});
  }
  EXPECT_NO_THROW(GgufFile::parse(std::span(full).first(needed), nullptr, "cut.gguf"));
  // Through a file, cut inside the tensor data.
  GgufBytes cut;
  cut.raw(full.data(), needed - 1);
  expect_malformed(cut, {"tensor 'q'", "outside"});
}

TEST(GgufMalformed, StringCutShort) {
  GgufBytes g;
  g.header(3, 0, 1).u64(10).raw("general", 7);
  expect_malformed(g, {"truncated", "metadata key #0", "length 10"});
}

TEST(GgufMalformed, AbsurdStringLength) {
  GgufBytes g;
  g.header(3, 0, 1).u64(kHuge).zeros(16);
  expect_malformed(g, {"metadata key #0", "length 1152921504606846976"});
  GgufBytes v;
  v.header(3, 0, 1).key("name", GgufValueType::String).u64(kHuge).zeros(8);
  expect_malformed(v, {"'name'", "length 1152921504606846976"});
}

TEST(GgufMalformed, AbsurdArrayLength) {
  GgufBytes g;
  g.header(3, 0, 1).key("tokens", GgufValueType::Array);
  g.u32(static_cast<uint32_t>(GgufValueType::String)).u64(kHuge).zeros(40);
  expect_malformed(g, {"'tokens'", "array length 1152921504606846976", "string", "absurd"});
}

TEST(GgufMalformed, UnknownValueType) {
  GgufBytes g;
  g.header(3, 0, 1).str("odd").u32(13).u32(0);
  expect_malformed(g, {"'odd'", "unknown value type id 13"});
  GgufBytes a;
  a.header(3, 0, 1).key("odd.array", GgufValueType::Array).u32(99).u64(1).u32(0);
  expect_malformed(a, {"'odd.array'", "unknown value type id 99"});
}

TEST(GgufMalformed, BoolNeitherZeroNorOne) {
  GgufBytes g;
  g.header(3, 0, 1).key("flag", GgufValueType::Bool).u8(2);
  expect_malformed(g, {"'flag'", "bool value 2"});
}

TEST(GgufMalformed, ArraysNestedTooDeep) {
  GgufBytes g;
  g.header(3, 0, 1).key("deep", GgufValueType::Array);
  for (int i = 0; i < 10000; i++) g.u32(static_cast<uint32_t>(GgufValueType::Array)).u64(1);
  g.u32(static_cast<uint32_t>(GgufValueType::U8)).u64(0);
  expect_malformed(g, {"'deep'", "nested deeper than 8"});
}

TEST(GgufMalformed, EmptyKey) {
  GgufBytes g;
  g.header(3, 0, 1).kv_u32("", 1);
  expect_malformed(g, {"metadata key #0", "empty key"});
}

TEST(GgufMalformed, DuplicateKey) {
  GgufBytes g;
  g.header(3, 0, 2).kv_u32("llama.block_count", 1).kv_u32("llama.block_count", 2);
  expect_malformed(g, {"metadata key #1 'llama.block_count'", "duplicate key"});
}

TEST(GgufMalformed, BadAlignment) {
  GgufBytes npot;
  npot.header(3, 0, 1).kv_u32("general.alignment", 48);
  expect_malformed(npot, {"general.alignment 48", "not a power of two"});
  GgufBytes zero;
  zero.header(3, 0, 1).kv_u32("general.alignment", 0);
  expect_malformed(zero, {"general.alignment 0", "not a power of two"});
  GgufBytes wide;
  wide.header(3, 0, 1).key("general.alignment", GgufValueType::U64).u64(32);
  expect_malformed(wide, {"general.alignment must be a u32", "u64 32"});
}

TEST(GgufMalformed, TooManyDims) {
  GgufBytes g = with_tensors(1);
  g.tensor_info("t", {1, 1, 1, 1, 1}, QuantType::F32, 0).pad(32).zeros(32);
  expect_malformed(g, {"tensor #0 't'", "5 dims", "at most 4"});
}

TEST(GgufMalformed, ZeroOrNegativeDim) {
  GgufBytes zero = with_tensors(1);
  zero.tensor_info("t", {4, 0}, QuantType::F32, 0).pad(32).zeros(32);
  expect_malformed(zero, {"'t'", "ne[1] = 0"});
  GgufBytes neg = with_tensors(1);
  neg.tensor_info("t", {uint64_t(-4)}, QuantType::F32, 0).pad(32).zeros(32);
  expect_malformed(neg, {"'t'", "ne[0] = 18446744073709551612"});
}

TEST(GgufMalformed, ElementCountOverflows) {
  GgufBytes g = with_tensors(1);
  g.tensor_info("big", {uint64_t{1} << 40, uint64_t{1} << 40}, QuantType::F32, 0).pad(32).zeros(32);
  expect_malformed(g, {"'big'", "element count overflows", "ne[1] = 1099511627776"});
}

TEST(GgufMalformed, ByteSizeOverflows) {
  GgufBytes g = with_tensors(1);
  g.tensor_info("big", {uint64_t{1} << 31, uint64_t{1} << 31}, QuantType::F64, 0).pad(32).zeros(32);
  expect_malformed(g, {"'big'", "byte size overflows", "f64"});
}

TEST(GgufMalformed, UnknownTensorTypeStillOpensTheFileAndNamesTheTypeId) {
  // A type wick does not know (removed ids 4 and 5, future ones) is not a malformed file: it
  // opens, its other tensors load, and reading that tensor (or its blocks) names the id.
  for (uint32_t id : {4u, 5u, 99u, 0xffffffffu}) {
    SCOPED_TRACE(id);
    GgufBytes g = with_tensors(2);
    g.tensor_info("t", {32}, static_cast<QuantType>(id), 0)
        .tensor_info("f", {4}, QuantType::F32, 32)
        .pad(32)
        .zeros(32);
    for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) g.pod(v);
    TempDir dir;
    const std::string path = dir.file("unknown.gguf");
    write_file(path, g.span());
    const GgufFile f = GgufFile::open(path);
    ASSERT_EQ(f.tensors().size(), 2u);
    const GgufTensorInfo& t = f.tensor_info("t");
    EXPECT_EQ(static_cast<uint32_t>(t.type), id);
    EXPECT_EQ(quant_type_info(t.type), nullptr);
    EXPECT_FALSE(t.is_quantized());
    EXPECT_EQ(f.tensor("f").to_vec<float>(), (std::vector<float>{1, 2, 3, 4}));
    const std::string id_text = "unknown tensor type id " + std::to_string(id);
    expect_error([&] { f.tensor("t"); }, ErrorKind::Unsupported, {path, "'t'", id_text});
    expect_error([&] { QTensor(t.type, t.shape, std::vector<uint8_t>(18)); },
                 ErrorKind::Unsupported, {"QTensor", std::to_string(id)});
  }
}

TEST(GgufMalformed, QuantizedRowNotAWholeNumberOfBlocks) {
  GgufBytes g = with_tensors(1);
  g.tensor_info("w", {48, 2}, QuantType::Q4_1, 0).pad(32).zeros(128);
  expect_malformed(g, {"'w'", "ne[0] = 48", "q4_1", "block of 32"});
  GgufBytes k = with_tensors(1);
  k.tensor_info("w", {32, 8}, QuantType::Q4_K, 0).pad(32).zeros(1024);
  expect_malformed(k, {"'w'", "ne[0] = 32", "q4_k", "block of 256"});
}

TEST(GgufMalformed, MisalignedOffset) {
  GgufBytes g = with_tensors(2);
  g.tensor_info("a", {4}, QuantType::F32, 0).tensor_info("b", {4}, QuantType::F32, 16);
  g.pad(32).zeros(64);
  expect_malformed(g, {"tensor 'b'", "offset 16", "alignment 32"});
}

TEST(GgufMalformed, DataOutsideTheFile) {
  GgufBytes past = with_tensors(1);
  past.tensor_info("a", {64}, QuantType::F32, 0).pad(32).zeros(200);  // needs 256
  expect_malformed(past, {"tensor 'a'", "0 + 256", "outside the 200-byte data section"});
  GgufBytes far = with_tensors(1);
  far.tensor_info("a", {1}, QuantType::F32, uint64_t{1} << 63).pad(32).zeros(32);
  expect_malformed(far, {"tensor 'a'", "9223372036854775808", "outside"});
  GgufBytes wrap = with_tensors(1);  // offset + size wraps around 2^64
  wrap.tensor_info("a", {8}, QuantType::F32, uint64_t(-32)).pad(32).zeros(32);
  expect_malformed(wrap, {"tensor 'a'", "outside"});
}

TEST(GgufMalformed, DataSectionStartsPastTheEnd) {
  GgufBytes g = with_tensors(1);
  g.tensor_info("a", {1}, QuantType::F32, 0);
  const size_t infos_end = g.size();
  expect_malformed(
      g, {"truncated", "data section starts at", "file ends at " + std::to_string(infos_end)});
}

TEST(GgufMalformed, OverlappingTensors) {
  GgufBytes g = with_tensors(3);
  g.tensor_info("a", {16}, QuantType::F32, 0);   // [0, 64)
  g.tensor_info("b", {8}, QuantType::F32, 96);   // [96, 128)
  g.tensor_info("c", {16}, QuantType::F32, 32);  // [32, 96) overlaps a
  g.pad(32).zeros(128);
  expect_malformed(g, {"'a' [0, 64)", "'c' [32, 96)", "overlap"});
}

TEST(GgufMalformed, DuplicateTensorName) {
  GgufBytes g = with_tensors(2);
  g.tensor_info("w", {4}, QuantType::F32, 0).tensor_info("w", {4}, QuantType::F32, 32);
  g.pad(32).zeros(64);
  expect_malformed(g, {"tensor #1 'w'", "duplicate tensor name"});
}

}  // namespace
}  // namespace wick::testing
