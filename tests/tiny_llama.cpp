#include "tiny_llama.h"

#include <cmath>

#include "wick/gguf.h"
#include "wick/quantized.h"

namespace wick::testing {

const Tensor& TinyLlama::weight(std::string_view name) const {
  for (const auto& [n, t] : weights)
    if (n == name) return t;
  fail(ErrorKind::OutOfRange, "TinyLlama::weight", "no tensor '", name, "'");
}

namespace {

// Special tokens, the single characters, then one merged token per merge until `vocab`.
void make_vocab(TinyLlama& m, Rng& rng) {
  const int64_t vocab = m.config.vocab;
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    m.tokens.emplace_back(s);
    m.token_types.push_back(3);
  }
  const std::vector<std::string> chars = {"\xc4\xa0", "a", "b", "c", "d", "e", "f", "g", "h",
                                          "i",        "j", "k", "l", "m", "n", "o", "p", "q",
                                          "r",        "s", "t", "u", "v", "w", "x", "y", "z"};
  for (const std::string& c : chars) {
    if (static_cast<int64_t>(m.tokens.size()) == vocab) break;
    m.tokens.push_back(c);
    m.token_types.push_back(1);
  }
  const size_t first_normal = 3;
  while (static_cast<int64_t>(m.tokens.size()) < vocab) {
    const auto pick = [&] {
      return m.tokens[static_cast<size_t>(rng.integer(static_cast<int64_t>(first_normal),
                                                      static_cast<int64_t>(m.tokens.size()) - 1))];
    };
    const std::string a = pick(), b = pick();
    const std::string merged = a + b;
    bool known = false;
    for (const std::string& t : m.tokens) known = known || t == merged;
    if (known) continue;
    m.merges.push_back(a + " " + b);
    m.tokens.push_back(merged);
    m.token_types.push_back(1);
  }
}

}  // namespace

