#include "serve_api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>
#include <unordered_set>

#include "io/file.h"
#include "tool_calls.h"

namespace wick::cli {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, "'" + param + "' " + message, param);
}

// A refused value as an error message shows it: numbers, booleans and short strings whole; a long
// string's start; an array or object by its size (a body may be megabytes: the answer stays short).
std::string shown(const json& v) {
  constexpr size_t kShownChars = 48;
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " elements";
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " members";
  if (!v.is_string() || v.get_ref<const std::string&>().size() <= kShownChars) return v.dump();
  const std::string& text = v.get_ref<const std::string&>();
  size_t cut = kShownChars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) cut--;  // whole chars
  return json(text.substr(0, cut)).dump() + "... (a string of " + std::to_string(text.size()) +
         " bytes)";
}

// The field if present and not null.
const json* field(const json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& body, const char* name, double dflt, double lo, double hi,
              bool lo_open = false) {
  const json* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_number()) bad(name, "must be a number, got " + std::string(v->type_name()));
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
    bad(name, "is " + shown(*v) + ", want a number in " + (lo_open ? "(" : "[") + json(lo).dump() +
                  ", " + (std::isinf(hi) ? "inf)" : json(hi).dump() + "]"));
  return x;
}

int64_t integer(const json& body, const char* name, int64_t dflt, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_number_integer()) bad(name, "must be an integer, got " + shown(*v));
  // Parsed non-negative integers are unsigned, which may not fit int64.
  const bool in_range = v->is_number_unsigned()
                            ? v->get<uint64_t>() <= static_cast<uint64_t>(hi) &&
                                  static_cast<int64_t>(v->get<uint64_t>()) >= lo
                            : v->get<int64_t>() >= lo && v->get<int64_t>() <= hi;
  if (!in_range)
    bad(name, "is " + shown(*v) + ", want " + std::to_string(lo) + " to " + std::to_string(hi));
  return v->get<int64_t>();
}

bool boolean(const json& body, const char* name, bool dflt) {
  const json* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_boolean()) bad(name, "must be true or false, got " + shown(*v));
  return v->get<bool>();
}

// Options wick does not implement are refused unless they ask for the default.
void refuse_unless_default(const json& body) {
  if (integer(body, "best_of", 1, 1, 1) != 1) bad("best_of", "must be 1");
  if (const json* v = field(body, "suffix");
      v && !(v->is_string() && v->get<std::string>().empty()))
    bad("suffix", "is not supported");
}

std::string text_content(const json& content, size_t i) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad(param, "must be a string or an array of text parts");
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
        !part["text"].is_string())
      bad(param, "has a part that is not {\"type\": \"text\", \"text\": STRING}");
    text += part["text"].get<std::string>();
  }
  return text;
}

std::vector<ChatMessage> chat_messages(const json& body) {
  const json* m = field(body, "messages");
  if (!m) bad("messages", "is required");
  if (!m->is_array() || m->empty()) bad("messages", "must be a non-empty array");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < m->size(); i++) {
    const json& msg = (*m)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) bad(p, "must be an object");
    const auto role = msg.find("role");
    if (role == msg.end() || !role->is_string()) bad(p + ".role", "must be a string");
    // An assistant turn of tool calls may leave its content out.
    if (!msg.contains("content") && !msg.contains("tool_calls")) bad(p + ".content", "is required");
    out.push_back({role->get<std::string>(), text_content(msg.value("content", json()), i)});
  }
  return out;
}

std::vector<uint32_t> tokenize(const ServedModel& m, const std::string& text) {
  std::vector<uint32_t> ids;
  if (m.add_bos && m.tokenizer.bos_id() >= 0)
    ids.push_back(static_cast<uint32_t>(m.tokenizer.bos_id()));
  for (int32_t id : m.tokenizer.encode(text, /*allow_special=*/true))
    ids.push_back(static_cast<uint32_t>(id));
  return ids;
}

