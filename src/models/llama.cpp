// The llama architecture: RMSNorm, rotary embeddings, grouped-query attention with a KV cache
// allocated once, SwiGLU MLP, optionally tied embeddings; and its relatives as options of the
// same model (LlamaConfig): mistral, qwen2 (q/k/v biases), phi3 (fused q/k/v and gate/up
// matrices), gemma and gemma2 (GELU MLP, scaled embeddings; soft-capping, post norms and a
// sliding window on alternate layers), rotating halves (NEOX) where llama.cpp does.
#include "wick/llama.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "io/file.h"
#include "models/gguf_keys.h"
#include "nn/linear.h"
#include "wick/attention.h"
#include "wick/config.h"
#include "wick/gguf.h"

namespace wick {

namespace {

// Projections of one input (q/k/v; gate/up): one matmul over the weights' rows concatenated when
// they share a format (fewer, larger kernels: what decode is bound by), else one each.
struct Projections {
  std::vector<nn::Linear> linears;  // one when fused
  std::vector<int64_t> sizes;       // output features of each projection
  std::vector<Tensor> biases;       // one per projection (f32), or none

  std::vector<Tensor> forward(const Tensor& x) const {
    if (linears.size() == 1) return add_biases(split(linears[0].forward(x)));
    std::vector<Tensor> out;
    for (const nn::Linear& l : linears) out.push_back(l.forward(x));
    return add_biases(std::move(out));
  }
  // The one quantized matrix of q, k and v without biases (QMatMul::forward_rope_kv takes it),
  // else null.
  const QMatMul* fused() const {
    return linears.size() == 1 && sizes.size() == 3 && biases.empty() ? linears[0].quantized()
                                                                      : nullptr;
  }
  // The one quantized matrix of gate and up (equal halves) without biases
  // (QMatMul::forward_swiglu_ffn takes it), else null.
  const QMatMul* fused_halves() const {
    return linears.size() == 1 && sizes.size() == 2 && sizes[0] == sizes[1] && biases.empty()
               ? linears[0].quantized()
               : nullptr;
  }
  // forward(x.rms_norm(alpha, eps)), the norm fused into the matmul's input where it can be.
  std::vector<Tensor> forward_rms_norm(const Tensor& x, const Tensor& alpha, double eps) const {
    if (linears.size() == 1) return add_biases(split(linears[0].forward_rms_norm(x, alpha, eps)));
    return forward(x.rms_norm(alpha, eps));
  }

 private:
  std::vector<Tensor> add_biases(std::vector<Tensor> out) const {
    for (size_t i = 0; i < biases.size(); i++) out[i] = out[i] + biases[i];
    return out;
  }
  std::vector<Tensor> split(const Tensor& y) const {
    if (sizes.size() == 1) return {y};
    std::vector<Tensor> out;
    int64_t start = 0;
    for (int64_t n : sizes) {
      out.push_back(y.narrow(y.rank() - 1, start, n));
      start += n;
    }
    return out;
  }
};

struct Layer {
  Tensor attn_norm, ffn_norm;
  Tensor post_attn_norm, post_ffn_norm;  // gemma2
  bool sliding = false;                  // attends to the last cfg.sliding_window rows only
  Projections qkv, gate_up;
  nn::Linear o, down;
  Tensor k_cache, v_cache;  // (1, kv_heads, max_seq, head_dim), written in place
};

}  // namespace

struct LlamaModel::Impl {
  std::shared_ptr<const GgufFile> file;  // keeps the mapped weights alive
  LlamaConfig cfg;
  Device dev = Device::cpu();
  int64_t max_seq = 0;
  KvCacheType kv_type = KvCacheType::F16;
  int64_t pos = 0;
  nn::Embedding embed;
  std::vector<Layer> layers;
  Tensor out_norm;
  nn::Linear lm_head;
  Tensor cos, sin;  // (max_seq, head_dim / 2)
  // The same times 1/sqrt(head_dim): q's rotation also applies the score scale.
  Tensor cos_q, sin_q;

  Tensor attention(Layer& l, const Tensor& x, int64_t t) const;
  // What layer l's attention does besides causal attention (Gemma 2: score soft-capping, a
  // sliding window on every other layer). `max_keys`: the most keys a query attends to where
  // the host knows the positions (0: in a captured step, whose positions change).
  AttentionOptions attention_options(const Layer& l, int64_t max_keys) const {
    return {cfg.attn_softcap, l.sliding ? cfg.sliding_window : 0, max_keys};
  }
  // x + the attention's output y (rows of h * d) through o (and the post norm); x + the FFN's.
  // `fused`: the add joins the matmul (as decode does), else plain ops (as the prompt does).
  Tensor attn_residual(const Layer& l, const Tensor& y, const Tensor& x, bool fused) const;
  Tensor ffn_residual(const Layer& l, const std::vector<Tensor>& gu, const Tensor& x,
                      bool fused) const;
  // x + the FFN of x's rms_norm with the fused ops (decode and forward_batch): one call
  // (QMatMul::forward_swiglu_ffn) where gate/up is one quantized matrix and down quantized.
  Tensor ffn_block(const Layer& l, const Tensor& x) const;
  // The token rows, scaled as the architecture says; the logits, soft-capped.
  Tensor embed_rows(const std::vector<uint32_t>& tokens) const;
  Tensor cap_logits(Tensor logits) const;
  // Per layer: the KV caches a decode step reads and writes, and the cache slot of each of its
  // sequences (undefined: slot i for sequence i).
  struct DecodeCaches {
    const std::vector<Tensor>& k;
    const std::vector<Tensor>& v;
    Tensor slots;
  };
  // The model's own caches (forward's), as DecodeCaches reads them.
  std::vector<Tensor> own_k, own_v;
  // One token of each of b sequences through the layers with the fused decode ops: x (b, hidden)
  // to logits (b, vocab); positions read from `pos` (a u32 tensor on dev, 1 or b elements):
  // nothing in it depends on the positions on the host, so it can be captured.
  // `max_keys`: AttentionOptions::max_keys (0 in a captured step).
  Tensor decode_logits(Tensor x, const Tensor& pos, const DecodeCaches& caches,
                       int64_t max_keys = 0);
  // decode_logits without the head: the last layer's output (b, hidden).
  Tensor decode_hidden(Tensor x, const Tensor& pos, const DecodeCaches& caches,
                       int64_t max_keys = 0);
  Tensor head(const Tensor& x) const;  // the final norm, lm_head and soft-cap
  // A prompt of t > 1 tokens through every layer at pos (advanced by t): the last hidden states.
  Tensor prompt_hidden(const std::vector<uint32_t>& tokens);
  // A decode step captured once on a GPU and replayed for every token (WICK_REPLAY): forward's
  // (one sequence), and forward_batch's per batch size (its sequences' slots an input).
  struct DecodeStep {
    Tensor x, pos, slots, logits;  // embedding rows (b, hidden), positions, slots, the output
    Recording recording;
  };
  std::optional<DecodeStep> step;
  // One-token forwards run so far: the first runs op by op and the second captures the step, so
  // that the first token after load (a chat turn's wait) does not also wait for the capture (on
  // the H100 CUDA's took 4-5 ms of a 9.4 ms first token, session 25).
  int64_t one_token_forwards = 0;
  std::map<int64_t, DecodeStep> batch_steps;
  // decode_greedy's chunk: `steps` one-token steps whose token is the step before's argmax,
  // picked and embedded on the device (embed_device), captured once and replayed: the host
  // writes the first token and the positions, then reads the `steps` tokens back once.
  struct GreedyChunk {
    Tensor token, pos, out;  // u32: the token fed first (1), the positions (steps), the picks
    Recording recording;
    int64_t runs = 0;  // chunks run: the first op by op, the second captures
  };
  std::optional<GreedyChunk> chunk;
  int64_t chunk_steps = knobs().decode_chunk;
  // The embedding table on the device for decode_greedy's chunks: the tied lm_head's blocks, or
  // the table uploaded at the first chunk; unset where the table is not quantized or the device
  // has no kernel for its rows (decode_greedy then steps through forward()).
  std::optional<QMatMul> embed_device_table;
  bool embed_device_checked = false;
  bool lm_head_tied = false;
  // The rows of ids (a u32 tensor on dev) of embed_device_table, scaled as embed_rows scales.
  Tensor embed_device(const Tensor& ids) const;
  // Whether decode_greedy runs chunks here (a GPU that replays, the table on the device).
  bool chunks_available();
  void run_chunk(GreedyChunk& c);
  bool replay = knobs().replay;
  int64_t prompt_rows = knobs().prompt_rows;  // forward_batch's longest prompt run as rows

