// Chat templates of real models rendered by wick's Jinja engine, byte for byte against Python's
// jinja2 (tests/data/chat_templates/expected.json, written by tests/gen_chat_references.py).
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"
#include "wick/tokenizer.h"

namespace wick::testing {
namespace {

using nlohmann::json;

std::filesystem::path templates_dir() {
  return std::filesystem::path(WICK_TESTS_DIR) / "data" / "chat_templates";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ChatTemplate, RendersLikeJinja2) {
  const json ref = json::parse(read_file(templates_dir() / "expected.json"));
  std::map<std::string, int> rendered;
  for (const json& c : ref.at("cases")) {
    const std::string name = c.at("template");
    const ChatTemplate tmpl = ChatTemplate::from_jinja(read_file(templates_dir() / name),
                                                       c.at("bos_token"), c.at("eos_token"));
    std::vector<ChatMessage> messages;
    for (const json& m : c.at("messages")) messages.push_back({m.at("role"), m.at("content")});
    const bool gen = c.at("add_generation_prompt");
    SCOPED_TRACE(name + " " + c.at("messages").dump() + (gen ? " +generation prompt" : ""));
    if (c.contains("error")) {
      expect_error([&] { tmpl.apply(messages, gen); }, ErrorKind::Unsupported,
                   {"ChatTemplate::apply", c.at("error").get<std::string>()});
    } else {
      EXPECT_EQ(tmpl.apply(messages, gen), c.at("text").get<std::string>());
    }
    rendered[name]++;
  }
  for (const char* name : {"smollm2.jinja", "qwen2.5.jinja", "qwen3.jinja", "smollm3.jinja",
                           "llama3.1.jinja", "phi3.5.jinja", "gemma2.jinja", "mistral-nemo.jinja"})
    EXPECT_GE(rendered[name], 5) << name;
}

// strftime_now formats the current local time (Llama 3.2's template dates its system turn).
TEST(ChatTemplate, StrftimeNowIsTheCurrentTime) {
  const ChatTemplate t = ChatTemplate::from_jinja("{{ strftime_now('%Y') }}");
  const std::time_t now = std::time(nullptr);
  char year[8];
  std::strftime(year, sizeof year, "%Y", std::localtime(&now));
  EXPECT_EQ(t.apply({}, false), year);
}

}  // namespace
}  // namespace wick::testing