// A completion's prompt: a string, one string in an array, or token ids.
std::vector<uint32_t> completion_prompt(const json& body, const ServedModel& m) {
  const json* p = field(body, "prompt");
  if (!p) bad("prompt", "is required");
  if (p->is_string()) return tokenize(m, p->get<std::string>());
  if (p->is_array() && p->size() == 1 && (*p)[0].is_string())
    return tokenize(m, (*p)[0].get<std::string>());
  if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
    std::vector<uint32_t> ids;
    for (const json& t : *p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() >= m.tokenizer.vocab_size())
        bad("prompt", "has token " + shown(t) + ", want ids 0 to " +
                          std::to_string(m.tokenizer.vocab_size() - 1));
      ids.push_back(t.get<uint32_t>());
    }
    return ids;
  }
  bad("prompt", "must be a string, an array of one string, or an array of token ids");
}

// Tools of OpenAI's shape: [{"type": "function", "function": {"name": STRING, ...}}, ...].
void check_tools(const json& tools) {
  if (!tools.is_array()) bad("tools", "must be an array");
  for (size_t i = 0; i < tools.size(); i++) {
    const json& t = tools[i];
    if (!t.is_object() || t.value("type", json()) != "function" || !t.contains("function") ||
        !t["function"].is_object() || !t["function"].contains("name") ||
        !t["function"]["name"].is_string())
      bad("tools", "[" + std::to_string(i) +
                       "] is not {\"type\": \"function\", \"function\": {\"name\": STRING, ...}}");
  }
}

// The conversation as the template's JSON, in the body's key order (a template's tojson writes
// them so): contents as text, tool calls' arguments as objects (as transformers passes them).
std::string template_messages(nlohmann::ordered_json messages,
                              const std::vector<ChatMessage>& texts) {
  for (size_t i = 0; i < messages.size(); i++) {
    auto& m = messages[i];
    m["content"] = texts[i].content;
    if (!m.contains("tool_calls")) continue;
    if (!m["tool_calls"].is_array())
      bad("messages[" + std::to_string(i) + "].tool_calls", "must be an array");
    for (auto& call : m["tool_calls"]) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
        bad("messages[" + std::to_string(i) + "].tool_calls",
            "holds a call without {\"function\": {...}}");
      auto& args = call["function"]["arguments"];
      if (args.is_string()) {
        auto parsed = nlohmann::ordered_json::parse(args.get<std::string>(), nullptr, false);
        if (!parsed.is_discarded() && parsed.is_object()) args = std::move(parsed);
      }
    }
  }
  return messages.dump();
}

// OpenAI's {"token id": bias in [-100, 100]}.
std::vector<std::pair<uint32_t, double>> logit_bias(const json& body, const ServedModel& m) {
  const json* v = field(body, "logit_bias");
  if (!v) return {};
  if (!v->is_object()) bad("logit_bias", "must be an object of token ids to numbers");
  std::vector<std::pair<uint32_t, double>> out;
  std::unordered_set<uint32_t> seen;  // "7" and "07" name one token
  for (const auto& [key, bias] : v->items()) {
    uint32_t id = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (key.empty() || ec != std::errc() || end != key.data() + key.size() ||
        id >= static_cast<uint32_t>(m.tokenizer.vocab_size()))
      bad("logit_bias", "has key " + shown(json(key)) + ", want token ids 0 to " +
                            std::to_string(m.tokenizer.vocab_size() - 1) + " in decimal");
    if (!bias.is_number() || !std::isfinite(bias.get<double>()) || bias.get<double>() < -100 ||
        bias.get<double>() > 100)
      bad("logit_bias",
          "has " + shown(bias) + " for token " + key + ", want a number in [-100, 100]");
    if (!seen.insert(id).second) bad("logit_bias", "names token " + std::to_string(id) + " twice");
    out.emplace_back(id, bias.get<double>());
  }
  return out;
}

