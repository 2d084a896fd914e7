// libFuzzer target for `wick serve`'s tool-call parser (tools/wick/tool_calls.cpp), which reads a
// model's answer: any text must parse without a crash, every call found must have a name and
// arguments that are the JSON text of an object, and an answer with no call must come back as its
// own text, trimmed.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tool_calls.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_tool_calls: %s %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const wick::cli::ParsedAnswer a = wick::cli::parse_tool_calls(text);
  for (const wick::cli::ToolCall& c : a.calls) {
    const auto args = nlohmann::json::parse(c.arguments, nullptr, /*allow_exceptions=*/false);
    if (args.is_discarded() || !args.is_object()) die("arguments not an object:", c.arguments);
  }
  if (a.calls.empty() && text.find("<tool_call>") == std::string::npos &&
      text.find(a.content) == std::string::npos)
    die("the content is not the text's:", a.content);
  return 0;
}