  // The caches of new_sequence's sequences: per layer (slots, kvh, max_seq, d), a slot each, so
  // that one op serves every sequence of a batch. Slots are reused; the tensors grow by a slot
  // when all are taken (the captured batch steps, which name them, are dropped then).
  struct SequenceSlots {
    std::vector<Tensor> k, v;
    std::vector<bool> used;
    std::mutex mu;  // `used`: a sequence may be dropped on any thread
  };
  SequenceSlots seqs;
  int64_t take_slot();
  void free_slot(int64_t slot);
  Tensor batch_layers(Tensor x, const std::vector<SequenceStep>& steps,
                      const std::vector<size_t>& order, int64_t n_item_steps,
                      const Tensor& positions, const Tensor& slots, int64_t item_keys);
  Tensor replay_batch(const Tensor& x, const std::vector<uint32_t>& positions,
                      const std::vector<uint32_t>& slots);
};

namespace {

const char* kOp = "LlamaModel::load_gguf";
// Counts and sizes in llama files are u32; larger values are nonsense, refused before any use.
constexpr int64_t kMaxCount = INT32_MAX;

// The one place quantized weights meet a device: their blocks go there once, here.
nn::Linear quantized_linear(QTensor q, const Device& dev) {
  return nn::Linear(QMatMul(std::move(q), dev));
}

// A plain matrix in the dtype it is stored in when that is f32, f16 or bf16 (half the memory of
// widening 16-bit weights to f32), else f32.
Tensor plain_weight(const Tensor& w) {
  const DType dt = w.dtype();
  return dt == DType::F32 || dt == DType::F16 || dt == DType::BF16 ? w : w.to_dtype(DType::F32);
}

nn::Linear linear_from(const GgufFile& f, const std::string& name, const Device& dev) {
  const GgufTensorInfo& info = f.tensor_info(name);
  if (info.is_quantized())
    return quantized_linear(QTensor(info.type, info.shape, nullptr, info.data, info.nbytes), dev);
  return nn::Linear(plain_weight(f.tensor(name, dev)));
}

// Drops the resident pages of a quantized tensor's bytes in the file mapping once the model holds
// them elsewhere (QMatMul's packed rows on the CPU, a device buffer): the pages stay mapped and
// come back from the file if read again (MAP_PRIVATE, never written), but no longer count twice
// in the process's memory. Only whole pages inside the tensor are dropped.
void release_pages(const GgufTensorInfo& info) {
  if (!info.is_quantized() || info.nbytes == 0) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(info.data);
  const uintptr_t first = (begin + page - 1) / page * page,
                  end = (begin + info.nbytes) / page * page;
  if (end > first) ::madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
}

// Loads `names` (2-D, the same input size) as one Projections.
Projections projections_from(const GgufFile& f, const std::vector<std::string>& names,
                             const Device& dev) {
  Projections p;
  std::vector<const GgufTensorInfo*> infos;
  for (const std::string& n : names) {
    infos.push_back(&f.tensor_info(n));
    p.sizes.push_back(infos.back()->shape[0]);
  }
  bool same = true;
  for (const GgufTensorInfo* i : infos) same = same && i->type == infos[0]->type;
  if (!same) {
    for (const std::string& n : names) p.linears.push_back(linear_from(f, n, dev));
    return p;
  }
  int64_t rows = 0;
  for (const GgufTensorInfo* i : infos) rows += i->shape[0];
  const int64_t k = infos[0]->shape[1];
  if (infos[0]->is_quantized()) {
    // Stored one after the other in the file (ffn_gate, ffn_up in llama.cpp's files): a view of
    // the mapping, else a copy of the rows concatenated.
    bool adjacent = true;
    uint64_t nbytes = infos[0]->nbytes;
    for (size_t i = 1; i < infos.size(); i++) {
      adjacent = adjacent && infos[i]->data == infos[i - 1]->data + infos[i - 1]->nbytes;
      nbytes += infos[i]->nbytes;
    }
    if (adjacent) {
      p.linears.push_back(quantized_linear(
          QTensor(infos[0]->type, Shape{rows, k}, nullptr, infos[0]->data, nbytes), dev));
      return p;
    }
    // The CPU packs its own copy of the rows and keeps the weight it was given: a concatenated
    // copy would stay resident beside the packed one (10 MiB of SmolLM2's 154 at --ctx 256), so
    // there each projection views the mapping. GPUs keep one fused kernel (fewer dispatches).
    if (dev.is_cpu()) {
      for (const std::string& n : names) p.linears.push_back(linear_from(f, n, dev));
      return p;
    }
    std::vector<uint8_t> bytes;
    for (const GgufTensorInfo* i : infos) {
      const auto* b = reinterpret_cast<const uint8_t*>(i->data);
      bytes.insert(bytes.end(), b, b + i->nbytes);
    }
    p.linears.push_back(
        quantized_linear(QTensor(infos[0]->type, Shape{rows, k}, std::move(bytes)), dev));
  } else {
    std::vector<Tensor> parts;
    for (const std::string& n : names) parts.push_back(plain_weight(f.tensor(n)));
    p.linears.emplace_back(Tensor::cat(parts, 0).to_device(dev));
  }
  return p;
}

// Fails unless tensor `name` is in the file with shape `want`; `from` says which keys set it.
void expect_shape(const GgufFile& f, const std::string& name, const Shape& want,
                  const std::string& from) {
  const GgufTensorInfo& info = f.tensor_info(name);
  if (info.shape != want)
    fail(ErrorKind::Parse, kOp, f.name(), ": tensor ", name, " has shape ", info.shape, ", want ",
         want, " (", from, ")");
}

// An optional key that restates a size wick derives otherwise: absent, or equal to it.
void expect_key_equals(const GgufFile& f, std::string_view key, int64_t want,
                       const std::string& source) {
  const int64_t v = models::int_key(f, kOp, key, 1, kMaxCount, want);
  if (v != want)
    fail(ErrorKind::Parse, kOp, f.name(), ": ", key, " is ", v, ", but ", source, " is ", want);
}

// YaRN's magnitude correction of cos and sin for a context `factor` times the original
// (transformers' get_mscale; llama.cpp's since it cancels ggml's own): 1 for a factor <= 1.
double yarn_mscale(double factor) {
  return factor <= 1 ? 1.0 : 0.1 * std::log(factor) + 1.0;
}

// One set of head_dim / 2 rotary factors (rope_freqs, rope_factors_long/short): positive, finite.
std::vector<float> rope_factors(const GgufFile& f, const std::string& name, int64_t head_dim) {
  expect_shape(f, name, Shape{head_dim / 2}, "head dim / 2");
  const std::vector<float> factors = f.tensor(name).to_dtype(DType::F32).to_vec<float>();
  for (size_t i = 0; i < factors.size(); i++)
    if (!(factors[i] > 0) || !std::isfinite(factors[i]))
      fail(ErrorKind::Parse, kOp, f.name(), ": ", name, "[", i, "] is ", factors[i],
           ", want a positive finite factor");
  return factors;
}

// Rotary scaling (LlamaConfig's rope_* fields), read as llama.cpp reads it. The type
// ({arch}.rope.scaling.type) is none, linear (also when absent), yarn or longrope; others are
// refused. The factor ({arch}.rope.scaling.factor, or the older rope.scale_linear; 0 or absent:
// none) divides the interpolated frequencies; {arch}.rope.scaling.attn_factor (1 when absent)
// scales cos and sin. yarn: the factor (> 0) and original_context_length are required,
// yarn_beta_fast/slow default to 32 and 1, and cos/sin also take yarn_attn_factor (transformers'
// attention_factor) or else 0.1 ln(factor) + 1. Llama 3.x: a rope_freqs.weight tensor of per-pair
// divisors. longrope (Phi-3): the tensors rope_factors_long/short.weight and
// original_context_length, the type key optional (older files lack it); load_gguf picks the set
// by the context it runs with.
void read_rope_scaling(const GgufFile& f, const std::string& arch, LlamaConfig& c) {
  using models::float_key;
  const std::string a = arch + ".rope.scaling.";
  const double inf = std::numeric_limits<double>::infinity();
  std::string type = "linear";
  const std::string type_key = a + "type";
  if (const GgufValue* v = f.find(type_key)) {
    if (!v->is<std::string>())
      fail(ErrorKind::Parse, kOp, f.name(), ": ", type_key, " is ", v->str(2), ", want a string");
    type = v->as_string();
  }
  if (type != "none" && type != "linear" && type != "yarn" && type != "longrope")
    fail(ErrorKind::Unsupported, kOp, f.name(), ": rotary scaling (", type_key, " '",
         io::excerpt(type), "') is not implemented (none, linear, yarn and longrope are)");
  const bool yarn = type == "yarn";
  double factor =
      float_key(f, kOp, a + "factor", 0, inf, yarn, yarn ? std::nullopt : std::optional(0.0));
  if (factor == 0) factor = float_key(f, kOp, arch + ".rope.scale_linear", 0, inf, false, 0.0);
  // llama.cpp reads a factor of 0 as "no scaling", and none as no scaling whatever the factor.
  c.rope_freq_scale = factor == 0 || type == "none" ? 1.0 : 1.0 / factor;
  c.rope_attn_factor = float_key(f, kOp, a + "attn_factor", 0, inf, true, 1.0);
  const std::string orig_key = a + "original_context_length";
  if (f.find(orig_key) || yarn)
    c.rope_original_context = models::int_key(f, kOp, orig_key, 1, kMaxCount);

  if (yarn) {
    c.rope_yarn = true;
    if (!(c.rope_theta > 1))
      fail(ErrorKind::Parse, kOp, f.name(), ": ", arch, ".rope.freq_base is ", c.rope_theta,
           ", but yarn (", type_key, ") needs a base > 1");
    if (const double ext = float_key(f, kOp, a + "yarn_ext_factor", 0, inf, false, 1.0); ext != 1)
      fail(ErrorKind::Unsupported, kOp, f.name(), ": ", a, "yarn_ext_factor ", ext,
           " is not implemented (1, YaRN's full ramp, is)");
    if (const double m = float_key(f, kOp, a + "yarn_log_multiplier", 0, inf, false, 0.0); m != 0)
      fail(ErrorKind::Unsupported, kOp, f.name(), ": ", a, "yarn_log_multiplier ", m,
           " (DeepSeek's mscale_all_dim) is not implemented");
    c.rope_yarn_beta_fast = float_key(f, kOp, a + "yarn_beta_fast", 0, inf, true, 32.0);
    c.rope_yarn_beta_slow = float_key(f, kOp, a + "yarn_beta_slow", 0, inf, true, 1.0);
    if (!(c.rope_yarn_beta_fast > c.rope_yarn_beta_slow))
      fail(ErrorKind::Parse, kOp, f.name(), ": ", a, "yarn_beta_fast ", c.rope_yarn_beta_fast,
           " is not more than ", a, "yarn_beta_slow ", c.rope_yarn_beta_slow,
           " (the ramp runs from the fast pairs to the slow)");
    c.rope_attn_factor *= f.find(a + "yarn_attn_factor")
                              ? float_key(f, kOp, a + "yarn_attn_factor", 0, inf, true)
                              : yarn_mscale(factor);
  }

  const bool llama3 = f.find_tensor("rope_freqs.weight") != nullptr;
  const char* kLong = "rope_factors_long.weight";
  const char* kShort = "rope_factors_short.weight";
  const bool longrope = type == "longrope" || f.find_tensor(kLong) || f.find_tensor(kShort);
  if (llama3 && (longrope || yarn))
    fail(ErrorKind::Parse, kOp, f.name(), ": rope_freqs.weight (Llama 3's scaling) and ",
         longrope ? "longrope" : type_key + " 'yarn'", " both scale the rotary frequencies");
  if (llama3) c.rope_freq_factors = rope_factors(f, "rope_freqs.weight", c.head_dim);
  if (!longrope) return;
  if (yarn)
    fail(ErrorKind::Parse, kOp, f.name(), ": ", kLong, " (longrope) and ", type_key,
         " 'yarn' both scale the rotary frequencies");
  for (const char* t : {kLong, kShort})
    if (!f.find_tensor(t))
      fail(ErrorKind::Parse, kOp, f.name(), ": no tensor ", t,
           " (longrope takes both rope_factors_long.weight and rope_factors_short.weight)");
  // Which set applies depends on the context against this one: required, not guessed.
  c.rope_original_context = models::int_key(f, kOp, orig_key, 1, kMaxCount);
  c.rope_long_factors = rope_factors(f, kLong, c.head_dim);
  c.rope_short_factors = rope_factors(f, kShort, c.head_dim);
}

// The layer a "blk.N.*" tensor belongs to, or -1 for other names.
int64_t layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  name.remove_prefix(4);
  int64_t i = -1;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), i);
  return ec == std::errc() && end != name.data() && *end == '.' ? i : -1;
}

