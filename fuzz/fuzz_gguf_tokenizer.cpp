// libFuzzer target for the tokenizer and chat template a GGUF file carries (untrusted input: a
// model file). Any input that parses as GGUF either yields a tokenizer or throws Error(Parse) /
// Error(Unsupported); a tokenizer encodes a fixed text to ids inside its vocabulary (with and
// without special tokens) and decodes them. The file's chat template loads or throws Error(Parse),
// and renders a short conversation or throws Error(Unsupported).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tokenizer_checks.h"
#include "wick/error.h"
#include "wick/gguf.h"
#include "wick/llama.h"

using namespace wick;

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_gguf_tokenizer: %s %s\n", what, detail.c_str());
  std::abort();
}

void expect_kind(const Error& e, std::initializer_list<ErrorKind> kinds, const char* where) {
  for (const ErrorKind k : kinds)
    if (e.kind() == k) return;
  die(where, e.what());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<GgufFile> f;
  try {
    f.emplace(
        GgufFile::parse({reinterpret_cast<const std::byte*>(data), size}, nullptr, "fuzz.gguf"));
  } catch (const Error& e) {
    expect_kind(e, {ErrorKind::Parse}, "parse:");
    return 0;
  }
  try {
    check_encode_decode(load_gguf_tokenizer(*f), "fuzz_gguf_tokenizer");
  } catch (const Error& e) {
    expect_kind(e, {ErrorKind::Parse, ErrorKind::Unsupported}, "load_gguf_tokenizer:");
  }
  try {
    const ChatTemplate t = load_gguf_chat_template(*f);
    const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi!"}};
    try {
      (void)t.apply(messages, true);
    } catch (const Error& e) {
      expect_kind(e, {ErrorKind::Unsupported}, "apply:");
    }
  } catch (const Error& e) {
    expect_kind(e, {ErrorKind::Parse}, "load_gguf_chat_template:");
  }
  return 0;
}
