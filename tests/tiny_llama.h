// A tiny llama-architecture GGUF model with random weights, written by GgufWriter. The GGUF tests
// read it back; model tests can run it end to end without a real checkpoint.
//
// Names and keys follow llama.cpp's files (see tests/data/smollm2_gguf_layout.txt): token_embd,
// blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down},
// output_norm, and output unless the embeddings are tied (as in SmolLM2); llama.* hyperparameters;
// a gpt2-style BPE tokenizer (tokenizer.ggml.tokens / token_type / merges). Weight shapes are
// wick's row-major (out_features, in_features). llama.cpp's converter permutes the rows of attn_q
// and attn_k of real models so that RoPE rotates adjacent pairs (wick's rope_i); random weights
// make no difference, but a loader of real files must use rope_i.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness.h"
#include "wick/quant_type.h"

namespace wick::testing {

struct TinyLlamaConfig {
  int64_t vocab = 40;  // >= 3 special tokens + 27 single characters
  int64_t hidden = 32;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t ffn = 48;
  int64_t context = 64;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_embeddings = true;      // no output.weight
  DType weight_dtype = DType::F32;  // the matrices and the embedding; norms stay f32
  // When not F32: the 2-D matrices are written in this block format (the embedding in
  // embed_quant), and `weights` holds their dequantized values. hidden and ffn must then be
  // multiples of the block size.
  QuantType matrix_quant = QuantType::F32;
  QuantType embed_quant = QuantType::F32;
  uint32_t alignment = 32;

  // The architecture (general.architecture, and the prefix of the hyper-parameters' keys) and
  // what it writes besides llama's tensors, as llama.cpp's converter does:
  //   qwen2   blk.N.attn_{q,k,v}.bias
  //   phi3    blk.N.attn_qkv (q's rows, k's, v's) instead of attn_q/k/v; blk.N.ffn_up of 2 x ffn
  //           rows (gate's, then up's) and no ffn_gate
  //   gemma2  blk.N.post_attention_norm, blk.N.post_ffw_norm; gemma2.attn_logit_softcapping,
  //           final_logit_softcapping, attention.sliding_window (when the fields below are > 0)
  // llama and mistral write llama's tensors. The norms of gemma/gemma2 are written as they are
  // used (llama.cpp's converter adds Gemma's 1 to them).
  std::string arch = "llama";
  int64_t key_length = 0;   // {arch}.attention.key_length/value_length when > 0: the head dim
  bool rope_freqs = false;  // a rope_freqs.weight of head_dim / 2 factors (Llama 3.x)
  std::vector<float> rope_freq_values;  // rope_freqs.weight's values when rope_freqs (else random)
  float rope_linear = 0;                // {arch}.rope.scaling.type linear with this factor when > 0
  // {arch}.rope.scaling.type yarn with this factor when > 0, original_context_length
  // rope_original_context, and yarn_beta_fast/slow and yarn_attn_factor when they are > 0.
  float rope_yarn = 0;
  float rope_yarn_beta_fast = 0, rope_yarn_beta_slow = 0, rope_yarn_attn_factor = 0;
  int64_t rope_original_context = 0;
  // longrope (Phi-3 128k): rope_factors_long/short.weight (these values, else random ones: long in
  // [2, 16], short in [1, 2]), type longrope, original_context_length rope_original_context and
  // attn_factor: rope_attn_factor when > 0, else sqrt(1 + ln(context / original) / ln(original)),
  // as llama.cpp's converter computes it (written back into rope_attn_factor).
  bool longrope = false;
  std::vector<float> rope_long_factors, rope_short_factors;
  float rope_attn_factor = 0;
  float attn_softcap = 0, final_softcap = 0;
  int64_t sliding_window = 0;
  int64_t head_dim() const { return key_length > 0 ? key_length : hidden / heads; }
};

struct TinyLlama {
  TinyLlamaConfig config;
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (1 normal, 3 control)
  std::vector<std::string> merges;   // tokenizer.ggml.merges ("a b")
  uint32_t bos_id = 1, eos_id = 2;
  // Every tensor written, in file order: GGUF name -> the values (row-major, weight_dtype).
  std::vector<std::pair<std::string, Tensor>> weights;
  const Tensor& weight(std::string_view name) const;
};

// Writes the model to `path` with weights drawn from `rng`; returns what it wrote.
TinyLlama write_tiny_llama(const std::string& path, Rng& rng, const TinyLlamaConfig& config = {});

}  // namespace wick::testing