// Completions: "logprobs": 0-5 alternatives; chat: "logprobs": true with "top_logprobs": 0-20.
int64_t logprobs_wanted(const json& body, bool chat) {
  if (!chat) return integer(body, "logprobs", -1, 0, 5);
  const bool on = boolean(body, "logprobs", false);
  if (field(body, "top_logprobs") && !on) bad("top_logprobs", "needs \"logprobs\": true");
  return on ? integer(body, "top_logprobs", 0, 0, 20) : -1;
}

std::vector<std::string> stop_strings(const json& body) {
  const json* v = field(body, "stop");
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array() || v->size() > 4) bad("stop", "must be a string or up to 4 strings");
  std::vector<std::string> out;
  for (const json& s : *v) {
    if (!s.is_string()) bad("stop", "must hold strings only, got " + shown(s));
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

ApiRequest parse_api_request(const std::string& body_text, bool chat, const ServedModel& m) {
  if (const size_t d = io::json_nesting_depth(body_text); d > io::kMaxJsonNesting)
    throw ApiError(400, "the body nests arrays and objects " + std::to_string(d) +
                            " deep, more than " + std::to_string(io::kMaxJsonNesting));
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::parse_error& e) {
    throw ApiError(400, std::string("the body is not JSON: ") + e.what());
  }
  if (!body.is_object()) throw ApiError(400, "the body must be a JSON object");
  if (const json* v = field(body, "model"); v && !v->is_string()) bad("model", "must be a string");
  refuse_unless_default(body);

  ApiRequest r;
  r.chat = chat;
  r.stream = boolean(body, "stream", false);
  r.n = integer(body, "n", 1, 1, kMaxChoices);
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) bad("stream_options", "must be an object");
    r.include_usage = boolean(*so, "include_usage", false);
  }
  GenRequest& g = r.gen;
  const int64_t room = m.context - 1;
  const char* max_name =
      field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  // A completion's echo: the prompt is part of the answer (its text, and with logprobs its
  // tokens' log-probabilities); max_tokens 0 then only scores the prompt.
  r.echo = !chat && boolean(body, "echo", false);
  if (chat && field(body, "echo")) bad("echo", "is for /v1/completions");
  g.max_tokens = integer(body, max_name, m.default_max_tokens, r.echo ? 0 : 1, INT32_MAX);
  SamplingOptions& s = g.sampling;
  s.temperature = number(body, "temperature", 1.0, 0, 2);
  s.top_p = number(body, "top_p", 1.0, 0, 1, /*lo_open=*/true);
  s.top_k = integer(body, "top_k", 0, 0, INT32_MAX);
  s.min_p = number(body, "min_p", 0.0, 0, 1);
  s.repeat_penalty = number(body, "repeat_penalty", 1.0, 0, 1e9, /*lo_open=*/true);
  s.repeat_last_n = integer(body, "repeat_last_n", 64, 0, INT32_MAX);
  s.frequency_penalty = number(body, "frequency_penalty", 0.0, -2, 2);
  s.presence_penalty = number(body, "presence_penalty", 0.0, -2, 2);
  s.logit_bias = logit_bias(body, m);
  g.logprobs = logprobs_wanted(body, chat);
  if (const json* v = field(body, "seed")) {
    if (!v->is_number_integer()) bad("seed", "must be an integer, got " + shown(*v));
    s.seed =
        v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
  }
  g.stops = stop_strings(body);

  if (chat) {
    const std::vector<ChatMessage> messages = chat_messages(body);
    // Tools go to the template (which writes their definitions), unless tool_choice is "none";
    // wick cannot force a call ("required", a named function).
    const json* tools = field(body, "tools");
    if (tools) check_tools(*tools);
    std::string tool_choice = "auto";
    if (const json* tc = field(body, "tool_choice")) {
      if (!tc->is_string() || (*tc != "auto" && *tc != "none"))
        bad("tool_choice",
            "is " + shown(*tc) + ": only \"auto\" and \"none\" (wick cannot force a call)");
      tool_choice = tc->get<std::string>();
    }
    r.parse_tools = tools && !tools->empty() && tool_choice == "auto";
    bool structured = r.parse_tools;
    for (const json& msg : body["messages"])
      structured = structured || msg.contains("tool_calls") || msg.value("role", json()) == "tool";
    std::string text;
    try {
      if (structured) {
        // The body again, keeping its key order (`body` sorts them).
        const auto ordered = nlohmann::ordered_json::parse(body_text);
        text = m.chat_template.apply_json(template_messages(ordered["messages"], messages),
                                          r.parse_tools ? ordered["tools"].dump() : "",
                                          /*add_generation_prompt=*/true);
      } else {
        text = m.chat_template.apply(messages, /*add_generation_prompt=*/true);
      }
    } catch (const Error& e) {
      throw ApiError(400, std::string("the chat template refuses the messages: ") + e.what(),
                     "messages");
    }
    g.prompt = tokenize(m, text);
    g.end_ids = m.end_of_turn_ids;
  } else {
    g.prompt = completion_prompt(body, m);
    g.end_ids = m.eos_ids;
    if (r.echo) {
      const json& p = body["prompt"];
      if (p.is_string() || (p.is_array() && p[0].is_string())) {
        r.prompt_text = p.is_string() ? p.get<std::string>() : p[0].get<std::string>();
      } else {
        std::vector<int32_t> ids(g.prompt.begin(), g.prompt.end());
        r.prompt_text = m.tokenizer.decode(ids, /*skip_special=*/false);
      }
      g.prompt_logprobs = g.logprobs >= 0;
    }
  }
  // llama.cpp's extension: answers of a set length (benchmarks).
  if (boolean(body, "ignore_eos", false)) g.end_ids.clear();
  if (g.prompt.empty()) bad(chat ? "messages" : "prompt", "encodes to no tokens");
  if (static_cast<int64_t>(g.prompt.size()) > room)
    bad(chat ? "messages" : "prompt", "is " + std::to_string(g.prompt.size()) +
                                          " tokens; a slot's context of " +
                                          std::to_string(m.context) + " holds at most " +
                                          std::to_string(room) + " with one token of answer");
  return r;
}

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_body(const std::string& message, const std::string& type,
                       const std::string& param) {
  return dump_json(json{{"error",
                         {{"message", message},
                          {"type", type},
                          {"param", param.empty() ? json() : json(param)},
                          {"code", json()}}}});
}

