// Llama-family language models (SmolLM2, Llama 2/3, TinyLlama, Mistral, Qwen2, Phi-3, Gemma,
// Gemma 2, ...) loaded from GGUF, and the sampling loop that generates text with them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wick/tensor.h"
#include "wick/tokenizer.h"

namespace wick {

class GgufFile;

struct LlamaConfig {
  int64_t vocab_size = 0;
  int64_t hidden = 0;        // embedding length
  int64_t intermediate = 0;  // feed-forward length
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t context_length = 0;
  double rope_theta = 10000.0;
  double rms_eps = 1e-5;
  bool tied_embeddings = false;
  // GGUF files from llama.cpp store llama's q/k permuted for interleaved (GPT-J style) rotary
  // pairs; HF checkpoints, and llama.cpp's qwen2, phi3 and gemma files, rotate halves (NEOX).
  bool rope_interleaved = true;

  // Per-architecture options (general.architecture; the keys are read under its prefix). Each
  // one off is llama; on, the decode step may fall back from a fused op to plain ones.
  std::string architecture = "llama";  // llama, mistral, qwen2, phi3, gemma, gemma2
  // Rotary angle of pair i at position p, as ggml's rope computes it (every scaling below is a
  // case of it): e = p * rope_theta^(-2i / head_dim) / rope_freq_factors[i] (extrapolated) and
  // s = rope_freq_scale * e (interpolated); the angle is s, or with YaRN s * (1 - r_i) + e * r_i,
  // r_i YaRN's ramp: 1 for pairs below the correction dim of rope_yarn_beta_fast rotations over
  // rope_original_context positions, 0 above that of rope_yarn_beta_slow, linear between. cos and
  // sin are then multiplied by rope_attn_factor (q's and k's: the scores by its square).
  //   linear    ({arch}.rope.scaling.type linear): the scale is 1 / {arch}.rope.scaling.factor
  //   Llama 3.x a rope_freqs.weight tensor of head_dim / 2 factors
  //   yarn      the scale is 1 / factor, rope_attn_factor 0.1 ln(factor) + 1 (1 for a factor <= 1)
  //   longrope  (Phi-3 128k) rope_factors_long/short.weight: rope_freq_factors is the long set
  //             when the model runs with more positions (max_seq) than rope_original_context, else
  //             the short one; rope_attn_factor is {arch}.rope.scaling.attn_factor
  // rope_freq_factors empty: all 1.
  double rope_freq_scale = 1.0;
  std::vector<float> rope_freq_factors;
  bool rope_yarn = false;
  double rope_yarn_beta_fast = 32.0, rope_yarn_beta_slow = 1.0;
  int64_t rope_original_context = 0;  // yarn, longrope: {arch}.rope.scaling.original_context_length
  double rope_attn_factor = 1.0;
  std::vector<float> rope_long_factors, rope_short_factors;  // longrope, both as read
  bool qkv_bias = false;                                     // qwen2: blk.N.attn_{q,k,v}.bias
  bool gelu_ffn = false;     // gemma: gelu(gate) * up (tanh approximation), else silu
  double embed_scale = 1.0;  // gemma: the embedding rows times sqrt(hidden)
  double query_scale = 0;    // the score scale; 1 / sqrt(head_dim) by default
  bool post_norms = false;   // gemma2: blk.N.post_attention_norm, post_ffw_norm
  double attn_softcap = 0;   // gemma2: scores -> c * tanh(scores / c); 0: off
  double final_softcap = 0;  // gemma2: logits -> c * tanh(logits / c); 0: off
  // gemma2: layers 0, 2, 4, ... attend only to the last sliding_window positions (0: all).
  int64_t sliding_window = 0;
};

class LlamaModel;

// One sequence's own KV cache and position, apart from the model's (forward's) and from every
// other sequence's: several sequences then advance together in one pass through the model
// (LlamaModel::forward_batch), as a server's request slots do. Made by LlamaModel::new_sequence;
// a copy shares the cache. Belongs to the model that made it, which it keeps alive.
class LlamaSequence {
 public:
  LlamaSequence() = default;  // no cache: forward_batch refuses it
  // Tokens already in the cache, and its length (the model's max_seq).
  int64_t position() const;
  int64_t max_seq() const;
  // Empties the cache (the next step starts at position 0); the memory stays allocated.
  void reset();

  struct State;

