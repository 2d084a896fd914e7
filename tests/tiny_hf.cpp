#include "tiny_hf.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "wick/gguf.h"
#include "wick/safetensors.h"

namespace wick::testing {

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path, std::ios::binary);
  out << j.dump(2);
  if (!out) fail(ErrorKind::Io, "write_json", "cannot write ", path);
}

Tensor unpermute_rows(const Tensor& w, int64_t heads) {
  const int64_t rows = w.shape()[0], in = w.shape()[1], half = rows / heads / 2;
  // GGUF's (head, i, s) rows are HF's (head, s, i).
  return w.reshape({heads, half, 2, in}).transpose(1, 2).contiguous().reshape({rows, in});
}

namespace {

// The HF name of a GGUF tensor.
std::string hf_name(const std::string& gguf) {
  static const std::map<std::string, std::string> kLayer = {
      {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
  };
  if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight") return "model.norm.weight";
  if (gguf == "output.weight") return "lm_head.weight";
  // blk.N.<part>.weight
  const size_t a = gguf.find('.', 4), b = gguf.rfind('.');
  return "model.layers." + gguf.substr(4, a - 4) + "." + kLayer.at(gguf.substr(a + 1, b - a - 1)) +
         ".weight";
}

nlohmann::json tokenizer_json(const TinyLlama& m) {
  using nlohmann::json;
  json vocab = json::object(), added = json::array();
  for (size_t id = 0; id < m.tokens.size(); id++) {
    vocab[m.tokens[id]] = id;
    if (m.token_types[id] == 3)
      added.push_back({{"id", id},
                       {"content", m.tokens[id]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
  }
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  // SmolLM2's (llama.cpp's "smollm" pre-tokenizer, which the GGUF file names).
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             json::array({{{"type", "Digits"}, {"individual_digits", true}}, byte_level})}}},
          {"post_processor", byte_level},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"vocab", vocab},
            {"merges", m.merges}}}};
}

}  // namespace

TinyHf write_tiny_hf(const std::string& folder, const std::string& gguf_path, Rng& rng,
                     const TinyHfConfig& config) {
  using nlohmann::json;
  TinyHf hf;
  hf.gguf = write_tiny_llama(gguf_path, rng, config.llama);
  const TinyLlamaConfig& c = config.llama;
  std::filesystem::create_directories(folder);
  const auto file = [&](const std::string& name) { return folder + "/" + name; };

  for (const auto& [name, t] : hf.gguf.weights) {
    if (name.starts_with("rope_")) continue;  // config.json's rope_scaling says what they hold
    Tensor w = t;
    if (name.ends_with("attn_q.weight")) w = unpermute_rows(t, c.heads);
    if (name.ends_with("attn_k.weight")) w = unpermute_rows(t, c.kv_heads);
    hf.tensors.emplace(hf_name(name), w);
  }
  if (config.shards <= 1) {
    save_safetensors(file("model.safetensors"), hf.tensors, {{"format", "pt"}});
  } else {
    std::vector<std::map<std::string, Tensor>> shards(static_cast<size_t>(config.shards));
    json weight_map = json::object();
    size_t i = 0;
    for (const auto& [name, t] : hf.tensors) {
      const size_t s = i++ * shards.size() / hf.tensors.size();
      char shard[64];
      std::snprintf(shard, sizeof shard, "model-%05zu-of-%05d.safetensors", s + 1, config.shards);
      shards[s].emplace(name, t);
      weight_map[name] = shard;
    }
    for (size_t s = 0; s < shards.size(); s++) {
      char shard[64];
      std::snprintf(shard, sizeof shard, "model-%05zu-of-%05d.safetensors", s + 1, config.shards);
      save_safetensors(file(shard), shards[s], {{"format", "pt"}});
    }
    write_json(file("model.safetensors.index.json"),
               {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}});
  }

  hf.config = {{"architectures", {"LlamaForCausalLM"}},
               {"model_type", "llama"},
               {"hidden_size", c.hidden},
               {"intermediate_size", c.ffn},
               {"num_hidden_layers", c.layers},
               {"num_attention_heads", c.heads},
               {"num_key_value_heads", c.kv_heads},
               {"head_dim", c.head_dim()},
               {"max_position_embeddings", c.context},
               {"rms_norm_eps", static_cast<double>(c.rms_eps)},
               {"rope_theta", static_cast<double>(c.rope_theta)},
               {"rope_scaling", nullptr},
               {"vocab_size", c.vocab},
               {"tie_word_embeddings", c.tied_embeddings},
               {"hidden_act", "silu"},
               {"attention_bias", false},
               {"mlp_bias", false},
               {"bos_token_id", hf.gguf.bos_id},
               {"eos_token_id", hf.gguf.eos_id},
               {"torch_dtype", c.weight_dtype == DType::BF16  ? "bfloat16"
                               : c.weight_dtype == DType::F16 ? "float16"
                                                              : "float32"}};
  hf.config.merge_patch(config.config_patch);
  write_json(file("config.json"), hf.config);
  write_json(file("generation_config.json"),
             {{"bos_token_id", hf.gguf.bos_id}, {"eos_token_id", hf.gguf.eos_id}});
  write_json(file("tokenizer.json"), tokenizer_json(hf.gguf));
  const GgufFile g = GgufFile::open(gguf_path);
  write_json(file("tokenizer_config.json"),
             {{"add_bos_token", false},
              {"bos_token", hf.gguf.tokens[hf.gguf.bos_id]},
              {"eos_token", {{"content", hf.gguf.tokens[hf.gguf.eos_id]}, {"special", true}}},
              {"pad_token", hf.gguf.tokens[hf.gguf.eos_id]},
              {"unk_token", hf.gguf.tokens[0]},
              {"chat_template", g.get<std::string>("tokenizer.chat_template")}});
  return hf;
}

}  // namespace wick::testing
