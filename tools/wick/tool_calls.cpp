#include "tool_calls.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace wick::cli {

namespace {

using json = nlohmann::ordered_json;

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

std::optional<json> parse_json(std::string_view s) {
  json j = json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// {"name": STRING, "arguments" (or "parameters"): OBJECT or the JSON text of one}.
std::optional<ToolCall> as_call(const json& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  const char* key = j.contains("arguments") ? "arguments" : "parameters";
  json args = j.contains(key) ? j[key] : json::object();
  if (args.is_string()) {
    std::optional<json> parsed = parse_json(args.get<std::string>());
    if (!parsed || !parsed->is_object()) return std::nullopt;
    args = *parsed;
  }
  if (!args.is_object()) return std::nullopt;
  return ToolCall{j["name"].get<std::string>(), args.dump()};
}

std::optional<std::vector<ToolCall>> as_calls(const json& j) {
  std::vector<ToolCall> calls;
  if (j.is_array()) {
    for (const json& e : j) {
      std::optional<ToolCall> c = as_call(e);
      if (!c) return std::nullopt;
      calls.push_back(std::move(*c));
    }
    if (calls.empty()) return std::nullopt;
    return calls;
  }
  std::optional<ToolCall> c = as_call(j);
  if (!c) return std::nullopt;
  return std::vector<ToolCall>{std::move(*c)};
}

}  // namespace

ParsedAnswer parse_tool_calls(const std::string& text) {
  ParsedAnswer out;
  // Hermes blocks anywhere in the answer; an unclosed last block runs to the end.
  constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  if (text.find(kOpen) != std::string::npos) {
    std::string content;
    size_t at = 0;
    for (;;) {
      const size_t open = text.find(kOpen, at);
      if (open == std::string::npos) {
        content += text.substr(at);
        break;
      }
      const size_t body = open + kOpen.size();
      const size_t close = text.find(kClose, body);
      const size_t end = close == std::string::npos ? text.size() : close;
      std::optional<json> j = parse_json(std::string_view(text).substr(body, end - body));
      std::optional<std::vector<ToolCall>> calls = j ? as_calls(*j) : std::nullopt;
      const size_t next = close == std::string::npos ? text.size() : close + kClose.size();
      if (calls) {
        content += text.substr(at, open - at);
        for (ToolCall& c : *calls) out.calls.push_back(std::move(c));
      } else {
        content += text.substr(at, next - at);
      }
      at = next;
      if (at >= text.size()) break;
    }
    out.content = trim(content);
    return out;
  }
  // The whole answer a call or an array of calls (Llama 3.x, Mistral).
  std::string body = trim(text);
  for (std::string_view prefix : {"<|python_tag|>", "[TOOL_CALLS]"})
    if (body.starts_with(prefix)) body = trim(std::string_view(body).substr(prefix.size()));
  if (body.starts_with('{') || body.starts_with('[')) {
    if (std::optional<json> j = parse_json(body)) {
      if (std::optional<std::vector<ToolCall>> calls = as_calls(*j)) {
        out.calls = std::move(*calls);
        return out;
      }
    }
  }
  out.content = trim(text);
  return out;
}

}  // namespace wick::cli