// The architectures read_config knows (mistral's files are llama's under another name).
constexpr std::string_view kArchitectures[] = {"llama", "mistral", "qwen2",
                                               "phi3",  "gemma",   "gemma2"};

// What sets each architecture apart from llama.
void set_architecture(const GgufFile& f, const std::string& arch, LlamaConfig& c) {
  c.architecture = arch;
  if (arch == "llama" || arch == "mistral") return;
  c.rope_interleaved = false;  // llama.cpp's NEOX rotary: halves of each head
  if (arch == "qwen2") {
    c.qkv_bias = true;
  } else if (arch == "gemma" || arch == "gemma2") {
    c.gelu_ffn = true;
    c.embed_scale = std::sqrt(static_cast<double>(c.hidden));
    if (arch == "gemma2") {
      using models::float_key;
      const double inf = std::numeric_limits<double>::infinity();
      // llama.cpp's defaults, Gemma 2's values, for files without the keys.
      c.attn_softcap = float_key(f, kOp, "gemma2.attn_logit_softcapping", 0, inf, true, 50.0);
      c.final_softcap = float_key(f, kOp, "gemma2.final_logit_softcapping", 0, inf, true, 30.0);
      c.sliding_window =
          models::int_key(f, kOp, "gemma2.attention.sliding_window", 1, kMaxCount, 4096);
      c.post_norms = true;
      // Gemma 2 scales scores by query_pre_attn_scalar^-1/2, which GGUF does not record: the
      // head dim for 2B and 9B, hidden / heads for 27B (46 layers), as llama.cpp decides.
      if (c.n_layers == 46)
        c.query_scale = 1.0 / std::sqrt(static_cast<double>(c.hidden / c.n_heads));
    }
  }
}

