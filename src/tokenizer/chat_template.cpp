// ChatML rendering. wick has no Jinja engine: from_jinja recognises the ChatML family and reads the
// one thing that varies between its members, the default system prompt written into the template.
#include "wick/error.h"
#include "wick/tokenizer.h"

namespace wick {
namespace {

constexpr std::string_view kStart = "<|im_start|>";
constexpr std::string_view kEnd = "<|im_end|>";

// Undoes the escapes a Jinja string literal may hold.
std::string unescape_jinja(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
  }
  return out;
}

}  // namespace

ChatTemplate::ChatTemplate(std::string default_system_prompt)
    : default_system_prompt_(std::move(default_system_prompt)) {}

ChatTemplate ChatTemplate::from_jinja(std::string_view source) {
  constexpr const char* op = "ChatTemplate::from_jinja";
  if (source.find(kStart) == std::string_view::npos || source.find(kEnd) == std::string_view::npos)
    fail(ErrorKind::Unsupported, op, "not a ChatML template (no ", kStart, " / ", kEnd, ")");
  // A literal system turn ("<|im_start|>system\n...<|im_end|>") is the default system message; the
  // per-message turn is built from message['role'] and never spells "system" out.
  const std::string_view system_turn = "<|im_start|>system";
  const size_t at = source.find(system_turn);
  if (at == std::string_view::npos) return ChatTemplate();
  size_t begin = at + system_turn.size();
  if (source.substr(begin, 1) == "\n")
    begin += 1;
  else if (source.substr(begin, 2) == "\\n")
    begin += 2;
  else
    fail(ErrorKind::Unsupported, op, "system turn without a newline after the role");
  const size_t end = source.find(kEnd, begin);
  if (end == std::string_view::npos)
    fail(ErrorKind::Unsupported, op, "default system turn without ", kEnd);
  return ChatTemplate(unescape_jinja(source.substr(begin, end - begin)));
}

std::string ChatTemplate::apply(std::span<const ChatMessage> messages,
                                bool add_generation_prompt) const {
  std::string out;
  const auto turn = [&](std::string_view role, std::string_view content) {
    out.append(kStart).append(role).append("\n").append(content).append(kEnd).append("\n");
  };
  if (!messages.empty() && messages[0].role != "system" && !default_system_prompt_.empty())
    turn("system", default_system_prompt_);
  for (const ChatMessage& m : messages) turn(m.role, m.content);
  if (add_generation_prompt) out.append(kStart).append("assistant\n");
  return out;
}

}  // namespace wick