 private:
  friend class LlamaModel;
  std::shared_ptr<State> state_;
};

// Called while a model loads: (bytes done, bytes total).
using LoadProgress = std::function<void(uint64_t, uint64_t)>;

// The element type of the KV cache. F16, the default (llama.cpp's too), takes half the memory of
// F32: k and v are rounded once when written, and attention reads them as stored and computes in
// f32. BF16 likewise. Q8_0 (llama.cpp's block format) is not implemented: load_gguf refuses it
// with Error(Unsupported).
enum class KvCacheType { F32, F16, BF16, Q8_0 };
// "f32", "f16", "bf16", "q8_0" (llama.cpp's --cache-type-k/v names); Error(Parse) otherwise.
KvCacheType parse_kv_cache_type(std::string_view name);
const char* kv_cache_type_name(KvCacheType t);

struct LlamaOptions {
  // Positions the KV cache holds (0: the model's context length, capped at 4096).
  int64_t max_seq = 0;
  KvCacheType kv_cache = KvCacheType::F16;
};

class LlamaModel {
 public:
  // Loads a GGUF file of the llama architecture or a relative (general.architecture llama,
  // mistral, qwen2, phi3, gemma, gemma2: LlamaConfig's options) onto `dev`. `max_seq` bounds the
  // KV cache (0: the model's context length, capped at 4096). Every hyper-parameter is checked
  // against the others and against the tensor shapes before any weight is loaded: Error(Parse),
  // naming the file, the key or tensor and the value, for a file of another architecture (named),
  // that lacks a tensor, or whose keys are out of range or disagree (counts, head split, rope
  // base, norm epsilon, vocabulary, special token ids); Error(Unsupported) for variants not
  // implemented (partial rotary embeddings, rotary scaling other than linear, yarn, longrope and
  // Llama 3's rope_freqs, experts). Error(OutOfRange) when max_seq is negative, more than the
  // model's context length, or its KV cache and rotary tables cannot fit in this machine's memory
  // (checked before allocating; the message names the bytes needed and the limit).
  static LlamaModel load_gguf(const std::string& path, const Device& dev = Device::cpu(),
                              int64_t max_seq = 0, const LoadProgress& progress = {});
  // The same with every option (max_seq and the KV cache's type); Error(Unsupported) for a
  // cache type not implemented.
  static LlamaModel load_gguf(const std::string& path, const Device& dev, const LlamaOptions& opts,
                              const LoadProgress& progress = {});
  // A GGUF file already open, or put together in memory (GgufFile::assemble); its name stands for
  // it in errors.
  static LlamaModel load_gguf(std::shared_ptr<const GgufFile> file, const Device& dev,
                              const LlamaOptions& opts, const LoadProgress& progress = {});
  // A Hugging Face checkpoint folder of a LlamaForCausalLM or MistralForCausalLM model:
  // config.json, the weights in model.safetensors or in the shards model.safetensors.index.json
  // lists, and tokenizer.json (with tokenizer_config.json, generation_config.json and
  // chat_template.jinja when present). It becomes the GGUF file llama.cpp's converter would write
  // (gguf() holds it: llama.* keys, GGUF tensor names, q and k rows permuted for interleaved
  // rotary pairs, the tokenizer as tokenizer.huggingface.json; rope_scaling linear, llama3, yarn
  // or longrope as its keys and per-pair factor tensors), then loads as load_gguf does:
  // f32, f16 and bf16 weights keep their dtype. Errors name the file and the key or tensor:
  // Error(Io) for a missing config.json, weights file or shard; Error(Unsupported) for an
  // architecture, rope_scaling, head_dim, biases or dtype wick does not implement; Error(Parse)
  // for a missing tensor, a wrong shape or a malformed value.
  static LlamaModel load_hf(const std::string& folder, const Device& dev = Device::cpu(),
                            const LlamaOptions& opts = {}, const LoadProgress& progress = {});
  // load_hf when `path` is a directory, else load_gguf.
  static LlamaModel load(const std::string& path, const Device& dev = Device::cpu(),
                         const LlamaOptions& opts = {}, const LoadProgress& progress = {});

  const LlamaConfig& config() const;
  // The file the weights are mapped from (metadata, tokenizer); for a Hugging Face folder, the
  // GGUF file assembled from it.
  const GgufFile& gguf() const;
  const Device& device() const;
  int64_t max_seq() const;
  // Tokens already in the KV cache.
  int64_t position() const;
  KvCacheType kv_cache_type() const;
  // Bytes of the KV cache (keys and values of every layer, allocated once at load).
  int64_t kv_cache_bytes() const;