namespace {

json finish_value(FinishReason f) {
  return f == FinishReason::None ? json() : json(finish_reason_name(f));
}

// -inf (a banned token) as OpenAI shows the least likely: -9999.
double shown_logprob(double lp) {
  return std::max(lp, -9999.0);
}

json shown_logprob(const TokenLogprob& t) {
  return t.has_logprob ? json(shown_logprob(t.logprob)) : json();
}

json token_bytes(const std::string& t) {
  json out = json::array();
  for (const unsigned char c : t) out.push_back(c);
  return out;
}

// The choice's "logprobs": chat's {"content": [...]}, completions' parallel arrays (their
// text_offset counted from `offset`, the answer's bytes before these tokens); null when not asked.
json logprobs_json(const ApiRequest& r, const std::vector<TokenLogprob>& lps, size_t offset) {
  if (r.gen.logprobs < 0) return json();
  if (r.chat) {
    json content = json::array();
    for (const TokenLogprob& t : lps) {
      json top = json::array();
      for (const auto& [tok, lp] : t.top)
        top.push_back(
            {{"token", tok}, {"logprob", shown_logprob(lp)}, {"bytes", token_bytes(tok)}});
      content.push_back({{"token", t.token},
                         {"logprob", shown_logprob(t)},
                         {"bytes", token_bytes(t.token)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", json()}};
  }
  json tokens = json::array(), values = json::array(), tops = json::array(),
       offsets = json::array();
  for (const TokenLogprob& t : lps) {
    tokens.push_back(t.token);
    values.push_back(shown_logprob(t));
    json top = json::object();
    for (const auto& [tok, lp] : t.top) top[tok] = shown_logprob(lp);
    tops.push_back(t.has_logprob ? top : json());
    offsets.push_back(offset);
    offset += t.token.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", values},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

json usage(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

}  // namespace

ToolAnswer tool_answer(const std::string& text, FinishReason finish) {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex rng_mu;
  const ParsedAnswer parsed = parse_tool_calls(text);
  ToolAnswer out;
  out.finish = finish;
  if (parsed.calls.empty()) {
    out.content = text;
    return out;
  }
  out.content = parsed.content;
  if (finish == FinishReason::Stop) out.finish = FinishReason::ToolCalls;
  constexpr std::string_view kAlnum =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (const ToolCall& c : parsed.calls) {
    std::string call_id(9, 'a');
    {
      std::lock_guard lk(rng_mu);
      for (char& ch : call_id) ch = kAlnum[rng() % kAlnum.size()];
    }
    out.tool_calls.push_back({{"id", call_id},
                              {"type", "function"},
                              {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

json tool_calls_chunk_json(const std::string& id, int64_t created, const std::string& model,
                           int64_t index, const json& tool_calls) {
  json calls = json::array();
  for (size_t i = 0; i < tool_calls.size(); i++) {
    json c = tool_calls[i];
    c["index"] = i;
    calls.push_back(std::move(c));
  }
  json choice = {{"index", index},
                 {"finish_reason", json()},
                 {"delta", {{"tool_calls", calls}}},
                 {"logprobs", json()}};
  return {{"id", id},
          {"object", "chat.completion.chunk"},
          {"created", created},
          {"model", model},
          {"choices", json::array({choice})}};
}

json answer_json(const ApiRequest& r, const std::string& id, int64_t created,
                 const std::string& model, const std::vector<ChoiceResult>& choices,
                 int64_t prompt_tokens) {
  json out = json::array();
  int64_t completion_tokens = 0;
  for (size_t i = 0; i < choices.size(); i++) {
    const ChoiceResult& c = choices[i];
    json choice = {{"index", i}, {"finish_reason", finish_value(c.finish)}};
    if (r.chat && r.parse_tools) {
      const ToolAnswer t = tool_answer(c.text, c.finish);
      choice["finish_reason"] = finish_value(t.finish);
      choice["message"] = {
          {"role", "assistant"},
          {"content", t.tool_calls.empty() || !t.content.empty() ? json(t.content) : json()}};
      if (!t.tool_calls.empty()) choice["message"]["tool_calls"] = t.tool_calls;
    } else if (r.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = r.echo ? r.prompt_text + c.text : c.text;
    }
    choice["logprobs"] = logprobs_json(r, c.logprobs, 0);
    out.push_back(std::move(choice));
    completion_tokens += c.completion_tokens;
  }
  return {{"id", id},           {"object", r.chat ? "chat.completion" : "text_completion"},
          {"created", created}, {"model", model},
          {"choices", out},     {"usage", usage(prompt_tokens, completion_tokens)}};
}

json chunk_json(const ApiRequest& r, const std::string& id, int64_t created,
                const std::string& model, const std::string* text, bool first, FinishReason finish,
                const std::vector<TokenLogprob>& logprobs, size_t text_offset, int64_t index) {
  json choice = {{"index", index}, {"finish_reason", finish_value(finish)}};
  if (r.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (text) delta["content"] = *text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text ? *text : std::string();
  }
  choice["logprobs"] = logprobs.empty() ? json() : logprobs_json(r, logprobs, text_offset);
  return {{"id", id},
          {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array({choice})}};
}

json usage_chunk_json(const ApiRequest& r, const std::string& id, int64_t created,
                      const std::string& model, int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"id", id},
          {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array()},
          {"usage", usage(prompt_tokens, completion_tokens)}};
}

std::string sse_event(const json& j) {
  return "data: " + dump_json(j) + "\n\n";
}

}  // namespace wick::cli