// Reads the hyper-parameters and checks them against each other and against every tensor's
// shape, before any weight is loaded.
LlamaConfig read_config(const GgufFile& f) {
  using models::float_key;
  using models::int_key;
  const std::string arch = f.get<std::string>("general.architecture");
  if (std::find(std::begin(kArchitectures), std::end(kArchitectures), arch) ==
      std::end(kArchitectures))
    fail(ErrorKind::Parse, kOp, f.name(), ": architecture '", io::excerpt(arch),
         "' is not supported (llama, mistral, qwen2, phi3, gemma, gemma2 are)");
  const std::string a = arch + ".";
  const auto key = [&](const char* k) { return a + k; };
  LlamaConfig c;
  c.hidden = int_key(f, kOp, key("embedding_length"), 1, kMaxCount);
  c.intermediate = int_key(f, kOp, key("feed_forward_length"), 1, kMaxCount);
  c.n_layers = int_key(f, kOp, key("block_count"), 1, kMaxCount);
  c.n_heads = int_key(f, kOp, key("attention.head_count"), 1, c.hidden);
  // The head dim: {arch}.attention.key_length (Gemma's differ from hidden / heads), else
  // hidden / heads.
  const std::string head_dim_source =
      f.find(key("attention.key_length"))
          ? key("attention.key_length")
          : key("embedding_length") + " / " + key("attention.head_count");
  if (f.find(key("attention.key_length"))) {
    c.head_dim = int_key(f, kOp, key("attention.key_length"), 1, kMaxCount / c.n_heads);
  } else {
    if (c.hidden % c.n_heads != 0)
      fail(ErrorKind::Parse, kOp, f.name(), ": ", key("embedding_length"), " ", c.hidden,
           " is not a multiple of ", key("attention.head_count"), " ", c.n_heads);
    c.head_dim = c.hidden / c.n_heads;
  }
  c.n_kv_heads = int_key(f, kOp, key("attention.head_count_kv"), 1, c.n_heads, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    fail(ErrorKind::Parse, kOp, f.name(), ": ", key("attention.head_count"), " ", c.n_heads,
         " is not a multiple of ", key("attention.head_count_kv"), " ", c.n_kv_heads);
  if (c.head_dim % 2 != 0)
    fail(ErrorKind::Parse, kOp, f.name(), ": odd head dim ", c.head_dim, " (", head_dim_source,
         "): rotary embeddings rotate pairs");
  if (const int64_t experts = int_key(f, kOp, key("expert_count"), 0, kMaxCount, 0))
    fail(ErrorKind::Unsupported, kOp, f.name(), ": ", key("expert_count"), " is ", experts,
         " (mixture of experts is not implemented)");
  c.context_length = int_key(f, kOp, key("context_length"), 1, kMaxCount);
  c.rope_theta = float_key(f, kOp, key("rope.freq_base"), 0,
                           std::numeric_limits<double>::infinity(), true, 10000.0);
  c.rms_eps = float_key(f, kOp, key("attention.layer_norm_rms_epsilon"), 0, 1, false);
  set_architecture(f, arch, c);

  const GgufTensorInfo& emb = f.tensor_info("token_embd.weight");
  if (emb.shape.rank() != 2 || emb.shape[1] != c.hidden || emb.shape[0] > kMaxCount)
    fail(ErrorKind::Parse, kOp, f.name(), ": tensor token_embd.weight has shape ", emb.shape,
         ", want [vocab <= ", kMaxCount, ", ", c.hidden, "] (", key("embedding_length"), " ",
         c.hidden, ")");
  c.vocab_size = emb.shape[0];
  expect_key_equals(f, key("vocab_size"), c.vocab_size, "the row count of token_embd.weight");
  if (const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
      tokens && tokens->is<GgufArray>() &&
      static_cast<int64_t>(tokens->as_array().items.size()) > c.vocab_size)
    fail(ErrorKind::Parse, kOp, f.name(), ": tokenizer.ggml.tokens has ",
         tokens->as_array().items.size(), " tokens, more than the ", c.vocab_size,
         " rows of token_embd.weight");
  for (const auto& [k, value] : f.metadata())
    if (models::is_token_id_key(k)) int_key(f, kOp, k, 0, c.vocab_size - 1);

  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  const std::string h = key("embedding_length") + " " + std::to_string(c.hidden);
  const std::string ffn =
      key("feed_forward_length") + " " + std::to_string(c.intermediate) + ", " + h;
  const std::string hd = "head dim " + std::to_string(c.head_dim) + " (" + head_dim_source + ")";
  const std::string qs =
      key("attention.head_count") + " " + std::to_string(c.n_heads) + " x " + hd + ", " + h;
  const std::string kv =
      key("attention.head_count_kv") + " " + std::to_string(c.n_kv_heads) + " x " + hd + ", " + h;
  const bool phi3 = arch == "phi3";
  for (int64_t i = 0; i < c.n_layers; i++) {
    const std::string p = "blk." + std::to_string(i) + ".";
    expect_shape(f, p + "attn_norm.weight", Shape{c.hidden}, h);
    if (phi3 && f.find_tensor(p + "attn_qkv.weight")) {  // q, k and v in one matrix
      expect_shape(f, p + "attn_qkv.weight", Shape{q_dim + 2 * kv_dim, c.hidden}, qs + ", " + kv);
    } else {
      expect_shape(f, p + "attn_q.weight", Shape{q_dim, c.hidden}, qs);
      expect_shape(f, p + "attn_k.weight", Shape{kv_dim, c.hidden}, kv);
      expect_shape(f, p + "attn_v.weight", Shape{kv_dim, c.hidden}, kv);
    }
    if (c.qkv_bias) {
      expect_shape(f, p + "attn_q.bias", Shape{q_dim}, qs);
      expect_shape(f, p + "attn_k.bias", Shape{kv_dim}, kv);
      expect_shape(f, p + "attn_v.bias", Shape{kv_dim}, kv);
    }
    expect_shape(f, p + "attn_output.weight", Shape{c.hidden, q_dim}, qs);
    expect_shape(f, p + "ffn_norm.weight", Shape{c.hidden}, h);
    if (phi3) {  // gate and up in one matrix, gate's rows first
      expect_shape(f, p + "ffn_up.weight", Shape{2 * c.intermediate, c.hidden},
                   "2 x " + key("feed_forward_length") + " " + std::to_string(c.intermediate) +
                       " (gate, then up), " + h);
    } else {
      expect_shape(f, p + "ffn_gate.weight", Shape{c.intermediate, c.hidden}, ffn);
      expect_shape(f, p + "ffn_up.weight", Shape{c.intermediate, c.hidden}, ffn);
    }
    expect_shape(f, p + "ffn_down.weight", Shape{c.hidden, c.intermediate}, ffn);
    if (c.post_norms) {
      expect_shape(f, p + "post_attention_norm.weight", Shape{c.hidden}, h);
      expect_shape(f, p + "post_ffw_norm.weight", Shape{c.hidden}, h);
    }
  }
  for (const GgufTensorInfo& t : f.tensors())
    if (layer_of(t.name) >= c.n_layers)
      fail(ErrorKind::Parse, kOp, f.name(), ": tensor ", t.name, " is in layer ", layer_of(t.name),
           ", but ", key("block_count"), " is ", c.n_layers);
  read_rope_scaling(f, arch, c);
  expect_shape(f, "output_norm.weight", Shape{c.hidden}, h);
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  if (!c.tied_embeddings)
    expect_shape(f, "output.weight", Shape{c.vocab_size, c.hidden},
                 "the rows of token_embd.weight, " + h);

  // Keys that restate the head dim (checked after the shapes, which name a wrong width better).
  expect_key_equals(f, key("attention.key_length"), c.head_dim, head_dim_source);
  expect_key_equals(f, key("attention.value_length"), c.head_dim, head_dim_source);
  const int64_t rope_dims = int_key(f, kOp, key("rope.dimension_count"), 1, c.head_dim, c.head_dim);
  if (rope_dims != c.head_dim)
    fail(ErrorKind::Unsupported, kOp, f.name(), ": ", key("rope.dimension_count"), " ", rope_dims,
         " rotates part of each head of ", c.head_dim, " (partial rotary is not implemented)");
  return c;
}

// Each pair's angle per position (LlamaConfig's formula): pair i turns by freq[i] a position.
std::vector<double> rotary_frequencies(const LlamaConfig& c) {
  const int64_t half = c.head_dim / 2;
  const double d = static_cast<double>(c.head_dim);
  // YaRN's correction range (ggml's corr dims): the pairs that turn beta_fast times over the
  // original context and faster keep their frequency, those turning beta_slow times and slower
  // take the interpolated one, the ramp between over whole pairs.
  double low = 0, high = 0;
  if (c.rope_yarn) {
    const auto dim_of = [&](double rotations) {
      return d * std::log(static_cast<double>(c.rope_original_context) / (rotations * 2 * M_PI)) /
             (2 * std::log(c.rope_theta));
    };
    low = std::max(0.0, std::floor(dim_of(c.rope_yarn_beta_fast)));
    high = std::min(d - 1, std::ceil(dim_of(c.rope_yarn_beta_slow)));
  }
  std::vector<double> freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; i++) {
    const auto di = static_cast<double>(i);
    double extrapolated = std::pow(c.rope_theta, -2.0 * di / d);
    if (!c.rope_freq_factors.empty()) extrapolated /= c.rope_freq_factors[static_cast<size_t>(i)];
    const double interpolated = extrapolated * c.rope_freq_scale;
    double f = interpolated;
    if (c.rope_yarn) {
      const double ramp = 1 - std::clamp((di - low) / std::max(0.001, high - low), 0.0, 1.0);
      f = interpolated * (1 - ramp) + extrapolated * ramp;
    }
    freq[static_cast<size_t>(i)] = f;
  }
  return freq;
}

uint64_t saturating_product(std::initializer_list<uint64_t> factors) {
  uint64_t p = 1;
  for (uint64_t x : factors)
    if (__builtin_mul_overflow(p, x, &p)) return UINT64_MAX;
  return p;
}

uint64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

// Refuses a context whose KV cache (of dtype kv) and rotary tables (f32, built on the host first)
// cannot fit in this machine's memory, before allocating any of it. GPU memory cannot be asked
// for here: there only the host's share is checked.
void check_context_fits(const std::string& path, const LlamaConfig& c, int64_t max_seq,
                        const Device& dev, DType kv) {
  const auto n = [](int64_t x) { return static_cast<uint64_t>(x); };
  const uint64_t half = n(c.head_dim / 2), seq = n(max_seq);
  const uint64_t cache =
      saturating_product({2, n(c.n_layers), n(c.n_kv_heads), seq, n(c.head_dim), dtype_size(kv)});
  const uint64_t tables = saturating_product({4, seq, half, sizeof(float)});
  uint64_t need = saturating_product({2, seq, half, sizeof(float)});  // the host copies
  if (dev.is_cpu() && __builtin_add_overflow(need, cache, &need)) need = UINT64_MAX;
  if (dev.is_cpu() && __builtin_add_overflow(need, tables, &need)) need = UINT64_MAX;
  const uint64_t limit = host_memory_bytes();
  if (limit > 0 && need > limit)
    fail(ErrorKind::OutOfRange, kOp, path, ": a context of ", max_seq, " tokens needs ", need,
         " bytes of host memory (",
         dev.is_cpu() ? "the KV cache of " + std::to_string(cache) + " bytes and the rotary tables"
                      : std::string("the rotary tables"),
         "), more than this machine's ", limit, " bytes");
}

// The cache's dtype; Unsupported for types not implemented.
DType kv_dtype(KvCacheType t, const std::string& path) {
  switch (t) {
    case KvCacheType::F32:
      return DType::F32;
    case KvCacheType::F16:
      return DType::F16;
    case KvCacheType::BF16:
      return DType::BF16;
    case KvCacheType::Q8_0:
      break;
  }
  fail(ErrorKind::Unsupported, kOp, path, ": a ", kv_cache_type_name(t),
       " KV cache is not implemented (f32, f16 and bf16 are)");
}

}  // namespace

const char* kv_cache_type_name(KvCacheType t) {
  switch (t) {
    case KvCacheType::F32:
      return "f32";
    case KvCacheType::F16:
      return "f16";
    case KvCacheType::BF16:
      return "bf16";
    case KvCacheType::Q8_0:
      return "q8_0";
  }
  return "?";
}

KvCacheType parse_kv_cache_type(std::string_view name) {
  for (KvCacheType t : {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0})
    if (name == kv_cache_type_name(t)) return t;
  fail(ErrorKind::Parse, "parse_kv_cache_type", "unknown KV cache type '", io::excerpt(name),
       "' (f32, f16, bf16, q8_0)");
}

