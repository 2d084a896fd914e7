// The tokenizer and chat template stored in a GGUF file's metadata (llama.cpp's tokenizer.ggml.*
// keys): byte-level BPE ("gpt2") and SentencePiece ("llama") vocabularies; the Jinja chat template.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "models/gguf_keys.h"
#include "wick/gguf.h"
#include "wick/llama.h"

namespace wick {

Tokenizer load_gguf_tokenizer(const GgufFile& f) {
  const char* op = "load_gguf_tokenizer";
  const GgufValue* model = f.find("tokenizer.ggml.model");
  // GGUF's tokenizer.huggingface.json: a whole HF tokenizer.json (what a Hugging Face folder's
  // assembled file carries), its special tokens in tokenizer.huggingface.config.
  const GgufValue* hf = f.find("tokenizer.huggingface.json");
  if (!model && hf && hf->is<std::string>()) {
    const GgufValue* config = f.find("tokenizer.huggingface.config");
    return Tokenizer::from_hf_json(hf->as_string(), config && config->is<std::string>()
                                                        ? std::string_view(config->as_string())
                                                        : std::string_view());
  }
  if (!model)
    fail(ErrorKind::Parse, op, f.name(),
         ": no tokenizer.ggml.model key (the file carries no tokenizer)");
  const std::string& kind = model->as_string();
  if (kind != "gpt2" && kind != "llama")
    fail(ErrorKind::Unsupported, op, f.name(), ": tokenizer model '", io::excerpt(kind),
         "' (implemented: byte-level BPE 'gpt2' and SentencePiece 'llama')");
  std::vector<std::string> tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  std::vector<int32_t> types;
  if (f.find("tokenizer.ggml.token_type"))
    types = f.get_array<int32_t>("tokenizer.ggml.token_type");
  if (tokens.empty()) fail(ErrorKind::Parse, op, f.name(), ": tokenizer.ggml.tokens is empty");
  // Checked in int64 before narrowing to int32 (the vocabulary is at most INT32_MAX tokens).
  const int64_t last_id = std::min<int64_t>(static_cast<int64_t>(tokens.size()) - 1, INT32_MAX);
  // llama.cpp's defaults for a SentencePiece vocabulary without the keys: <unk> 0, <s> 1, </s> 2.
  const bool spm = kind == "llama";
  const auto id = [&](std::string_view key, int64_t spm_default) {
    const int64_t fallback = spm && spm_default <= last_id ? spm_default : -1;
    return static_cast<int32_t>(models::int_key(f, op, key, 0, last_id, fallback));
  };
  SpecialTokens special;
  special.bos = id("tokenizer.ggml.bos_token_id", 1);
  special.eos = id("tokenizer.ggml.eos_token_id", 2);
  special.pad = id("tokenizer.ggml.padding_token_id", -1);
  special.unk = id("tokenizer.ggml.unknown_token_id", 0);
  if (spm) {
    std::vector<float> scores;
    if (f.find("tokenizer.ggml.scores"))
      scores = f.get_array<float>("tokenizer.ggml.scores");
    else
      scores.assign(tokens.size(), 0.0f);  // llama.cpp reads a missing array as all zero
    const GgufValue* prefix = f.find("tokenizer.ggml.add_space_prefix");
    if (prefix && !prefix->is<bool>())
      fail(ErrorKind::Parse, op, f.name(), ": tokenizer.ggml.add_space_prefix is not a bool");
    return Tokenizer::from_spm_vocab(std::move(tokens), std::move(scores), std::move(types),
                                     special, prefix ? prefix->as<bool>() : true);
  }
  std::vector<std::string> merges = f.get_array<std::string>("tokenizer.ggml.merges");
  // llama.cpp reads a missing pre-tokenizer as "default" (and warns that quality suffers).
  const GgufValue* pre = f.find("tokenizer.ggml.pre");
  const std::string pre_name = pre ? pre->as_string() : "default";
  return Tokenizer::from_vocab(std::move(tokens), std::move(merges), std::move(types), special,
                               pre_name);
}

bool gguf_adds_bos(const GgufFile& f) {
  const GgufValue* v = f.find("tokenizer.ggml.add_bos_token");
  return v && v->is<bool>() && v->as<bool>();
}

ChatTemplate load_gguf_chat_template(const GgufFile& f) {
  const GgufValue* v = f.find("tokenizer.chat_template");
  if (!v) return ChatTemplate::chatml();
  // bos_token / eos_token: the texts of the tokens the file names (empty when it names none).
  std::vector<std::string> tokens;
  if (f.find("tokenizer.ggml.tokens")) tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  if (tokens.empty())
    if (const GgufValue* config = f.find("tokenizer.huggingface.config");
        config && config->is<std::string>()) {
      // A Hugging Face folder's: the texts are tokenizer_config.json's.
      const std::string& config_text = config->as_string();
      const nlohmann::json j = io::json_nesting_depth(config_text) > io::kMaxJsonNesting
                                   ? nlohmann::json()  // not a config a converter wrote
                                   : nlohmann::json::parse(config_text, nullptr, false);
      const auto text = [&](const char* key) {
        return j.is_object() && j.contains(key) && j.at(key).is_string()
                   ? j.at(key).get<std::string>()
                   : std::string();
      };
      return ChatTemplate::from_jinja(v->as_string(), text("bos_token"), text("eos_token"));
    }
  const auto text = [&](const char* key) {
    const GgufValue* id = f.find(key);
    if (!id || tokens.empty()) return std::string();
    const int64_t i = models::int_key(f, "load_gguf_chat_template", key, 0,
                                      static_cast<int64_t>(tokens.size()) - 1, -1);
    return i < 0 ? std::string() : tokens[static_cast<size_t>(i)];
  };
  return ChatTemplate::from_jinja(v->as_string(), text("tokenizer.ggml.bos_token_id"),
                                  text("tokenizer.ggml.eos_token_id"));
}

}  // namespace wick
