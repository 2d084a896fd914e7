// The llama architecture: RMSNorm, rotary embeddings, grouped-query attention with a KV cache
// allocated once, SwiGLU MLP, optionally tied embeddings.
#include "wick/llama.h"

#include <cmath>

#include "nn/linear.h"
#include "wick/gguf.h"

namespace wick {

namespace {

struct Layer {
  Tensor attn_norm, ffn_norm;
  nn::Linear q, k, v, o, gate, up, down;
  Tensor k_cache, v_cache;  // (1, kv_heads, max_seq, head_dim), written in place
};

}  // namespace

struct LlamaModel::Impl {
  std::shared_ptr<const GgufFile> file;  // keeps the mapped weights alive
  LlamaConfig cfg;
  Device dev = Device::cpu();
  int64_t max_seq = 0;
  int64_t pos = 0;
  nn::Embedding embed;
  std::vector<Layer> layers;
  Tensor out_norm;
  nn::Linear lm_head;
  Tensor cos, sin;  // (max_seq, head_dim / 2)

  Tensor attention(Layer& l, const Tensor& x, int64_t t) const;
  Tensor causal_mask(int64_t t, int64_t total) const;
};

namespace {

const char* kOp = "LlamaModel::load_gguf";

nn::Linear linear_from(const GgufFile& f, const std::string& name, const Device& dev) {
  const GgufTensorInfo& info = f.tensor_info(name);
  if (info.shape.rank() != 2)
    fail(ErrorKind::Parse, kOp, f.name(), ": tensor ", name, " has shape ", info.shape, ", want 2-D");
  if (info.is_quantized())  // the blocks go to the device once, here
    return nn::Linear(
        QMatMul(QTensor(info.type, info.shape, nullptr, info.data, info.nbytes), dev));
  return nn::Linear(f.tensor(name, dev).to_dtype(DType::F32));
}

Tensor vector_from(const GgufFile& f, const std::string& name, int64_t n, const Device& dev) {
  Tensor t = f.tensor(name, dev).to_dtype(DType::F32);
  if (t.shape() != Shape{n})
    fail(ErrorKind::Parse, kOp, f.name(), ": tensor ", name, " has shape ", t.shape(), ", want [", n, "]");
  return t;
}

}  // namespace

LlamaModel LlamaModel::load_gguf(const std::string& path, const Device& dev, int64_t max_seq,
                                 const LoadProgress& progress) {
  auto file = std::make_shared<const GgufFile>(GgufFile::open(path));
  const GgufFile& f = *file;
  const std::string arch = f.get<std::string>("general.architecture");
  if (arch != "llama")
    fail(ErrorKind::Parse, kOp, path, ": architecture '", arch, "' is not llama");
  auto impl = std::make_shared<Impl>();
  impl->file = file;
  LlamaConfig& c = impl->cfg;
  c.hidden = f.get_int("llama.embedding_length");
  c.intermediate = f.get_int("llama.feed_forward_length");
  c.n_layers = f.get_int("llama.block_count");
  c.n_heads = f.get_int("llama.attention.head_count");
  c.n_kv_heads = f.find("llama.attention.head_count_kv") ? f.get_int("llama.attention.head_count_kv") : c.n_heads;
  c.context_length = f.get_int("llama.context_length");
  c.rope_theta = f.find("llama.rope.freq_base") ? f.get_float("llama.rope.freq_base") : 10000.0;
  c.rms_eps = f.get_float("llama.attention.layer_norm_rms_epsilon");
  if (c.n_heads <= 0 || c.n_kv_heads <= 0 || c.hidden % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0)
    fail(ErrorKind::Parse, kOp, path, ": inconsistent heads: hidden ", c.hidden, ", heads ", c.n_heads,
         ", kv heads ", c.n_kv_heads);
  c.head_dim = c.hidden / c.n_heads;
  if (c.head_dim % 2 != 0) fail(ErrorKind::Parse, kOp, path, ": odd head dim ", c.head_dim);
  c.rope_interleaved = true;

  impl->dev = dev;
  impl->max_seq = max_seq > 0 ? max_seq : std::min<int64_t>(c.context_length, 4096);

  uint64_t total = 0, done = 0;
  for (const auto& t : f.tensors()) total += t.nbytes;
  auto tick = [&](const std::string& name) {
    done += f.tensor_info(name).nbytes;
    if (progress) progress(done, total);
  };

  const GgufTensorInfo& emb = f.tensor_info("token_embd.weight");
  if (emb.shape.rank() != 2 || emb.shape[1] != c.hidden)
    fail(ErrorKind::Parse, kOp, path, ": token_embd.weight has shape ", emb.shape, ", want [vocab, ", c.hidden, "]");
  c.vocab_size = emb.shape[0];
  impl->embed = emb.is_quantized() ? nn::Embedding(QTensor(emb.type, emb.shape, nullptr, emb.data, emb.nbytes))
                                   : nn::Embedding(f.tensor("token_embd.weight"));
  tick("token_embd.weight");

  const Shape cache_shape{1, c.n_kv_heads, impl->max_seq, c.head_dim};
  for (int64_t i = 0; i < c.n_layers; i++) {
    const std::string p = "blk." + std::to_string(i) + ".";
    Layer l;
    l.attn_norm = vector_from(f, p + "attn_norm.weight", c.hidden, dev);
    l.ffn_norm = vector_from(f, p + "ffn_norm.weight", c.hidden, dev);
    const char* mats[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    nn::Linear* dst[] = {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down};
    for (int m = 0; m < 7; m++) {
      *dst[m] = linear_from(f, p + mats[m] + ".weight", dev);
      tick(p + mats[m] + ".weight");
    }
    l.k_cache = Tensor::zeros(cache_shape, DType::F32, dev);
    l.v_cache = Tensor::zeros(cache_shape, DType::F32, dev);
    impl->layers.push_back(std::move(l));
  }
  impl->out_norm = vector_from(f, "output_norm.weight", c.hidden, dev);
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  if (!c.tied_embeddings) {
    impl->lm_head = linear_from(f, "output.weight", dev);
    tick("output.weight");
  } else if (emb.is_quantized()) {
    impl->lm_head = nn::Linear(QMatMul(impl->embed.qtable(), dev));  // tied: blocks on dev too
  } else {
    impl->lm_head = nn::Linear(impl->embed.table().to_dtype(DType::F32).to_device(dev));
  }

  // Rotary tables: angle(p, i) = p * theta^(-2i / head_dim).
  const int64_t half = c.head_dim / 2;
  std::vector<float> cs(static_cast<size_t>(impl->max_seq * half)), sn(cs.size());
  for (int64_t p = 0; p < impl->max_seq; p++)
    for (int64_t i = 0; i < half; i++) {
      const double inv = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(c.head_dim));
      const double a = static_cast<double>(p) * inv;
      cs[p * half + i] = static_cast<float>(std::cos(a));
      sn[p * half + i] = static_cast<float>(std::sin(a));
    }
  impl->cos = Tensor::from_vec(cs, {impl->max_seq, half}, dev);
  impl->sin = Tensor::from_vec(sn, {impl->max_seq, half}, dev);
  if (progress) progress(total, total);

  LlamaModel m;
  m.impl_ = std::move(impl);
  return m;
}

const LlamaConfig& LlamaModel::config() const { return impl_->cfg; }
const Device& LlamaModel::device() const { return impl_->dev; }
int64_t LlamaModel::max_seq() const { return impl_->max_seq; }
int64_t LlamaModel::position() const { return impl_->pos; }
void LlamaModel::reset() { impl_->pos = 0; }

// (t, total) additive mask: query i (at position pos + i) sees keys 0 ..= pos + i.
Tensor LlamaModel::Impl::causal_mask(int64_t t, int64_t total) const {
  std::vector<float> m(static_cast<size_t>(t * total), 0.0f);
  for (int64_t i = 0; i < t; i++)
    for (int64_t j = pos + i + 1; j < total; j++) m[i * total + j] = -INFINITY;
  return Tensor::from_vec(m, {t, total}, dev);
}

Tensor LlamaModel::Impl::attention(Layer& l, const Tensor& x, int64_t t) const {
  const int64_t h = cfg.n_heads, kvh = cfg.n_kv_heads, d = cfg.head_dim, g = h / kvh;
  const Tensor cos_t = cos.narrow(0, pos, t), sin_t = sin.narrow(0, pos, t);
  auto heads = [&](const Tensor& y, int64_t n) { return y.reshape({1, t, n, d}).transpose(1, 2); };
  auto rot = [&](const Tensor& y) { return cfg.rope_interleaved ? y.rope_i(cos_t, sin_t) : y.rope(cos_t, sin_t); };
  const Tensor q = rot(heads(l.q.forward(x), h));  // (1, h, t, d) contiguous
  const Tensor k = rot(heads(l.k.forward(x), kvh));
  const Tensor v = heads(l.v.forward(x), kvh);
  l.k_cache.slice_set(k, 2, pos);
  l.v_cache.slice_set(v, 2, pos);
  const int64_t total = pos + t;
  const Tensor keys = l.k_cache.narrow(2, 0, total), values = l.v_cache.narrow(2, 0, total);
  // Grouped-query attention: the g query heads of one kv head form one (g * t)-row batch.
  const Tensor qg = q.reshape({1, kvh, g * t, d});
  Tensor att = qg.matmul(keys.t()) * (1.0 / std::sqrt(static_cast<double>(d)));
  if (t > 1) att = (att.reshape({1, kvh, g, t, total}) + causal_mask(t, total)).reshape({1, kvh, g * t, total});
  const Tensor y = att.softmax_last_dim().matmul(values);  // (1, kvh, g * t, d)
  return l.o.forward(y.reshape({1, h, t, d}).transpose(1, 2).reshape({t, h * d}));
}

Tensor LlamaModel::forward(const std::vector<uint32_t>& tokens) {
  Impl& m = *impl_;
  const auto t = static_cast<int64_t>(tokens.size());
  if (t == 0) fail(ErrorKind::Shape, "LlamaModel::forward", "no tokens given");
  if (m.pos + t > m.max_seq)
    fail(ErrorKind::OutOfRange, "LlamaModel::forward", "position ", m.pos, " + ", t, " tokens exceeds the cache of ",
         m.max_seq);
  Tensor x = m.embed.forward(tokens, m.dev);  // (t, hidden)
  for (Layer& l : m.layers) {
    x = x + m.attention(l, x.rms_norm(l.attn_norm, m.cfg.rms_eps), t);
    const Tensor hn = x.rms_norm(l.ffn_norm, m.cfg.rms_eps);
    x = x + l.down.forward(l.gate.forward(hn).silu() * l.up.forward(hn));
  }
  const Tensor last = x.narrow(0, t - 1, 1).rms_norm(m.out_norm, m.cfg.rms_eps);
  m.pos += t;
  return m.lm_head.forward(last).reshape({m.cfg.vocab_size});
}

}  // namespace wick
