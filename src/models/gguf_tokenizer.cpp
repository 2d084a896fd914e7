// The tokenizer and chat template stored in a GGUF file's metadata (llama.cpp's tokenizer.ggml.*
// keys). Only byte-level BPE ("gpt2") vocabularies are understood.
#include <algorithm>

#include "io/file.h"
#include "models/gguf_keys.h"
#include "wick/gguf.h"
#include "wick/llama.h"

namespace wick {

Tokenizer load_gguf_tokenizer(const GgufFile& f) {
  const char* op = "load_gguf_tokenizer";
  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (!model)
    fail(ErrorKind::Parse, op, f.name(),
         ": no tokenizer.ggml.model key (the file carries no tokenizer)");
  if (model->as_string() != "gpt2")
    fail(ErrorKind::Unsupported, op, f.name(), ": tokenizer model '",
         io::excerpt(model->as_string()), "' (only byte-level BPE, 'gpt2', is implemented)");
  std::vector<std::string> tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  std::vector<std::string> merges = f.get_array<std::string>("tokenizer.ggml.merges");
  std::vector<int32_t> types;
  if (f.find("tokenizer.ggml.token_type"))
    types = f.get_array<int32_t>("tokenizer.ggml.token_type");
  if (tokens.empty()) fail(ErrorKind::Parse, op, f.name(), ": tokenizer.ggml.tokens is empty");
  // Checked in int64 before narrowing to int32 (the vocabulary is at most INT32_MAX tokens).
  const int64_t last_id = std::min<int64_t>(static_cast<int64_t>(tokens.size()) - 1, INT32_MAX);
  const auto id = [&](std::string_view key) {
    return static_cast<int32_t>(models::int_key(f, op, key, 0, last_id, -1));
  };
  SpecialTokens special;
  special.bos = id("tokenizer.ggml.bos_token_id");
  special.eos = id("tokenizer.ggml.eos_token_id");
  special.pad = id("tokenizer.ggml.padding_token_id");
  special.unk = id("tokenizer.ggml.unknown_token_id");
  const GgufValue* pre = f.find("tokenizer.ggml.pre");
  const std::string pre_name = pre ? pre->as_string() : "gpt2";
  return Tokenizer::from_vocab(std::move(tokens), std::move(merges), std::move(types), special,
                               pre_name);
}

bool gguf_adds_bos(const GgufFile& f) {
  const GgufValue* v = f.find("tokenizer.ggml.add_bos_token");
  return v && v->is<bool>() && v->as<bool>();
}

ChatTemplate load_gguf_chat_template(const GgufFile& f) {
  const GgufValue* v = f.find("tokenizer.chat_template");
  if (!v) return ChatTemplate();
  return ChatTemplate::from_jinja(v->as_string());
}

}  // namespace wick
