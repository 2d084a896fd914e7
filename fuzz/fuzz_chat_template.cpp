// libFuzzer target for chat templates, which come from model files (untrusted input). The first
// byte picks add_generation_prompt, the rest is the template. Any input must parse or throw
// Error(Parse); a parsed template renders a fixed conversation or throws Error(Unsupported) — the
// limits of src/tokenizer/chat_template.cpp keep the stack, memory and time bounded.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "wick/error.h"
#include "wick/tokenizer.h"

using namespace wick;

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_chat_template: %s %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool generation_prompt = (data[0] & 1) != 0;
  const std::string source(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const std::vector<ChatMessage> messages = {
      {"system", "Be brief."},
      {"user", "What is 2 + 2? {{ not a template }}"},
      {"assistant", "4"},
      {"user", "And \"3 * 3\"?\n"},
  };
  ChatTemplate tmpl = ChatTemplate::chatml();
  try {
    tmpl = ChatTemplate::from_jinja(source, "<s>", "</s>");
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Parse) die("from_jinja: not a parse error:", e.what());
    return 0;
  }
  try {
    volatile size_t n = tmpl.apply(messages, generation_prompt).size();
    (void)n;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported) die("apply: not Unsupported:", e.what());
  }
  return 0;
}
