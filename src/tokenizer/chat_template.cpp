// Chat templates, rendered by llama.cpp's Jinja engine (third_party/llama-jinja): the template is
// lexed and parsed once, and every apply() runs the program in a fresh context.
#include <memory>

#include "llama-jinja/jinja/lexer.h"
#include "llama-jinja/jinja/parser.h"
#include "llama-jinja/jinja/runtime.h"
#include "llama-jinja/jinja/value.h"
#include "llama-jinja/json.h"
#include "wick/error.h"
#include "wick/tokenizer.h"

namespace wick {

struct ChatTemplate::Impl {
  std::string source;
  std::string bos_token, eos_token;
  jinja::program program;
};

namespace {

// ChatML as Qwen2.5 and SmolLM2 write it, without their default system prompts.
constexpr std::string_view kChatML =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Runs the template over messages and tools (null: undefined).
std::string render(const ChatTemplate::Impl& impl, common_json messages, common_json tools,
                   bool add_generation_prompt) {
  const size_t count = messages.size();
  try {
    common_json input = common_json::object();
    input["messages"] = std::move(messages);
    if (!tools.is_null()) input["tools"] = std::move(tools);
    input["add_generation_prompt"] = add_generation_prompt;
    input["bos_token"] = impl.bos_token;
    input["eos_token"] = impl.eos_token;
    jinja::context ctx(impl.source);
    jinja::global_from_json(ctx, input, /*mark_input=*/false);
    jinja::runtime runtime(ctx);
    const jinja::value out = runtime.execute(impl.program);
    const jinja::walk_output_limit_scope limit(ctx.exec->limits.max_string);
    return jinja::runtime::gather_string_parts(out)->as_string().str();
  } catch (const jinja::limit_exceeded& e) {
    fail(ErrorKind::Unsupported, "ChatTemplate::apply",
         "the chat template ran past a limit of wick's on the ", count,
         "-message conversation (a template that loops or recurses without end, or "
         "makes a huge text?): ",
         e.what());
  } catch (const std::exception& e) {
    fail(ErrorKind::Unsupported, "ChatTemplate::apply", "the chat template refused the ", count,
         "-message conversation: ", e.what());
  }
}

}  // namespace

ChatTemplate::ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

ChatTemplate ChatTemplate::from_jinja(std::string_view source, std::string bos_token,
                                      std::string eos_token) {
  auto impl = std::make_shared<Impl>();
  impl->source = std::string(source);
  impl->bos_token = std::move(bos_token);
  impl->eos_token = std::move(eos_token);
  try {
    jinja::lexer lexer;
    impl->program = jinja::parse_from_tokens(lexer.tokenize(impl->source));
  } catch (const std::exception& e) {
    fail(ErrorKind::Parse, "ChatTemplate::from_jinja", "the template does not parse: ", e.what());
  }
  return ChatTemplate(std::move(impl));
}

ChatTemplate ChatTemplate::chatml() {
  return from_jinja(kChatML);
}

const std::string& ChatTemplate::source() const {
  return impl_->source;
}

std::string ChatTemplate::apply(std::span<const ChatMessage> messages,
                                bool add_generation_prompt) const {
  common_json list = common_json::array();
  for (const ChatMessage& m : messages)
    list.push_back(common_json::object({{"role", m.role}, {"content", m.content}}));
  return render(*impl_, std::move(list), common_json(), add_generation_prompt);
}

std::string ChatTemplate::apply_json(std::string_view messages_json, std::string_view tools_json,
                                     bool add_generation_prompt) const {
  const auto parse = [](std::string_view text, const char* what) {
    common_json j = common_json::parse_no_throw(std::string(text));
    if (j.is_discarded() || !j.is_array())
      fail(ErrorKind::Parse, "ChatTemplate::apply_json", what, " must be a JSON array");
    return j;
  };
  common_json messages = parse(messages_json, "the messages");
  common_json tools = tools_json.empty() ? common_json() : parse(tools_json, "the tools");
  return render(*impl_, std::move(messages), std::move(tools), add_generation_prompt);
}

}  // namespace wick
