// Hugging Face checkpoint folders read as the GGUF file llama.cpp's converter would write from
// them, so that one loader (LlamaModel::load_gguf) builds the model from either.
#pragma once

#include <string>

#include "wick/gguf.h"

namespace wick::models {

// The folder's model as a GgufFile assembled in memory (named by the folder):
//   - config.json's hyper-parameters as llama.* keys (general.architecture "llama"); rope_scaling
//     as llama.rope.scaling.* keys and, for llama3 and longrope, the per-pair factor tensors
//     (rope_freqs, rope_factors_long/short) the converter writes;
//   - the weights of model.safetensors, or of the shards model.safetensors.index.json's
//     weight_map lists, under GGUF's names (token_embd, blk.N.attn_q, ...), in their own dtype
//     (f32, f16, bf16). The tensors point into the mapped files, except attn_q and attn_k, whose
//     rows are permuted on the heap as the converter permutes them: HF rotates the two halves of
//     each head, GGUF files adjacent pairs (wick's interleaved rope);
//   - tokenizer.json's text as tokenizer.huggingface.json, the special tokens of
//     tokenizer_config.json (else of generation_config.json / config.json ids) as
//     tokenizer.huggingface.config and tokenizer.ggml.{bos,eos}_token_id, whether prompts start
//     with bos (tokenizer.ggml.add_bos_token), and tokenizer_config.json's (or
//     chat_template.jinja's) tokenizer.chat_template.
// Error(Io) for a missing config.json, weights file or shard; Error(Unsupported) naming what
// config.json asks for that wick lacks (architectures, rope_scaling types, head_dim, biases, ...)
// or a tensor's dtype; Error(Parse) naming the file and tensor for a missing tensor or a wrong
// shape, or the file and key for a malformed value.
GgufFile read_hf_checkpoint(const std::string& folder);

}  // namespace wick::models