LlamaModel LlamaModel::load_gguf(const std::string& path, const Device& dev, int64_t max_seq,
                                 const LoadProgress& progress) {
  LlamaOptions opts;
  opts.max_seq = max_seq;
  return load_gguf(path, dev, opts, progress);
}

LlamaModel LlamaModel::load_gguf(const std::string& path, const Device& dev,
                                 const LlamaOptions& opts, const LoadProgress& progress) {
  kv_dtype(opts.kv_cache, path);  // refused before the file is read
  return load_gguf(std::make_shared<const GgufFile>(GgufFile::open(path)), dev, opts, progress);
}

LlamaModel LlamaModel::load_gguf(std::shared_ptr<const GgufFile> file, const Device& dev,
                                 const LlamaOptions& opts, const LoadProgress& progress) {
  const std::string path = file->name();
  const int64_t max_seq = opts.max_seq;
  const DType kv = kv_dtype(opts.kv_cache, path);
  const GgufFile& f = *file;
  auto impl = std::make_shared<Impl>();
  impl->file = file;
  impl->cfg = read_config(f);
  const LlamaConfig& c = impl->cfg;
  if (max_seq < 0)
    fail(ErrorKind::OutOfRange, kOp, path, ": max_seq ", max_seq,
         " is negative (0 picks the model's context length, at most 4096)");
  if (max_seq > c.context_length)
    fail(ErrorKind::OutOfRange, kOp, path, ": max_seq ", max_seq,
         " is more than the model's context length of ", c.context_length, " tokens (",
         c.architecture, ".context_length)");
  impl->dev = dev;
  impl->max_seq = max_seq > 0 ? max_seq : std::min<int64_t>(c.context_length, 4096);
  impl->kv_type = opts.kv_cache;
  check_context_fits(path, c, impl->max_seq, dev, kv);

  uint64_t total = 0, done = 0;
  for (const auto& t : f.tensors()) total += t.nbytes;
  auto tick = [&](const std::string& name) {
    done += f.tensor_info(name).nbytes;
    if (progress) progress(done, total);
  };

  const GgufTensorInfo& emb = f.tensor_info("token_embd.weight");
  impl->embed = emb.is_quantized()
                    ? nn::Embedding(QTensor(emb.type, emb.shape, nullptr, emb.data, emb.nbytes))
                    : nn::Embedding(f.tensor("token_embd.weight"));
  tick("token_embd.weight");

  const Shape cache_shape{1, c.n_kv_heads, impl->max_seq, c.head_dim};
  const auto vector_from = [&](const std::string& name) {
    return f.tensor(name, dev).to_dtype(DType::F32);
  };
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  for (int64_t i = 0; i < c.n_layers; i++) {
    const std::string p = "blk." + std::to_string(i) + ".";
    Layer l;
    l.attn_norm = vector_from(p + "attn_norm.weight");
    l.ffn_norm = vector_from(p + "ffn_norm.weight");
    if (c.post_norms) {
      l.post_attn_norm = vector_from(p + "post_attention_norm.weight");
      l.post_ffn_norm = vector_from(p + "post_ffw_norm.weight");
    }
    l.sliding = c.sliding_window > 0 && i % 2 == 0;  // Gemma 2: even layers local, odd global
    std::vector<std::string> matrices;
    if (f.find_tensor(p + "attn_qkv.weight")) {  // phi3: one matrix, q's rows, k's, v's
      l.qkv.linears.push_back(linear_from(f, p + "attn_qkv.weight", dev));
      l.qkv.sizes = {q_dim, kv_dim, kv_dim};
      matrices.push_back("attn_qkv");
    } else {
      l.qkv =
          projections_from(f, {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}, dev);
      matrices.insert(matrices.end(), {"attn_q", "attn_k", "attn_v"});
    }
    if (c.qkv_bias)
      for (const char* m : {"attn_q", "attn_k", "attn_v"})
        l.qkv.biases.push_back(vector_from(p + m + ".bias"));
    l.o = linear_from(f, p + "attn_output.weight", dev);
    if (f.find_tensor(p + "ffn_gate.weight")) {
      l.gate_up = projections_from(f, {p + "ffn_gate.weight", p + "ffn_up.weight"}, dev);
      matrices.insert(matrices.end(), {"ffn_gate", "ffn_up"});
    } else {  // phi3: one matrix, gate's rows then up's
      l.gate_up.linears.push_back(linear_from(f, p + "ffn_up.weight", dev));
      l.gate_up.sizes = {c.intermediate, c.intermediate};
      matrices.push_back("ffn_up");
    }
    l.down = linear_from(f, p + "ffn_down.weight", dev);
    matrices.insert(matrices.end(), {"attn_output", "ffn_down"});
    for (const std::string& m : matrices) {
      release_pages(f.tensor_info(p + m + ".weight"));
      tick(p + m + ".weight");
    }
    l.k_cache = Tensor::zeros(cache_shape, kv, dev);
    l.v_cache = Tensor::zeros(cache_shape, kv, dev);
    impl->layers.push_back(std::move(l));
  }
  impl->out_norm = vector_from("output_norm.weight");
  if (!c.tied_embeddings) {
    impl->lm_head = linear_from(f, "output.weight", dev);
    release_pages(f.tensor_info("output.weight"));
    tick("output.weight");
  } else if (emb.is_quantized()) {
    impl->lm_head = quantized_linear(impl->embed.qtable(), dev);  // tied: blocks on dev too
    impl->lm_head_tied = true;
    release_pages(emb);  // the embedding reads a few rows a token: they come back
  } else {
    impl->lm_head = nn::Linear(plain_weight(impl->embed.table()).to_device(dev));
  }

  // Rotary tables: angle(p, i) = p * freq[i] (LlamaConfig's formula), cos and sin times the
  // attention factor. Longrope's factors are llama.cpp's pick: the long set when the context is
  // longer than the one the model was trained with.
  if (!c.rope_long_factors.empty())
    impl->cfg.rope_freq_factors =
        impl->max_seq > c.rope_original_context ? c.rope_long_factors : c.rope_short_factors;
  const int64_t half = c.head_dim / 2;
  const std::vector<double> freq = rotary_frequencies(c);
  std::vector<float> cs(static_cast<size_t>(impl->max_seq * half)), sn(cs.size());
  for (int64_t p = 0; p < impl->max_seq; p++)
    for (int64_t i = 0; i < half; i++) {
      const double a = static_cast<double>(p) * freq[static_cast<size_t>(i)];
      cs[p * half + i] = static_cast<float>(std::cos(a) * c.rope_attn_factor);
      sn[p * half + i] = static_cast<float>(std::sin(a) * c.rope_attn_factor);
    }
  impl->cos = Tensor::from_vec(cs, {impl->max_seq, half}, dev);
  impl->sin = Tensor::from_vec(sn, {impl->max_seq, half}, dev);
  const float scale = static_cast<float>(
      c.query_scale > 0 ? c.query_scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  for (float& v : cs) v *= scale;
  for (float& v : sn) v *= scale;
  impl->cos_q = Tensor::from_vec(cs, {impl->max_seq, half}, dev);
  impl->sin_q = Tensor::from_vec(sn, {impl->max_seq, half}, dev);
  if (progress) progress(total, total);
  for (const Layer& l : impl->layers) {
    impl->own_k.push_back(l.k_cache);
    impl->own_v.push_back(l.v_cache);
  }

  LlamaModel m;
  m.impl_ = std::move(impl);
  return m;
}

const LlamaConfig& LlamaModel::config() const {
  return impl_->cfg;
}
const GgufFile& LlamaModel::gguf() const {
  return *impl_->file;
}
const Device& LlamaModel::device() const {
  return impl_->dev;
}
int64_t LlamaModel::max_seq() const {
  return impl_->max_seq;
}
int64_t LlamaModel::position() const {
  return impl_->pos;
}
KvCacheType LlamaModel::kv_cache_type() const {
  return impl_->kv_type;
}
int64_t LlamaModel::kv_cache_bytes() const {
  int64_t n = 0;
  for (const Layer& l : impl_->layers)
    n += (l.k_cache.numel() + l.v_cache.numel()) *
         static_cast<int64_t>(dtype_size(l.k_cache.dtype()));
  return n;
}
void LlamaModel::reset() {
  impl_->pos = 0;
}

void LlamaModel::truncate(int64_t position) {
  if (position < 0 || position > impl_->pos)
    fail(ErrorKind::OutOfRange, "LlamaModel::truncate", "position ", position,
         " is outside the cache's tokens 0 .. ", impl_->pos);
  impl_->pos = position;
}

Tensor LlamaModel::Impl::embed_device(const Tensor& ids) const {
  const Tensor x = embed_device_table->rows(ids);  // (n, hidden)
  return cfg.embed_scale != 1.0 ? x * cfg.embed_scale : x;
}

bool LlamaModel::Impl::chunks_available() {
  if (chunk_steps <= 1 || !replay || !dev.can_capture()) return false;
  if (!embed_device_checked) {
    embed_device_checked = true;
    const QTensor& table = embed.qtable();
    if (table.defined()) {
      try {
        QMatMul q =
            lm_head_tied && lm_head.quantized() ? *lm_head.quantized() : QMatMul(table, dev);
        q.rows(Tensor::from_vec(std::vector<uint32_t>{0}, {1}, dev));  // a kernel for the format
        embed_device_table = std::move(q);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Unsupported) throw;
      }
    }
  }
  return embed_device_table.has_value();
}