  // Runs `tokens` at positions [position(), position() + n) through the model, appends their keys
  // and values to the cache, and returns the logits (f32, shape [vocab]) of the last token.
  // Throws Error(OutOfRange) when the cache would overflow or a token id is >= vocab size.
  Tensor forward(const std::vector<uint32_t>& tokens);
  // forward() that returns the logits of every token, f32 (n, vocab): row i predicts the token
  // after tokens[i] (perplexity, the log-probabilities of a prompt). Each row is what forward()
  // returns for the tokens up to it, to the rounding of the products' row counts.
  Tensor forward_all(const std::vector<uint32_t>& tokens);
  // Empties the KV cache (the next forward starts at position 0).
  void reset();
  // Forgets the tokens at positions >= `position` (0 <= position <= position(), else
  // Error(OutOfRange)): the next forward writes the cache from there, as if they had not run.
  void truncate(int64_t position);
  // Greedy decoding of n tokens: feeds `token` at position(), then the first maximum of each
  // step's logits, n steps in all; returns the n tokens picked (the last one not yet fed:
  // position() advances by n). The same tokens as n forward() calls each followed by argmax. On a
  // GPU that replays, with a quantized embedding table, chunks of decode_chunk() steps are captured
  // once and replayed with each token picked and embedded on the device, so the host waits once
  // a chunk instead of once a token (the tied lm_head's blocks serve as the table; an untied one
  // is uploaded at the first chunk). Errors: OutOfRange (n < 0, token >= vocab size, or
  // position() + n > max_seq()), and forward's.
  std::vector<uint32_t> decode_greedy(uint32_t token, int64_t n);
  // The steps decode_greedy replays at once (WICK_DECODE_CHUNK, default 8); 1 where it steps
  // through forward() (the CPU, replay off, a table that is not quantized).
  int64_t decode_chunk() const;
  // Sets the steps a chunk takes (>= 1; 1: none), as WICK_DECODE_CHUNK does.
  void set_decode_chunk(int64_t steps);
  // Whether a one-token forward replays a decode step captured once (Device::capture) instead of
  // recording its ~400 ops again: on devices that can capture, unless turned off here or by
  // WICK_REPLAY=0. The tokens are the same either way.
  bool replays() const;
  void set_replay(bool on);

