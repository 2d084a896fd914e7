// `wick serve`'s API layer without sockets: a chat request with tools renders them through the
// model's template (Qwen 2.5's, which writes tool definitions, calls and results) in the body's
// key order, and answers that hold tool calls come back as OpenAI's tool_calls.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"
#include "serve_api.h"
#include "tokenizer/byte_level.h"

namespace wick::testing {
namespace {

using nlohmann::json;

void expect_has(const std::string& text, const std::string& needle) {
  EXPECT_NE(text.find(needle), std::string::npos) << "no '" << needle << "' in:\n" << text;
}

// A byte-level tokenizer of the 256 bytes (every text round-trips) and Qwen 2.5's template.
cli::ServedModel served_qwen() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b)
    tokens.push_back(tokenizer_detail::byte_level_encode(std::string(1, static_cast<char>(b))));
  const std::string source = read_file(std::filesystem::path(WICK_TESTS_DIR) / "data" /
                                       "chat_templates" / "qwen2.5.jinja");
  return cli::ServedModel{"qwen",
                          Tokenizer::from_vocab(tokens, {}, {}, {}, "gpt-2"),
                          ChatTemplate::from_jinja(source, "", "<|im_end|>"),
                          false,
                          {},
                          {},
                          4096,
                          16};
}

std::string prompt_text(const cli::ServedModel& m, const cli::ApiRequest& r) {
  const std::vector<int32_t> ids(r.gen.prompt.begin(), r.gen.prompt.end());
  return m.tokenizer.decode(ids);
}

// Key order as a client wrote it ("type" before "function"), which a sorted parse would lose.
constexpr const char* kTools =
    R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather.",)"
    R"( "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])";

TEST(ServeApi, ToolsGoToTheTemplateInTheBodysOrder) {
  const cli::ServedModel m = served_qwen();
  const std::string messages =
      R"([{"role": "user", "content": "Weather in Paris?"},)"
      R"( {"role": "assistant", "content": null, "tool_calls": [{"id": "abc123XYZ",)"
      R"( "type": "function", "function": {"name": "get_weather",)"
      R"( "arguments": "{\"city\": \"Paris\"}"}}]},)"
      R"( {"role": "tool", "tool_call_id": "abc123XYZ", "content": "sunny"}])";
  const cli::ApiRequest r = cli::parse_api_request(
      std::string(R"({"messages": )") + messages + R"(, "tools": )" + kTools + "}", true, m);
  EXPECT_TRUE(r.parse_tools);
  // What the template renders from the same JSON: content null as "", arguments as an object.
  const std::string want = m.chat_template.apply_json(
      R"([{"role": "user", "content": "Weather in Paris?"},)"
      R"( {"role": "assistant", "content": "", "tool_calls": [{"id": "abc123XYZ",)"
      R"( "type": "function", "function": {"name": "get_weather",)"
      R"( "arguments": {"city": "Paris"}}}]},)"
      R"( {"role": "tool", "tool_call_id": "abc123XYZ", "content": "sunny"}])",
      kTools, true);
  const std::string got = prompt_text(m, r);
  EXPECT_EQ(got, want);
  expect_has(got, R"({"type": "function", "function": {"name": "get_weather")");
  expect_has(got, R"({"name": "get_weather", "arguments": {"city": "Paris"}})");
  expect_has(got, "<tool_response>\nsunny\n</tool_response>");

  // tool_choice "none": no tools in the prompt, no parsing; a call cannot be forced.
  const cli::ApiRequest none = cli::parse_api_request(
      std::string(R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "none",)") +
          R"( "tools": )" + kTools + "}",
      true, m);
  EXPECT_FALSE(none.parse_tools);
  EXPECT_EQ(prompt_text(m, none).find("get_weather"), std::string::npos);
  const auto refused = [&](const std::string& body, const std::string& param) {
    try {
      cli::parse_api_request(body, true, m);
      ADD_FAILURE() << "accepted " << body;
    } catch (const cli::ApiError& e) {
      EXPECT_EQ(e.param, param) << e.what();
    }
  };
  const std::string user = R"({"messages": [{"role": "user", "content": "hi"}], )";
  refused(user + R"("tools": )" + kTools + R"(, "tool_choice": "required"})", "tool_choice");
  refused(user + R"("tools": {"type": "function"}})", "tools");
  refused(user + R"("tools": [{"type": "function", "function": {"description": "x"}}]})", "tools");
  refused(R"({"messages": [{"role": "assistant", "tool_calls": 5}], "tools": )" +
              std::string(kTools) + "}",
          "messages[0].tool_calls");
}

TEST(ServeApi, AnswersWithToolCallsComeBackAsToolCalls) {
  const cli::ServedModel m = served_qwen();
  const cli::ApiRequest r = cli::parse_api_request(
      std::string(R"({"messages": [{"role": "user", "content": "hi"}], "tools": )") + kTools + "}",
      true, m);
  const std::vector<cli::ChoiceResult> choices = {
      {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Oslo\"}}\n</tool_call>",
       cli::FinishReason::Stop,
       20,
       {}},
      {"It is sunny.", cli::FinishReason::Stop, 4, {}},
      {"<tool_call>\n{\"name\": \"get_weather\", \"arg", cli::FinishReason::Length, 16, {}}};
  const json a = cli::answer_json(r, "chatcmpl-1", 0, "qwen", choices, 9);
  const json& call = a["choices"][0];
  EXPECT_EQ(call["finish_reason"], "tool_calls");
  EXPECT_TRUE(call["message"]["content"].is_null());
  ASSERT_EQ(call["message"]["tool_calls"].size(), 1u);
  const json& tc = call["message"]["tool_calls"][0];
  EXPECT_EQ(tc["type"], "function");
  EXPECT_EQ(tc["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(tc["function"]["arguments"].get<std::string>()), json({{"city", "Oslo"}}));
  const std::string id = tc["id"];
  EXPECT_EQ(id.size(), 9u);
  for (const char ch : id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch))) << id;
  EXPECT_EQ(a["choices"][1]["finish_reason"], "stop");
  EXPECT_EQ(a["choices"][1]["message"]["content"], "It is sunny.");
  EXPECT_FALSE(a["choices"][1]["message"].contains("tool_calls"));
  // Cut by max_tokens inside a call: text, "length".
  EXPECT_EQ(a["choices"][2]["finish_reason"], "length");
  EXPECT_FALSE(a["choices"][2]["message"].contains("tool_calls"));
  EXPECT_EQ(a["usage"]["completion_tokens"], 40);
  // Streamed: the calls in one chunk, each with its index.
  const json chunk =
      cli::tool_calls_chunk_json("chatcmpl-1", 0, "qwen", 2, call["message"]["tool_calls"]);
  EXPECT_EQ(chunk["choices"][0]["index"], 2);
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["name"], "get_weather");
}

}  // namespace
}  // namespace wick::testing
