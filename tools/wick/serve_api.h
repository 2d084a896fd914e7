// `wick serve`'s OpenAI-compatible API: request bodies of /v1/completions and
// /v1/chat/completions checked and turned into GenRequests, and the JSON of the answers, whole or
// as server-sent-event chunks. Knows nothing of sockets.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "serve_scheduler.h"
#include "wick/tokenizer.h"

namespace wick::cli {

// The most choices a request may ask for (`n`); each takes a slot.
constexpr int64_t kMaxChoices = 16;

// A request the API refuses: the HTTP status (400) and OpenAI's error fields.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = {})
      : std::runtime_error(message), status(status), param(std::move(param)) {}
  int status;
  std::string param;  // the request field at fault, when one is
};

// What the API needs to know of the served model.
struct ServedModel {
  std::string id;  // the name /v1/models lists and answers carry
  Tokenizer tokenizer;
  ChatTemplate chat_template;
  bool add_bos = false;
  std::vector<int32_t> eos_ids;          // end a completion
  std::vector<int32_t> end_of_turn_ids;  // end a chat answer
  int64_t context = 0;                   // each slot's tokens, prompt and answer
  int64_t default_max_tokens = 512;
};

struct ApiRequest {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // a completion's answer starts with prompt_text
  std::string prompt_text;
  int64_t n = 1;             // choices: n requests, choice i sampled with gen's seed + i
  bool parse_tools = false;  // chat with tools: answers are parsed for tool calls
  GenRequest gen;
};

// One choice of a whole answer.
struct ChoiceResult {
  std::string text;
  FinishReason finish = FinishReason::None;
  int64_t completion_tokens = 0;
  std::vector<TokenLogprob> logprobs;
};

// Parses and checks a body; throws ApiError naming the field for anything wrong (not JSON, a
// wrong type or range, an unsupported option, a prompt longer than the context).
ApiRequest parse_api_request(const std::string& body, bool chat, const ServedModel& model);

// {"error": {...}} of OpenAI's shape.
std::string error_body(const std::string& message, const std::string& type,
                       const std::string& param = {});

// The whole answer (stream: false).
// With the tokens' log-probabilities when the request asked for them (OpenAI's shapes: chat's
// logprobs.content, completions' tokens / token_logprobs / top_logprobs / text_offset).
// The prompt counts once in the usage, the choices' tokens all.
nlohmann::json answer_json(const ApiRequest& r, const std::string& id, int64_t created,
                           const std::string& model, const std::vector<ChoiceResult>& choices,
                           int64_t prompt_tokens);
// One chunk of a streamed answer, for choice `index`: text (with the role first for chat), or
// the finish reason; the log-probabilities of its tokens, if any (a completion's text_offset
// counting from `text_offset`, the bytes streamed before).
nlohmann::json chunk_json(const ApiRequest& r, const std::string& id, int64_t created,
                          const std::string& model, const std::string* text, bool first,
                          FinishReason finish, const std::vector<TokenLogprob>& logprobs = {},
                          size_t text_offset = 0, int64_t index = 0);
// A chat answer's tool calls (parse_tools): the content outside them and OpenAI's tool_calls
// array, each call with a fresh 9-character id (what Mistral's templates take back); the
// finish reason becomes ToolCalls for an answer that stopped with calls.
struct ToolAnswer {
  std::string content;
  nlohmann::json tool_calls = nlohmann::json::array();
  FinishReason finish = FinishReason::None;
};
ToolAnswer tool_answer(const std::string& text, FinishReason finish);
// A streamed chat answer's tool calls, in one chunk (delta.tool_calls with their indices).
nlohmann::json tool_calls_chunk_json(const std::string& id, int64_t created,
                                     const std::string& model, int64_t index,
                                     const nlohmann::json& tool_calls);
// The last chunk of stream_options.include_usage: no choices, the token counts.
nlohmann::json usage_chunk_json(const ApiRequest& r, const std::string& id, int64_t created,
                                const std::string& model, int64_t prompt_tokens,
                                int64_t completion_tokens);
// "data: <json>\n\n", invalid UTF-8 replaced.
std::string sse_event(const nlohmann::json& j);
std::string dump_json(const nlohmann::json& j);

}  // namespace wick::cli
