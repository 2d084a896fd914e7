// libFuzzer target for Hugging Face tokenizer.json files (untrusted input: they come with a model
// folder). Any input must load or throw Error(Parse) / Error(Unsupported); a tokenizer that loads
// encodes a fixed text (with and without special tokens), decodes what it made and every id of its
// vocabulary, and refuses an id past its vocabulary with Error(OutOfRange).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tokenizer_checks.h"
#include "wick/error.h"
#include "wick/tokenizer.h"

using namespace wick;

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_tokenizer_json: %s %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  Tokenizer tok = Tokenizer::from_vocab({"a"}, {}, {}, {}, "default");
  try {
    tok = Tokenizer::from_hf_json(json);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Parse && e.kind() != ErrorKind::Unsupported)
      die("from_hf_json: unexpected error:", e.what());
    return 0;
  }
  check_encode_decode(tok, "fuzz_tokenizer_json");
  std::vector<int32_t> every(static_cast<size_t>(std::min(tok.vocab_size(), 4096)));
  for (size_t i = 0; i < every.size(); i++) every[i] = static_cast<int32_t>(i);
  (void)tok.decode_bytes(every);
  try {
    const int32_t past = tok.vocab_size();
    (void)tok.decode({&past, 1});
    die("decode: no error for id", std::to_string(past));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::OutOfRange) die("decode past the vocabulary:", e.what());
  }
  return 0;
}
