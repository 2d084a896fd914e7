// Tool calls in a model's answer, as the common chat formats write them, turned into OpenAI's
// tool_calls: Hermes / Qwen 2.5-3 / SmolLM3 (<tool_call>{"name": ..., "arguments": ...}</tool_call>
// blocks), Llama 3.x (the whole answer one {"name": ..., "parameters": ...} object, after an
// optional <|python_tag|>) and Mistral ([TOOL_CALLS] then, or the whole answer, a JSON array of
// {"name": ..., "arguments": ...}). Knows nothing of HTTP.
#pragma once

#include <string>
#include <vector>

namespace wick::cli {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object
};

struct ParsedAnswer {
  std::string content;  // the text outside the calls, trimmed
  std::vector<ToolCall> calls;
};

// A block that is not valid JSON of that shape stays in the content.
ParsedAnswer parse_tool_calls(const std::string& text);

}  // namespace wick::cli