// The chunk's steps: each embeds its token on the device, runs the decode step at its position
// and feeds its argmax (the first maximum, as greedy sampling picks) to the next.
void LlamaModel::Impl::run_chunk(GreedyChunk& c) {
  Tensor token = c.token;
  for (int64_t i = 0; i < c.pos.dim(0); i++) {
    const Tensor x = decode_hidden(embed_device(token), c.pos.narrow(0, i, 1),
                                   {own_k, own_v, {}});  // (1, hidden)
    const QMatMul* head_q = lm_head.quantized();
    if (head_q && cfg.final_softcap <= 0) {  // the product's kernel picks: no logits stored
      head_q->forward_argmax(x, c.out, i, out_norm, cfg.rms_eps);
    } else {
      const Tensor logits = head(x);  // (1, vocab)
      c.out.slice_set(logits.reshape({cfg.vocab_size}).argmax(0).reshape({1}), 0, i);
    }
    token = c.out.narrow(0, i, 1);
  }
}

void LlamaModel::set_decode_chunk(int64_t steps) {
  if (steps < 1)
    fail(ErrorKind::OutOfRange, "LlamaModel::set_decode_chunk", "a chunk of ", steps, " steps");
  if (steps != impl_->chunk_steps) impl_->chunk.reset();  // its tensors have the old length
  impl_->chunk_steps = steps;
}

int64_t LlamaModel::decode_chunk() const {
  return impl_->chunks_available() ? impl_->chunk_steps : 1;
}

std::vector<uint32_t> LlamaModel::decode_greedy(uint32_t token, int64_t n) {
  Impl& m = *impl_;
  const char* op = "LlamaModel::decode_greedy";
  if (n < 0) fail(ErrorKind::OutOfRange, op, "a negative token count (", n, ")");
  if (token >= static_cast<uint64_t>(m.cfg.vocab_size))
    fail(ErrorKind::OutOfRange, op, "token id ", token, " >= vocab size ", m.cfg.vocab_size);
  if (m.pos + n > m.max_seq)
    fail(ErrorKind::OutOfRange, op, "position ", m.pos, " + ", n, " tokens exceeds the cache of ",
         m.max_seq);
  std::vector<uint32_t> out;
  out.reserve(static_cast<size_t>(n));
  const int64_t k = decode_chunk();
  while (static_cast<int64_t>(out.size()) < n) {
    if (k == 1 || n - static_cast<int64_t>(out.size()) < k) {  // one step at a time
      token = forward({token}).argmax(0).to_vec<uint32_t>()[0];
      out.push_back(token);
      continue;
    }
    if (!m.chunk) {
      Impl::GreedyChunk c;
      c.token = Tensor::zeros({1}, DType::U32, m.dev);
      c.pos = Tensor::zeros({k}, DType::U32, m.dev);
      c.out = Tensor::zeros({k}, DType::U32, m.dev);
      m.chunk = std::move(c);
    }
    Impl::GreedyChunk& c = *m.chunk;
    std::vector<uint32_t> positions(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; i++)
      positions[static_cast<size_t>(i)] = static_cast<uint32_t>(m.pos + i);
    c.token.const_set(token);
    c.pos.slice_set(Tensor::from_vec(positions, {k}, m.dev), 0, 0);
    if (c.runs == 1) c.recording = m.dev.capture([&] { m.run_chunk(c); });
    if (c.runs == 0)
      m.run_chunk(c);  // the first op by op: the first tokens do not wait for the capture
    else
      c.recording.replay();
    c.runs++;
    const std::vector<uint32_t> picks = c.out.to_vec<uint32_t>();
    m.pos += k;
    out.insert(out.end(), picks.begin(), picks.end());
    token = picks.back();
  }
  return out;
}

Tensor LlamaModel::Impl::attn_residual(const Layer& l, const Tensor& y, const Tensor& x,
                                       bool fused) const {
  if (cfg.post_norms) return x + l.o.forward(y).rms_norm(l.post_attn_norm, cfg.rms_eps);
  return fused ? l.o.forward(y, x) : x + l.o.forward(y);  // fused: the add in the matmul's stores
}

Tensor LlamaModel::Impl::ffn_residual(const Layer& l, const std::vector<Tensor>& gu,
                                      const Tensor& x, bool fused) const {
  if (fused && !cfg.post_norms)
    return cfg.gelu_ffn ? l.down.forward(gu[0].gelu() * gu[1], x)
                        : l.down.forward_swiglu(gu[0], gu[1], x);
  Tensor y = l.down.forward(cfg.gelu_ffn ? gu[0].gelu() * gu[1] : gu[0].silu() * gu[1]);
  if (cfg.post_norms) y = y.rms_norm(l.post_ffn_norm, cfg.rms_eps);
  return x + y;
}

Tensor LlamaModel::Impl::ffn_block(const Layer& l, const Tensor& x) const {
  const QMatMul* gate_up = l.gate_up.fused_halves();
  const QMatMul* down = l.down.quantized();
  if (gate_up && down && !cfg.post_norms && !cfg.gelu_ffn)
    return gate_up->forward_swiglu_ffn(x, *down, x, l.ffn_norm, cfg.rms_eps);
  return ffn_residual(l, l.gate_up.forward_rms_norm(x, l.ffn_norm, cfg.rms_eps), x, true);
}

Tensor LlamaModel::Impl::embed_rows(const std::vector<uint32_t>& tokens) const {
  const Tensor x = embed.forward(tokens, dev);  // (t, hidden)
  return cfg.embed_scale != 1.0 ? x * cfg.embed_scale : x;
}

Tensor LlamaModel::Impl::cap_logits(Tensor logits) const {
  if (cfg.final_softcap <= 0) return logits;
  return (logits * (1.0 / cfg.final_softcap)).tanh() * cfg.final_softcap;
}

// The prompt's attention: the decode step's fused ops over t rows (the caches may be 16-bit,
// which the unfused matmuls over them could not read). Returns (t, h * d).
Tensor LlamaModel::Impl::attention(Layer& l, const Tensor& x, int64_t t) const {
  const int64_t h = cfg.n_heads, kvh = cfg.n_kv_heads, d = cfg.head_dim;
  auto heads = [&](const Tensor& y, int64_t n) { return y.reshape({1, t, n, d}).transpose(1, 2); };
  const std::vector<Tensor> qkv = l.qkv.forward(x);
  const Tensor position = Tensor::full(static_cast<uint32_t>(pos), {1}, DType::U32, dev);
  const Tensor q =
      rope_kv_cache(heads(qkv[0], h), heads(qkv[1], kvh), heads(qkv[2], kvh), l.k_cache, l.v_cache,
                    {cos_q, sin_q, cos, sin}, position, cfg.rope_interleaved);
  const Tensor y = attention_cached(q, l.k_cache, l.v_cache, position, {},
                                    attention_options(l, pos + t));  // (1, h, t, d)
  return y.transpose(1, 2).reshape({t, h * d});
}

Tensor LlamaModel::Impl::head(const Tensor& x) const {
  return cap_logits(lm_head.forward_rms_norm(x, out_norm, cfg.rms_eps));
}

Tensor LlamaModel::Impl::decode_logits(Tensor x, const Tensor& position, const DecodeCaches& caches,
                                       int64_t max_keys) {
  return head(decode_hidden(std::move(x), position, caches, max_keys));
}

Tensor LlamaModel::Impl::decode_hidden(Tensor x, const Tensor& position, const DecodeCaches& caches,
                                       int64_t max_keys) {
  const int64_t h = cfg.n_heads, kvh = cfg.n_kv_heads, d = cfg.head_dim, b = x.dim(0);
  auto heads = [&](const Tensor& y, int64_t n) { return y.reshape({b, 1, n, d}).transpose(1, 2); };
  const RotaryTables tables{cos_q, sin_q, cos, sin};
  for (size_t li = 0; li < layers.size(); li++) {
    const Layer& l = layers[li];
    const Tensor &kc = caches.k[li], &vc = caches.v[li];
    Tensor q;
    if (const QMatMul* fused = l.qkv.fused()) {  // the rotation and cache writes join the product
      q = fused->forward_rope_kv(
          x, {h, kvh, kc, vc, tables, position, cfg.rope_interleaved, caches.slots}, l.attn_norm,
          cfg.rms_eps);
    } else {
      const std::vector<Tensor> qkv = l.qkv.forward_rms_norm(x, l.attn_norm, cfg.rms_eps);
      q = rope_kv_cache(heads(qkv[0], h), heads(qkv[1], kvh), heads(qkv[2], kvh), kc, vc, tables,
                        position, cfg.rope_interleaved, caches.slots);
    }
    const Tensor y = attention_cached(q, kc, vc, position, caches.slots,
                                      attention_options(l, max_keys));  // (b, h, 1, d)
    x = attn_residual(l, y.reshape({b, h * d}), x, true);
    x = ffn_block(l, x);
  }
  return x;
}