TinyLlama write_tiny_llama(const std::string& path, Rng& rng, const TinyLlamaConfig& config) {
  TinyLlama m;
  m.config = config;
  const TinyLlamaConfig& c = config;
  make_vocab(m, rng);

  GgufWriter w(c.alignment);
  const std::string a = c.arch + ".";
  w.set("general.architecture", c.arch);
  w.set("general.name", "tiny-" + c.arch);
  w.set(a + "block_count", static_cast<uint32_t>(c.layers));
  w.set(a + "context_length", static_cast<uint32_t>(c.context));
  w.set(a + "embedding_length", static_cast<uint32_t>(c.hidden));
  w.set(a + "feed_forward_length", static_cast<uint32_t>(c.ffn));
  w.set(a + "attention.head_count", static_cast<uint32_t>(c.heads));
  w.set(a + "attention.head_count_kv", static_cast<uint32_t>(c.kv_heads));
  w.set(a + "rope.freq_base", c.rope_theta);
  w.set(a + "attention.layer_norm_rms_epsilon", c.rms_eps);
  if (c.key_length > 0) {
    w.set(a + "attention.key_length", static_cast<uint32_t>(c.key_length));
    w.set(a + "attention.value_length", static_cast<uint32_t>(c.key_length));
  }
  if (c.rope_linear > 0) {
    w.set(a + "rope.scaling.type", "linear");
    w.set(a + "rope.scaling.factor", c.rope_linear);
  }
  if (c.rope_yarn > 0) {
    w.set(a + "rope.scaling.type", "yarn");
    w.set(a + "rope.scaling.factor", c.rope_yarn);
    w.set(a + "rope.scaling.original_context_length",
          static_cast<uint32_t>(c.rope_original_context));
    if (c.rope_yarn_beta_fast > 0) w.set(a + "rope.scaling.yarn_beta_fast", c.rope_yarn_beta_fast);
    if (c.rope_yarn_beta_slow > 0) w.set(a + "rope.scaling.yarn_beta_slow", c.rope_yarn_beta_slow);
    if (c.rope_yarn_attn_factor > 0)
      w.set(a + "rope.scaling.yarn_attn_factor", c.rope_yarn_attn_factor);
  }
  if (c.longrope) {
    if (m.config.rope_attn_factor <= 0) {
      const double scale =
          static_cast<double>(c.context) / static_cast<double>(c.rope_original_context);
      m.config.rope_attn_factor = static_cast<float>(
          scale > 1 ? std::sqrt(1 + std::log(scale) /
                                        std::log(static_cast<double>(c.rope_original_context)))
                    : 1.0);
    }
    w.set(a + "rope.scaling.type", "longrope");
    w.set(a + "rope.scaling.original_context_length",
          static_cast<uint32_t>(c.rope_original_context));
    w.set(a + "rope.scaling.attn_factor", m.config.rope_attn_factor);
  } else if (c.rope_attn_factor > 0) {
    w.set(a + "rope.scaling.attn_factor", c.rope_attn_factor);
  }
  if (c.attn_softcap > 0) w.set(a + "attn_logit_softcapping", c.attn_softcap);
  if (c.final_softcap > 0) w.set(a + "final_logit_softcapping", c.final_softcap);
  if (c.sliding_window > 0)
    w.set(a + "attention.sliding_window", static_cast<uint32_t>(c.sliding_window));
  w.set("general.file_type", uint32_t{c.weight_dtype == DType::F32 ? 0u : 1u});
  w.set(a + "vocab_size", static_cast<uint32_t>(c.vocab));
  w.set(a + "rope.dimension_count", static_cast<uint32_t>(c.head_dim()));
  w.set("tokenizer.ggml.add_space_prefix", false);
  w.set("tokenizer.ggml.add_bos_token", false);
  w.set("tokenizer.ggml.model", "gpt2");
  w.set("tokenizer.ggml.pre", "smollm");
  w.set("tokenizer.ggml.tokens", GgufValue::array(m.tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::array(m.token_types));
  w.set("tokenizer.ggml.merges", GgufValue::array(m.merges));
  w.set("tokenizer.ggml.bos_token_id", m.bos_id);
  w.set("tokenizer.ggml.eos_token_id", m.eos_id);
  w.set("tokenizer.ggml.unknown_token_id", uint32_t{0});
  w.set("tokenizer.ggml.padding_token_id", m.eos_id);
  w.set("tokenizer.chat_template",
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{{ message['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");

  const auto add = [&](const std::string& name, const Shape& shape, DType dt, double scale) {
    Tensor t = make_tensor(random_ref(rng, shape, -scale, scale), dt, Device::cpu());
    const bool embed = name == "token_embd.weight";
    const QuantType q = shape.rank() != 2 ? QuantType::F32 : embed ? c.embed_quant : c.matrix_quant;
    if (q == QuantType::F32) {
      w.add_tensor(name, t);
      m.weights.emplace_back(name, t);
      return;
    }
    const QTensor qt = quantize(t, q);
    w.add_raw_tensor(name, q, shape, {reinterpret_cast<const std::byte*>(qt.data()), qt.nbytes()});
    m.weights.emplace_back(name, dequantize(qt));
  };
  const int64_t q_dim = c.heads * c.head_dim(), kv_dim = c.kv_heads * c.head_dim();
  const DType wd = c.weight_dtype;
  // Projections scaled by 1/sqrt(fan-in), as trained weights roughly are: without it, wider test
  // models amplify rounding noise layer by layer (0.2 at fan-in 64).
  const auto proj = [](int64_t fan_in) { return 1.6 / std::sqrt(static_cast<double>(fan_in)); };
  const bool phi3 = c.arch == "phi3";
  add("token_embd.weight", Shape{c.vocab, c.hidden}, wd, 1.0);
  // Per-pair rotary factors: the values given, else random ones in [lo, hi].
  const auto factors = [&](const char* name, const std::vector<float>& given, double lo,
                           double hi) {
    const Shape shape{c.head_dim() / 2};
    Tensor t = given.empty()
                   ? make_tensor(random_ref(rng, shape, lo, hi), DType::F32, Device::cpu())
                   : Tensor::from_vec(given, shape);
    w.add_tensor(name, t);
    m.weights.emplace_back(name, t);
  };
  // Llama 3's grow towards the slow pairs.
  if (c.rope_freqs) factors("rope_freqs.weight", c.rope_freq_values, 1.0, 8.0);
  if (c.longrope) {
    factors("rope_factors_long.weight", c.rope_long_factors, 2.0, 16.0);
    factors("rope_factors_short.weight", c.rope_short_factors, 1.0, 2.0);
  }
  for (int64_t l = 0; l < c.layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", Shape{c.hidden}, DType::F32, 1.0);
    add(p + "ffn_down.weight", Shape{c.hidden, c.ffn}, wd, proj(c.ffn));
    if (phi3) {
      add(p + "ffn_up.weight", Shape{2 * c.ffn, c.hidden}, wd, proj(c.hidden));
    } else {
      add(p + "ffn_gate.weight", Shape{c.ffn, c.hidden}, wd, proj(c.hidden));
      add(p + "ffn_up.weight", Shape{c.ffn, c.hidden}, wd, proj(c.hidden));
    }
    add(p + "ffn_norm.weight", Shape{c.hidden}, DType::F32, 1.0);
    if (phi3) {
      add(p + "attn_output.weight", Shape{c.hidden, q_dim}, wd, proj(q_dim));
      add(p + "attn_qkv.weight", Shape{q_dim + 2 * kv_dim, c.hidden}, wd, proj(c.hidden));
    } else {
      add(p + "attn_k.weight", Shape{kv_dim, c.hidden}, wd, proj(c.hidden));
      add(p + "attn_output.weight", Shape{c.hidden, q_dim}, wd, proj(q_dim));
      add(p + "attn_q.weight", Shape{q_dim, c.hidden}, wd, proj(c.hidden));
      add(p + "attn_v.weight", Shape{kv_dim, c.hidden}, wd, proj(c.hidden));
    }
    if (c.arch == "qwen2") {
      add(p + "attn_q.bias", Shape{q_dim}, DType::F32, 0.5);
      add(p + "attn_k.bias", Shape{kv_dim}, DType::F32, 0.5);
      add(p + "attn_v.bias", Shape{kv_dim}, DType::F32, 0.5);
    }
    if (c.arch == "gemma2") {
      add(p + "post_attention_norm.weight", Shape{c.hidden}, DType::F32, 1.0);
      add(p + "post_ffw_norm.weight", Shape{c.hidden}, DType::F32, 1.0);
    }
  }
  add("output_norm.weight", Shape{c.hidden}, DType::F32, 1.0);
  if (!c.tied_embeddings) add("output.weight", Shape{c.vocab, c.hidden}, wd, proj(c.hidden));
  w.write(path);
  return m;
}

}  // namespace wick::testing
