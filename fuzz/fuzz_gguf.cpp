// libFuzzer target for the GGUF reader. Any input must either parse or throw Error(Parse); a file
// that parses must have every tensor's bytes inside the input, and writing it back with
// GgufWriter and parsing that again must give the same metadata and tensors.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "wick/gguf.h"

using namespace wick;

namespace {

[[noreturn]] void die(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz_gguf: %s %s\n", what, detail.c_str());
  std::abort();
}

void check(bool ok, const char* what, const std::string& detail = "") {
  if (!ok) die(what, detail);
}

// Reads every byte of every tensor (ASan reports any that lies outside the input).
void touch_tensors(const GgufFile& f, std::span<const std::byte> input) {
  volatile uint8_t sink = 0;
  for (const GgufTensorInfo& t : f.tensors()) {
    check(t.data >= input.data() &&
              t.nbytes <= static_cast<uint64_t>(input.data() + input.size() - t.data),
          "tensor outside the input:", t.name);
    // A type wick does not know opens with its size unknown (nbytes 0).
    const QuantTypeInfo* info = quant_type_info(t.type);
    check(info ? t.nbytes == static_cast<uint64_t>(t.numel / info->block_elems * info->block_bytes)
               : t.nbytes == 0,
          "byte size mismatch:", t.name);
    check(t.offset % f.alignment() == 0, "misaligned offset accepted:", t.name);
    uint8_t x = 0;
    for (std::byte b : t.bytes()) x ^= static_cast<uint8_t>(b);
    sink = sink ^ x;
  }
  (void)sink;
}

void round_trip(const GgufFile& f) {
  GgufWriter w(f.alignment());
  for (const auto& [key, value] : f.metadata())
    if (key != "general.alignment") w.set(key, value);
  for (const GgufTensorInfo& t : f.tensors()) w.add_raw_tensor(t.name, t.type, t.shape, t.bytes());
  const std::vector<std::byte> bytes = w.to_bytes();
  const GgufFile g = GgufFile::parse(bytes, nullptr, "rewritten");  // must not throw
  // general.alignment is written only when it is not the default.
  check(g.alignment() == f.alignment(), "alignment changed");
  const size_t f_keys = f.metadata().size() - (f.find("general.alignment") ? 1 : 0);
  const size_t g_keys = g.metadata().size() - (g.find("general.alignment") ? 1 : 0);
  check(f_keys == g_keys, "metadata count changed");
  for (const auto& [key, value] : f.metadata()) {
    if (key == "general.alignment") continue;
    const GgufValue* v = g.find(key);
    check(v && *v == value, "metadata changed:", key);
    (void)value.str();
  }
  check(g.tensors().size() == f.tensors().size(), "tensor count changed");
  for (size_t i = 0; i < f.tensors().size(); i++) {
    const GgufTensorInfo& a = f.tensors()[i];
    const GgufTensorInfo& b = g.tensors()[i];
    check(a.name == b.name && a.type == b.type && a.ne == b.ne && a.shape == b.shape &&
              a.nbytes == b.nbytes,
          "tensor info changed:", a.name);
    check(std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin()),
          "tensor bytes changed:", a.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
  std::optional<GgufFile> f;
  try {
    f.emplace(GgufFile::parse(input, nullptr, "fuzz.gguf"));
  } catch (const Error& e) {
    check(e.kind() == ErrorKind::Parse, "not a parse error:", e.what());
    check(std::string(e.what()).find("fuzz.gguf") != std::string::npos,
          "file not named:", e.what());
    return 0;
  }
  touch_tensors(*f, input);
  // The writer pads every tensor to the alignment, so a file declaring 2^30 (a power of two,
  // valid) rewrites to gigabytes: beyond the fuzzer's memory limit, not a bug. Real files use
  // 32 or 64.
  // A tensor of a type wick does not know opens (its size unknown) but cannot be written back.
  const bool known =
      std::all_of(f->tensors().begin(), f->tensors().end(),
                  [](const GgufTensorInfo& t) { return quant_type_info(t.type) != nullptr; });
  if (known && f->alignment() <= (1u << 20)) round_trip(*f);
  return 0;
}