int64_t LlamaModel::Impl::take_slot() {
  std::lock_guard lk(seqs.mu);
  for (size_t i = 0; i < seqs.used.size(); i++)
    if (!seqs.used[i]) {
      seqs.used[i] = true;
      return static_cast<int64_t>(i);
    }
  // Every slot taken: one more, the others' contents kept.
  for (size_t li = 0; li < layers.size(); li++) {
    const Tensor& own = layers[li].k_cache;  // (1, kvh, max_seq, d)
    const Tensor slot = Tensor::zeros(own.shape(), own.dtype(), dev);
    if (seqs.k.size() <= li) {
      seqs.k.push_back(slot);
      seqs.v.push_back(slot.copy());
    } else {
      seqs.k[li] = Tensor::cat({seqs.k[li], slot}, 0);
      seqs.v[li] = Tensor::cat({seqs.v[li], slot}, 0);
    }
  }
  batch_steps.clear();  // they name the old tensors
  seqs.used.push_back(true);
  return static_cast<int64_t>(seqs.used.size()) - 1;
}

void LlamaModel::Impl::free_slot(int64_t slot) {
  std::lock_guard lk(seqs.mu);
  seqs.used[static_cast<size_t>(slot)] = false;
}

int64_t LlamaModel::prompt_rows() const {
  return impl_->prompt_rows;
}

void LlamaModel::set_prompt_rows(int64_t tokens) {
  if (tokens < 0)
    fail(ErrorKind::Shape, "LlamaModel::set_prompt_rows", "a negative token count (", tokens, ")");
  impl_->prompt_rows = tokens;
}

void LlamaModel::set_replay(bool on) {
  impl_->replay = on;
  if (!on) {
    impl_->step.reset();
    impl_->chunk.reset();
  }
}

bool LlamaModel::replays() const {
  return impl_->replay && impl_->dev.can_capture();
}

namespace {

void check_forward(const char* op, int64_t pos, int64_t t, int64_t max_seq) {
  if (t == 0) fail(ErrorKind::Shape, op, "no tokens given");
  if (pos + t > max_seq)
    fail(ErrorKind::OutOfRange, op, "position ", pos, " + ", t, " tokens exceeds the cache of ",
         max_seq);
}

}  // namespace

Tensor LlamaModel::Impl::prompt_hidden(const std::vector<uint32_t>& tokens) {
  const auto t = static_cast<int64_t>(tokens.size());
  Tensor x = embed_rows(tokens);  // (t, hidden)
  for (Layer& l : layers) {
    x = attn_residual(l, attention(l, x.rms_norm(l.attn_norm, cfg.rms_eps), t), x, false);
    const std::vector<Tensor> gu = l.gate_up.forward(x.rms_norm(l.ffn_norm, cfg.rms_eps));
    x = ffn_residual(l, gu, x, false);
  }
  pos += t;
  return x;
}

Tensor LlamaModel::forward_all(const std::vector<uint32_t>& tokens) {
  Impl& m = *impl_;
  const auto t = static_cast<int64_t>(tokens.size());
  check_forward("LlamaModel::forward_all", m.pos, t, m.max_seq);
  if (t == 1) return forward(tokens).reshape({1, m.cfg.vocab_size});
  const Tensor x = m.prompt_hidden(tokens).rms_norm(m.out_norm, m.cfg.rms_eps);
  return m.cap_logits(m.lm_head.forward(x));  // the ops of forward()'s last row, every row
}

Tensor LlamaModel::forward(const std::vector<uint32_t>& tokens) {
  Impl& m = *impl_;
  const auto t = static_cast<int64_t>(tokens.size());
  check_forward("LlamaModel::forward", m.pos, t, m.max_seq);
  if (t > 1) {
    const Tensor x = m.prompt_hidden(tokens);
    const Tensor last = x.narrow(0, t - 1, 1).rms_norm(m.out_norm, m.cfg.rms_eps);
    return m.cap_logits(m.lm_head.forward(last).reshape({m.cfg.vocab_size}));
  }
  const Tensor x = m.embed_rows(tokens);  // (1, hidden)
  const auto position = static_cast<uint32_t>(m.pos);
  Tensor logits;
  if (replays() && (m.step || m.one_token_forwards > 0)) {
    if (!m.step) {  // captured at the second decode; replayed with new x and position after
      Impl::DecodeStep s;
      s.x = Tensor::zeros({1, m.cfg.hidden}, DType::F32, m.dev);
      s.pos = Tensor::zeros({1}, DType::U32, m.dev);
      s.recording = m.dev.capture([&] {
        s.logits = m.decode_logits(s.x, s.pos, {m.own_k, m.own_v, {}});
      });
      m.step = std::move(s);
    }
    m.step->x.slice_set(x, 0, 0);
    m.step->pos.const_set(position);
    m.step->recording.replay();
    logits = m.step->logits.copy();  // the step rewrites its output at the next replay
  } else {
    logits = m.decode_logits(x, Tensor::full(position, {1}, DType::U32, m.dev),
                             {m.own_k, m.own_v, {}}, m.pos + 1);
  }
  m.pos += 1;
  m.one_token_forwards++;
  return logits.reshape({m.cfg.vocab_size});
}

