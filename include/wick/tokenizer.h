// Tokenizers: byte-level BPE (GPT-2 family: Llama 3, Qwen2, SmolLM2, DeepSeek, ...) with
// llama.cpp's pre-tokenizers, SentencePiece (GGUF tokenizer.ggml.model "llama": Llama 2, Mistral,
// Phi-3) and the SentencePiece-style BPE of HF tokenizer.json files; a streaming decoder and chat
// templates (Jinja). Built from plain data (GGUF tokenizer.ggml.* arrays) or an HF
// tokenizer.json; nothing here reads model files or the network.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wick {

// Token kinds, numbered as GGUF's tokenizer.ggml.token_type stores them.
enum class TokenType : int32_t {
  Normal = 1,
  Unknown = 2,
  Control = 3,      // special token (<|im_start|>): matched in text only when encode() allows it
  UserDefined = 4,  // added token: always matched in text, never split
  Unused = 5,
  Byte = 6,
};

// Ids of the tokens a model gives roles to; -1 where it has none.
struct SpecialTokens {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t pad = -1;
  int32_t unk = -1;
};

namespace tokenizer_detail {
struct Model;
}

class Tokenizer {
 public:
  // Byte-level BPE. tokens[id] in byte-level form ("Ġthe"), merges by rank ("Ġ t"),
  // token_types[id] as GGUF numbers (empty: all Normal). pre_tokenizer is llama.cpp's
  // tokenizer.ggml.pre name, which picks its split regexes: "default", "gpt-2", "llama-bpe",
  // "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder", "smollm", "command-r", ...
  // (wick's "gpt2" is "gpt-2"). Throws Error(Parse) on malformed data and Error(Unsupported)
  // naming an unknown pre-tokenizer.
  static Tokenizer from_vocab(std::vector<std::string> tokens, std::vector<std::string> merges,
                              std::vector<int32_t> token_types, SpecialTokens special,
                              std::string_view pre_tokenizer);
  // SentencePiece BPE, encoded as llama.cpp does: tokens in SentencePiece form ("▁the", byte
  // tokens "<0x0A>" of type Byte), scores[id] (higher merges first), token_types as GGUF numbers.
  // Spaces become '▁'; add_space_prefix puts one before the text and after every added token
  // (GGUF tokenizer.ggml.add_space_prefix, default true); characters outside the vocabulary
  // become their bytes' tokens, else special.unk. Decoding drops that leading space again.
  static Tokenizer from_spm_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                  std::vector<int32_t> token_types, SpecialTokens special,
                                  bool add_space_prefix = true);
  // HF tokenizer.json text: a BPE model that is byte-level (pre_tokenizer ByteLevel, alone or
  // after Split(Regex)/Digits steps) or SentencePiece-style (byte_fallback, with a Metaspace
  // pre-tokenizer or Prepend/Replace '▁' normalizers). Anything else that would change the ids
  // is Error(Unsupported). The optional tokenizer_config.json text names bos/eos/pad/unk; without
  // it they stay -1 (unk: the model's unk_token).
  static Tokenizer from_hf_json(std::string_view tokenizer_json,
                                std::string_view tokenizer_config_json = {});
  static Tokenizer from_hf_json_file(const std::string& tokenizer_json_path,
                                     const std::string& tokenizer_config_path = {});

  // Text -> ids. Invalid UTF-8 is first replaced by U+FFFD (one per maximal ill-formed subpart, as
  // Python's and Rust's lossy decoders do). Control (and unknown) tokens written in the text
  // become their ids only when allow_special; otherwise they are tokenized as plain text.
  std::vector<int32_t> encode(std::string_view text, bool allow_special = false) const;
  // Ids -> UTF-8 text; byte sequences that are not valid UTF-8 become U+FFFD. Control tokens are
  // rendered as their text unless skip_special. Byte tokens (<0xNN>) stand for their byte. Throws
  // Error(OutOfRange) on an unknown id.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // Ids -> the raw bytes they stand for (possibly invalid UTF-8, e.g. half a character).
  std::string decode_bytes(std::span<const int32_t> ids, bool skip_special = false) const;

  int32_t vocab_size() const;
  const SpecialTokens& special_tokens() const;
  int32_t bos_id() const { return special_tokens().bos; }
  int32_t eos_id() const { return special_tokens().eos; }
  // The token as stored ("Ġthe", "▁the"); Error(OutOfRange) for an unknown id.
  const std::string& token(int32_t id) const;
  // Id of a stored token string, or -1.
  int32_t token_id(std::string_view token) const;
  TokenType token_type(int32_t id) const;
  bool is_control(int32_t id) const { return token_type(id) == TokenType::Control; }

 private:
  explicit Tokenizer(std::shared_ptr<const tokenizer_detail::Model> model);
  static Tokenizer from_parsed_hf_json(std::string_view tokenizer_json,
                                       std::string_view tokenizer_config_json);
  std::shared_ptr<const tokenizer_detail::Model> model_;
  friend class TokenStreamer;
};

// Decodes ids one at a time, returning only text that is complete: a character whose bytes are
// split across tokens comes out whole with the token that completes it. The concatenation of every
// push() and finish() equals decode() of all the ids.
class TokenStreamer {
 public:
  explicit TokenStreamer(const Tokenizer& tokenizer, bool skip_special = false);
  std::string push(int32_t id);
  // Flushes bytes still waiting for the rest of a character (as U+FFFD) and resets the streamer.
  std::string finish();

 private:
  std::shared_ptr<const tokenizer_detail::Model> model_;
  bool skip_special_;
  std::string pending_;   // bytes of a character not yet complete
  bool at_start_ = true;  // nothing emitted yet (a SentencePiece leading space is dropped)
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// A chat template: the Jinja program of a model's tokenizer.chat_template (GGUF) or
// tokenizer_config.json "chat_template", rendered by a Jinja engine (llama.cpp's, vendored under
// third_party/llama-jinja) as Hugging Face's transformers renders it: trim_blocks and
// lstrip_blocks, with `messages` (role/content objects), `add_generation_prompt`, `bos_token`,
// `eos_token`, and the extras templates call (`raise_exception`, `strftime_now`, `tojson`, ...).
class ChatTemplate {
 public:
  // Parses `source`; Error(Parse) naming the place for a template that does not parse.
  // bos_token / eos_token are the texts of the model's tokens (empty when it has none).
  static ChatTemplate from_jinja(std::string_view source, std::string bos_token = {},
                                 std::string eos_token = {});
  // ChatML (<|im_start|>role\ncontent<|im_end|>\n per message, "<|im_start|>assistant\n" as the
  // generation prompt): the fallback for a model file without a template.
  static ChatTemplate chatml();

  // The rendered conversation. Error(Unsupported) with the template's message when it refuses the
  // conversation (raise_exception: roles that do not alternate, a system turn it cannot hold...).
  std::string apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  // The same with the messages given as a JSON array of OpenAI's shape (as transformers passes
  // them: a message may carry tool_calls, tool_call_id, name...) and `tools_json` the tools' JSON
  // array (empty: `tools` stays undefined), for templates that render tool definitions, calls and
  // results. Error(Parse) when either is not a JSON array.
  std::string apply_json(std::string_view messages_json, std::string_view tools_json,
                         bool add_generation_prompt) const;
  const std::string& source() const;

  struct Impl;

 private:
  explicit ChatTemplate(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace wick
