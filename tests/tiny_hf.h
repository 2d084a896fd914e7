// A tiny llama model as a Hugging Face folder: config.json, the weights (model.safetensors, or
// shards and model.safetensors.index.json), tokenizer.json, tokenizer_config.json and
// generation_config.json; and the same model as the GGUF file llama.cpp's converter would make of
// it (tests/tiny_llama.h writes that, with random weights; the folder holds them with the rows of
// q and k in HF's order: the converter's permutation undone).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tiny_llama.h"

namespace wick::testing {

struct TinyHfConfig {
  TinyLlamaConfig llama;  // weight_dtype f32, f16 or bf16 (no block formats)
  int shards = 1;         // 1: model.safetensors; n: n shards and their index
  // Merged into config.json (JSON merge patch): rope_scaling, say, which the caller keeps in
  // step with llama's rotary options (the GGUF file's keys and rope_* tensors, which the folder
  // does not hold).
  nlohmann::json config_patch = nlohmann::json::object();
};

struct TinyHf {
  TinyLlama gguf;                         // the GGUF file's model and weights (GGUF names)
  std::map<std::string, Tensor> tensors;  // every tensor of the folder, by HF name
  nlohmann::json config;                  // config.json
};

// Writes the GGUF file `gguf_path` and the folder `folder` (created if need be).
TinyHf write_tiny_hf(const std::string& folder, const std::string& gguf_path, Rng& rng,
                     const TinyHfConfig& config = {});

// Writes `j` to `path` as JSON text.
void write_json(const std::string& path, const nlohmann::json& j);

// HF's rows of q or k from GGUF's (the converter's permutation undone): within each head of d
// rows, GGUF row 2i + s is HF row s * d/2 + i.
Tensor unpermute_rows(const Tensor& w, int64_t heads);

}  // namespace wick::testing