  // A sequence with a KV cache of max_seq() rows of its own, on device() (the same bytes as the
  // model's cache): a slot of per-layer cache tensors the model keeps for its sequences, taken
  // from a dropped sequence if there is one, else added (the others' caches are copied into the
  // grown tensors once). Not thread-safe against forward_batch. Error(OutOfMemory) when the
  // device cannot hold it.
  LlamaSequence new_sequence() const;
  // One step of several sequences: the tokens of each (one to decode, or a whole prompt) run at
  // its next positions in ONE pass through the model, the matmuls over all rows stacked, the
  // one-token steps' attention in one op over their cache slots; prompts of up to prompt_rows()
  // tokens join them as rows of one token each (at consecutive positions: the pass's op count
  // does not grow with its prompts), longer ones' attention runs over each prompt. Their keys and
  // values join each sequence's cache. On a GPU that can replay (replays()), a step of
  // one-token steps only (of up to 16 sequences) is captured once per number of sequences and
  // replayed.
  // Returns the logits of each sequence's last token, f32 (steps.size(), vocab), row i for
  // steps[i]. A sequence's rows are the same as forward()'s would be for it alone, up to the
  // rounding of the fused decode ops (greedy tokens agree). Errors, before any cache changes:
  // Shape (no steps, a step without tokens, a sequence without a cache, of another model, or
  // given twice), OutOfRange (a token id >= vocab size, or a step past its
  // sequence's cache).
  struct SequenceStep {
    LlamaSequence* seq;
    std::vector<uint32_t> tokens;
  };
  Tensor forward_batch(const std::vector<SequenceStep>& steps);
  // The longest prompt forward_batch runs as rows of one token each (WICK_PROMPT_ROWS, default
  // 64; 0: none).
  int64_t prompt_rows() const;
  void set_prompt_rows(int64_t tokens);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

struct SamplingOptions {
  double temperature = 0.0;  // <= 0: greedy (argmax)
  int64_t top_k = 0;         // 0: off
  double top_p = 1.0;        // 1: off
  // Keeps the tokens whose probability (after temperature) is at least min_p times the most
  // likely one's; 0: off.
  double min_p = 0.0;
  // llama.cpp's repetition penalty: every distinct token among the last repeat_last_n accepted
  // ones has its logit divided by repeat_penalty when positive, multiplied when not, before the
  // other steps (greedy included). 1 or repeat_last_n 0: off.
  double repeat_penalty = 1.0;
  int64_t repeat_last_n = 64;
  // OpenAI's penalties, over the same window (llama.cpp's penalty_freq and penalty_present): a
  // token seen c > 0 times among the last repeat_last_n accepted ones loses
  // c * frequency_penalty + presence_penalty from its logit, after the repetition penalty.
  // Finite; 0: off.
  double frequency_penalty = 0.0;
  double presence_penalty = 0.0;
  // (token, bias) pairs added to those logits before every other step, greedy included; a bias
  // of -inf bans the token. Each token at most once; +inf and NaN are refused, and so is a token
  // past the logits when they are sampled.
  std::vector<std::pair<uint32_t, double>> logit_bias{};
  uint64_t seed = 299792458;
};

// A token the sampler may pick and its probability.
struct SamplingCandidate {
  uint32_t id;
  double p;
};

// A token's log-probability and the most likely alternatives (logprobs()).
struct TokenLogprobs {
  double logprob = 0;
  std::vector<std::pair<uint32_t, double>> top;  // (token, log-probability)
};

// Picks the next token from logits. Deterministic for a given seed. Steps, in order: logit bias,
// repetition, frequency and presence penalties, top-k, softmax at the temperature, top-p, min-p;
// then a draw (greedy: the first maximum of the biased, penalised logits).
class Sampler {
 public:
  explicit Sampler(SamplingOptions opts = {});
  uint32_t sample(const Tensor& logits);
  // The tokens sample() draws from and their probabilities (summing to 1), most likely first (ties
  // by id); one token of probability 1 when greedy.
  std::vector<SamplingCandidate> candidates(const Tensor& logits) const;
  // Records a token of the context (prompt or generated) for the repetition penalty; generate()
  // calls it for every prompt token and every sampled one.
  void accept(uint32_t token);
  const SamplingOptions& options() const { return opts_; }
  // The log-probabilities of the distribution the steps start from: log-softmax at temperature 1
  // of the biased, penalised logits (what OpenAI's `logprobs` report), for `token` and the `top`
  // most likely tokens (most likely first, ties by id). Call it before accept(token).
  TokenLogprobs logprobs(const Tensor& logits, uint32_t token, int64_t top = 0) const;
  // Whether sample() is the first maximum of the logits as given (greedy, no penalty), which a
  // caller may then find itself (a server: for every sequence's row at once, on the device).
  bool plain_greedy() const;

 private:
  SamplingOptions opts_;
  uint64_t state_;
  std::vector<uint32_t> recent_;  // the last repeat_last_n accepted tokens, a ring from next_
  size_t next_ = 0;
  double next_uniform();
  bool penalises() const;
  std::vector<SamplingCandidate> candidates(const std::vector<float>& logits) const;
  // The logits after the bias and the penalties.
  std::vector<double> adjusted(const std::vector<float>& logits, const char* op) const;
};

// The byte-level BPE tokenizer in a GGUF file's tokenizer.ggml.* metadata. Throws Error(Parse)
// when the file has none, Error(Unsupported) for a tokenizer model other than "gpt2".
Tokenizer load_gguf_tokenizer(const GgufFile& f);
// tokenizer.ggml.add_bos_token (false when absent).
bool gguf_adds_bos(const GgufFile& f);
// tokenizer.chat_template, with the texts of the bos and eos tokens; ChatML when the file has no
// template. Error(Parse) for a template that does not parse.
ChatTemplate load_gguf_chat_template(const GgufFile& f);

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prefill_seconds = 0;  // prompt forward pass, up to the first sampled token
  double decode_seconds = 0;   // every later token
  bool stopped_at_eos = false;
  bool stopped_at_context_end = false;  // the KV cache filled up before max_new tokens
};

// Feeds `prompt` to `model` (continuing from its cache position), then samples up to `max_new`
// tokens, one forward pass each, calling `on_token` with every token as it is picked (the sampler
// accepts every prompt and sampled token, for its repetition penalty). Stops early
// when the token is `eos` (>= 0; it is passed to on_token too), when on_token returns false, or
// when the KV cache is full (stopped_at_context_end).
GenerationStats generate(LlamaModel& model, const std::vector<uint32_t>& prompt, int64_t max_new,
                         Sampler& sampler, int32_t eos,
                         const std::function<bool(uint32_t)>& on_token);

}  // namespace wick