struct LlamaSequence::State {
  std::shared_ptr<LlamaModel::Impl> model;  // the owner, kept alive
  int64_t slot = 0;                         // in model->seqs
  int64_t pos = 0;
  State(std::shared_ptr<LlamaModel::Impl> m) : model(std::move(m)), slot(model->take_slot()) {}
  ~State() { model->free_slot(slot); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

int64_t LlamaSequence::position() const {
  return state_ ? state_->pos : 0;
}
int64_t LlamaSequence::max_seq() const {
  return state_ ? state_->model->max_seq : 0;
}
void LlamaSequence::reset() {
  if (state_) state_->pos = 0;
}

LlamaSequence LlamaModel::new_sequence() const {
  LlamaSequence s;
  s.state_ = std::make_shared<LlamaSequence::State>(impl_);
  return s;
}

Tensor LlamaModel::forward_batch(const std::vector<SequenceStep>& steps) {
  const char* op = "LlamaModel::forward_batch";
  Impl& m = *impl_;
  if (steps.empty()) fail(ErrorKind::Shape, op, "no sequences given");
  for (size_t i = 0; i < steps.size(); i++) {
    const SequenceStep& s = steps[i];
    if (!s.seq || !s.seq->state_)
      fail(ErrorKind::Shape, op, "step ", i, ": the sequence has no cache (use new_sequence)");
    if (s.seq->state_->model.get() != impl_.get())
      fail(ErrorKind::Shape, op, "step ", i, ": the sequence belongs to another model");
    for (size_t j = 0; j < i; j++)
      if (steps[j].seq->state_ == s.seq->state_)
        fail(ErrorKind::Shape, op, "steps ", j, " and ", i, " advance the same sequence");
    const auto t = static_cast<int64_t>(s.tokens.size());
    if (t == 0) fail(ErrorKind::Shape, op, "step ", i, " has no tokens");
    const int64_t pos = s.seq->state_->pos;
    if (pos + t > m.max_seq)
      fail(ErrorKind::OutOfRange, op, "step ", i, ": position ", pos, " + ", t,
           " tokens exceeds the cache of ", m.max_seq);
  }
  // The steps of one token first, then prompts of up to prompt_rows tokens: every token of these
  // is a row of one op each per layer (its own position, its sequence's slot); then the longer
  // prompts, each alone. A prompt's path depends on its length only, so its rows' numbers do not
  // depend on what joins the pass (on the CPU, bit for bit).
  const auto rank = [&](const SequenceStep& s) {
    const auto t = static_cast<int64_t>(s.tokens.size());
    return t == 1 ? 0 : t <= m.prompt_rows ? 1 : 2;
  };
  std::vector<size_t> order;
  for (int r = 0; r < 3; r++)
    for (size_t i = 0; i < steps.size(); i++)
      if (rank(steps[i]) == r) order.push_back(i);
  std::vector<uint32_t> tokens;
  std::vector<int64_t> rows(steps.size());     // the first row of each step in the stacked input
  std::vector<uint32_t> item_pos, item_slots;  // the rows of the steps of rank 0 and 1
  int64_t n_dec = 0, n_item_steps = 0;
  for (size_t i : order) {
    const LlamaSequence::State& st = *steps[i].seq->state_;
    rows[i] = static_cast<int64_t>(tokens.size());
    tokens.insert(tokens.end(), steps[i].tokens.begin(), steps[i].tokens.end());
    const int r = rank(steps[i]);
    if (r == 2) continue;
    n_dec += r == 0 ? 1 : 0;
    n_item_steps++;
    for (size_t j = 0; j < steps[i].tokens.size(); j++) {
      item_pos.push_back(static_cast<uint32_t>(st.pos + static_cast<int64_t>(j)));
      item_slots.push_back(static_cast<uint32_t>(st.slot));
    }
  }
  Tensor x = m.embed_rows(tokens);  // (rows, hidden); checks the ids
  Tensor logits;
  // Captured steps pin their buffers (the logits: b x vocab floats each): up to 16 sequences.
  constexpr int64_t kMaxReplayedBatch = 16;
  if (n_dec == static_cast<int64_t>(steps.size()) && n_dec <= kMaxReplayedBatch && replays()) {
    logits = m.replay_batch(x, item_pos, item_slots);
  } else {
    const auto n_items = static_cast<int64_t>(item_pos.size());
    const Tensor positions = Tensor::from_vec(item_pos, {n_items}, m.dev);
    const Tensor slots = Tensor::from_vec(item_slots, {n_items}, m.dev);
    const int64_t item_keys =
        item_pos.empty() ? 0 : *std::max_element(item_pos.begin(), item_pos.end()) + int64_t{1};
    x = m.batch_layers(x, steps, order, n_item_steps, positions, slots, item_keys);
    // The last row of each step, in the steps' order.
    Tensor last = x;
    bool in_order = static_cast<int64_t>(steps.size()) == x.dim(0);
    std::vector<uint32_t> idx;
    for (size_t i = 0; i < steps.size(); i++) {
      const int64_t r = rows[i] + static_cast<int64_t>(steps[i].tokens.size()) - 1;
      in_order = in_order && r == static_cast<int64_t>(i);
      idx.push_back(static_cast<uint32_t>(r));
    }
    if (!in_order)
      last = x.index_select(Tensor::from_vec(idx, {static_cast<int64_t>(idx.size())}, m.dev), 0);
    logits = m.head(last);
  }
  for (const SequenceStep& s : steps) s.seq->state_->pos += static_cast<int64_t>(s.tokens.size());
  return logits;
}

// The layers over the stacked rows of forward_batch (`order`: its steps' order in them). The rows
// of the first n_item_steps steps are items of one token, at `positions` in cache `slots`, and
// take one rope_kv and one attention a layer together; each later step is a prompt run alone.
Tensor LlamaModel::Impl::batch_layers(Tensor x, const std::vector<SequenceStep>& steps,
                                      const std::vector<size_t>& order, int64_t n_item_steps,
                                      const Tensor& positions, const Tensor& slots,
                                      int64_t item_keys) {
  const int64_t h = cfg.n_heads, kvh = cfg.n_kv_heads, d = cfg.head_dim;
  const RotaryTables tables{cos_q, sin_q, cos, sin};
  // Rows [first, first + n) as heads (n / t, heads, t, d) of sequences of t tokens each.
  auto heads = [&](const Tensor& y, int64_t first, int64_t n, int64_t t, int64_t nh) {
    return y.narrow(0, first, n).reshape({n / t, t, nh, d}).transpose(1, 2);
  };
  const int64_t n_items = positions.numel();
  // Each prompt's position, on the device once for every layer.
  std::vector<Tensor> prompt_pos;
  for (size_t j = static_cast<size_t>(n_item_steps); j < order.size(); j++)
    prompt_pos.push_back(
        Tensor::full(static_cast<double>(steps[order[j]].seq->state_->pos), {1}, DType::U32, dev));
  for (size_t li = 0; li < layers.size(); li++) {
    const Layer& l = layers[li];
    const Tensor &kc = seqs.k[li], &vc = seqs.v[li];
    const std::vector<Tensor> qkv = l.qkv.forward_rms_norm(x, l.attn_norm, cfg.rms_eps);
    std::vector<Tensor> ys;
    if (n_items > 0) {  // the items together
      const Tensor q =
          rope_kv_cache(heads(qkv[0], 0, n_items, 1, h), heads(qkv[1], 0, n_items, 1, kvh),
                        heads(qkv[2], 0, n_items, 1, kvh), kc, vc, tables, positions,
                        cfg.rope_interleaved, slots);
      ys.push_back(attention_cached(q, kc, vc, positions, slots, attention_options(l, item_keys))
                       .reshape({n_items, h * d}));
    }
    int64_t row = n_items;
    for (size_t j = static_cast<size_t>(n_item_steps); j < order.size(); j++) {
      const LlamaSequence::State& st = *steps[order[j]].seq->state_;
      const auto t = static_cast<int64_t>(steps[order[j]].tokens.size());
      const Tensor kcs = kc.narrow(0, st.slot, 1), vcs = vc.narrow(0, st.slot, 1);
      const Tensor& pos = prompt_pos[j - static_cast<size_t>(n_item_steps)];
      const Tensor q =
          rope_kv_cache(heads(qkv[0], row, t, t, h), heads(qkv[1], row, t, t, kvh),
                        heads(qkv[2], row, t, t, kvh), kcs, vcs, tables, pos, cfg.rope_interleaved);
      const Tensor y = attention_cached(q, kcs, vcs, pos, {}, attention_options(l, st.pos + t));
      ys.push_back(y.transpose(1, 2).reshape({t, h * d}));  // (1, h, t, d) -> (t, h * d)
      row += t;
    }
    x = attn_residual(l, ys.size() == 1 ? ys[0] : Tensor::cat(ys, 0), x, true);
    x = ffn_block(l, x);
  }
  return x;
}

// forward_batch's step when every sequence decodes one token, replayed: a step captured per batch
// size, its positions and slots inputs written before each replay. Returns the logits (b, vocab).
Tensor LlamaModel::Impl::replay_batch(const Tensor& x, const std::vector<uint32_t>& positions,
                                      const std::vector<uint32_t>& slots) {
  const int64_t b = x.dim(0);
  auto it = batch_steps.find(b);
  if (it == batch_steps.end()) {
    DecodeStep s;
    s.x = Tensor::zeros({b, cfg.hidden}, DType::F32, dev);
    s.pos = Tensor::zeros({b}, DType::U32, dev);
    s.slots = Tensor::zeros({b}, DType::U32, dev);
    s.recording = dev.capture([&] {
      s.logits = decode_logits(s.x, s.pos, {seqs.k, seqs.v, s.slots});
    });
    it = batch_steps.emplace(b, std::move(s)).first;
  }
  DecodeStep& s = it->second;
  s.x.slice_set(x, 0, 0);
  s.pos.slice_set(Tensor::from_vec(positions, {b}, dev), 0, 0);
  s.slots.slice_set(Tensor::from_vec(slots, {b}, dev), 0, 0);
  s.recording.replay();
  return s.logits.copy();  // the step rewrites its output at the next replay
}

GenerationStats generate(LlamaModel& model, const std::vector<uint32_t>& prompt, int64_t max_new,
                         Sampler& sampler, int32_t eos,
                         const std::function<bool(uint32_t)>& on_token) {
  using Clock = std::chrono::steady_clock;
  GenerationStats st;
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  if (max_new <= 0) return st;
  auto t0 = Clock::now();
  for (const uint32_t t : prompt) sampler.accept(t);
  Tensor logits = model.forward(prompt);
  // Plain greedy picks come from LlamaModel::decode_greedy, a chunk of steps at a time (the
  // first from the prompt's logits): `ahead` holds the picks not handed out yet. `fed` is the
  // position the model is at had it run one token at a time: past it only inside a chunk, and
  // cut back to it when generation stops there.
  const bool chunked = sampler.plain_greedy() && model.decode_chunk() > 1;
  std::vector<uint32_t> ahead;
  size_t next = 0;
  uint32_t last = 0;  // the previous pick
  int64_t fed = model.position();
  auto stop = [&] {
    if (model.position() > fed) model.truncate(fed);
  };
  for (int64_t i = 0; i < max_new; i++) {
    uint32_t tok;
    if (i == 0 || !chunked) {
      tok = sampler.sample(logits);  // reads the logits back: the step's sync point
    } else {
      if (next == ahead.size()) {
        const int64_t n =
            std::min({model.decode_chunk(), max_new - i, model.max_seq() - model.position()});
        ahead = model.decode_greedy(last, n);
        next = 0;
      }
      tok = ahead[next++];
    }
    if (i > 0) fed++;  // the pick before this one has been fed
    last = tok;
    sampler.accept(tok);
    const auto now = Clock::now();
    (i == 0 ? st.prefill_seconds : st.decode_seconds) +=
        std::chrono::duration<double>(now - t0).count();
    t0 = now;
    st.generated_tokens++;
    const bool go_on = on_token ? on_token(tok) : true;
    if (eos >= 0 && tok == static_cast<uint32_t>(eos)) {
      st.stopped_at_eos = true;
      stop();
      break;
    }
    if (!go_on || i + 1 == max_new) {
      stop();
      break;
    }
    if (fed >= model.max_seq()) {
      st.stopped_at_context_end = true;
      stop();
      break;
    }
    t0 = Clock::now();
    if (!chunked) logits = model.forward({tok});
  }
  return st;
}

}  // namespace wick
