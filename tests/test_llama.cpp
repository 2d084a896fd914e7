// The llama model end to end on tiny GGUF files the tests write themselves (tests/tiny_llama.h):
// logits against a float64 implementation written here from the architecture's definition, the KV
// cache against full recomputation, quantized and tied/untied weights, generation, sampling and
// errors. Runs on every device of the harness.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "gguf_bytes.h"
#include "harness.h"
#include "tiny_llama.h"
#include "wick/gguf.h"
#include "wick/llama.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

// ---- float64 reference ------------------------------------------------------------------------

using Vec = std::vector<double>;

// y = W x for W (out, in) row-major.
Vec matvec(const Ref& w, const Vec& x) {
  const int64_t out = w.shape[0], in = w.shape[1];
  Vec y(static_cast<size_t>(out), 0.0);
  for (int64_t o = 0; o < out; o++) {
    double s = 0;
    for (int64_t i = 0; i < in; i++)
      s += w.v[static_cast<size_t>(o * in + i)] * x[static_cast<size_t>(i)];
    y[static_cast<size_t>(o)] = s;
  }
  return y;
}

Vec rms_norm(const Vec& x, const Ref& alpha, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); i++) y[i] = x[i] * r * alpha.v[i];
  return y;
}

// Interleaved rotary embedding (llama.cpp's GGUF layout): pairs (2i, 2i+1) of each head.
void rope_interleaved(Vec& x, int64_t heads, int64_t d, int64_t pos, double theta) {
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < d / 2; i++) {
      const double a = static_cast<double>(pos) *
                       std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      double& x0 = x[static_cast<size_t>(h * d + 2 * i)];
      double& x1 = x[static_cast<size_t>(h * d + 2 * i + 1)];
      const double r0 = x0 * std::cos(a) - x1 * std::sin(a),
                   r1 = x0 * std::sin(a) + x1 * std::cos(a);
      x0 = r0;
      x1 = r1;
    }
}

// Logits of every position of `ids` (run from position 0), straight from the definition.
std::vector<Vec> reference_logits(const TinyLlama& m, const std::vector<uint32_t>& ids) {
  const TinyLlamaConfig& c = m.config;
  const int64_t d = c.head_dim(), h = c.heads, kvh = c.kv_heads, g = h / kvh,
                t = static_cast<int64_t>(ids.size());
  std::map<std::string, Ref> w;
  for (const auto& [name, tensor] : m.weights) w.emplace(name, to_ref(tensor.to_dtype(DType::F64)));
  std::vector<Vec> x(static_cast<size_t>(t));
  for (int64_t p = 0; p < t; p++) {
    const Ref& e = w.at("token_embd.weight");
    x[static_cast<size_t>(p)].assign(e.v.begin() + ids[static_cast<size_t>(p)] * c.hidden,
                                     e.v.begin() + (ids[static_cast<size_t>(p)] + 1) * c.hidden);
  }
  auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  for (int64_t l = 0; l < c.layers; l++) {
    const std::string pre = "blk." + std::to_string(l) + ".";
    std::vector<Vec> q(static_cast<size_t>(t)), k(q.size()), v(q.size());
    for (int64_t p = 0; p < t; p++) {
      const Vec hn = rms_norm(x[static_cast<size_t>(p)], w.at(pre + "attn_norm.weight"), c.rms_eps);
      q[static_cast<size_t>(p)] = matvec(w.at(pre + "attn_q.weight"), hn);
      k[static_cast<size_t>(p)] = matvec(w.at(pre + "attn_k.weight"), hn);
      v[static_cast<size_t>(p)] = matvec(w.at(pre + "attn_v.weight"), hn);
      rope_interleaved(q[static_cast<size_t>(p)], h, d, p, c.rope_theta);
      rope_interleaved(k[static_cast<size_t>(p)], kvh, d, p, c.rope_theta);
    }
    for (int64_t p = 0; p < t; p++) {
      Vec att(static_cast<size_t>(h * d), 0.0);
      for (int64_t hh = 0; hh < h; hh++) {
        const int64_t kv = hh / g;
        Vec s(static_cast<size_t>(p + 1));
        double mx = -INFINITY;
        for (int64_t j = 0; j <= p; j++) {
          double dot = 0;
          for (int64_t i = 0; i < d; i++)
            dot += q[static_cast<size_t>(p)][static_cast<size_t>(hh * d + i)] *
                   k[static_cast<size_t>(j)][static_cast<size_t>(kv * d + i)];
          s[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (double& e : s) sum += e = std::exp(e - mx);
        for (int64_t j = 0; j <= p; j++)
          for (int64_t i = 0; i < d; i++)
            att[static_cast<size_t>(hh * d + i)] +=
                s[static_cast<size_t>(j)] / sum *
                v[static_cast<size_t>(j)][static_cast<size_t>(kv * d + i)];
      }
      const Vec o = matvec(w.at(pre + "attn_output.weight"), att);
      Vec& xp = x[static_cast<size_t>(p)];
      for (size_t i = 0; i < xp.size(); i++) xp[i] += o[i];
      const Vec hn = rms_norm(xp, w.at(pre + "ffn_norm.weight"), c.rms_eps);
      Vec gate = matvec(w.at(pre + "ffn_gate.weight"), hn);
      const Vec up = matvec(w.at(pre + "ffn_up.weight"), hn);
      for (size_t i = 0; i < gate.size(); i++) gate[i] = silu(gate[i]) * up[i];
      const Vec down = matvec(w.at(pre + "ffn_down.weight"), gate);
      for (size_t i = 0; i < xp.size(); i++) xp[i] += down[i];
    }
  }
  const Ref& head = c.tied_embeddings ? w.at("token_embd.weight") : w.at("output.weight");
  std::vector<Vec> logits;
  for (const Vec& xp : x)
    logits.push_back(matvec(head, rms_norm(xp, w.at("output_norm.weight"), c.rms_eps)));
  return logits;
}

Ref as_ref(const Vec& v) {
  return Ref{Shape{static_cast<int64_t>(v.size())}, v};
}

// Tolerance for logits: f32 arithmetic everywhere, or activations quantized to 8 bits per block
// against block weights. Over 480 random models the worst logit was 1.8% of the largest one off
// (q4_k; 1.6% for q4_1/q8_0), so 4% leaves room while a wrong cache or kernel is far outside.
Tol logits_tol(const Vec& want, double quant_rel) {
  double mx = 0;
  for (double v : want) mx = std::max(mx, std::abs(v));
  return quant_rel > 0 ? Tol{quant_rel * mx + 1e-3, quant_rel} : Tol{2e-4 * mx + 1e-5, 1e-4};
}

// Values rounded to f16 on the way (2^-11 relative): k and v in an f16 KV cache, activations
// multiplied by f16 weights (kept as stored, as llama.cpp does) and their products. Measured
// (CPU and lavapipe): logits off by up to 7e-4 with the largest near 1; a wrong cache row or
// kernel is off by a tenth or more.
constexpr double kF16Rel = 0.005;

std::vector<uint32_t> random_ids(Rng& rng, int64_t n, int64_t vocab) {
  std::vector<uint32_t> ids(static_cast<size_t>(n));
  for (uint32_t& id : ids) id = static_cast<uint32_t>(rng.integer(0, vocab - 1));
  return ids;
}

class Llama : public DeviceTest {};

// Prefill of a prompt, then decode steps one token at a time: each step's logits must equal the
// reference run over the whole sequence (so the KV cache holds exactly the earlier keys/values).
// The cache is f32 unless given: the reference keeps k and v exact.
void check_against_reference(const Device& dev, const TinyLlamaConfig& cfg, double quantized,
                             KvCacheType kv = KvCacheType::F32) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng, cfg);
  LlamaModel model = LlamaModel::load_gguf(dir.file("tiny.gguf"), dev, LlamaOptions{16, kv});
  EXPECT_EQ(model.kv_cache_type(), kv);
  EXPECT_EQ(model.config().vocab_size, cfg.vocab);
  EXPECT_EQ(model.config().n_kv_heads, cfg.kv_heads);
  EXPECT_EQ(model.config().tied_embeddings, cfg.tied_embeddings);

  std::vector<uint32_t> ids = random_ids(rng, 6, cfg.vocab);
  const std::vector<uint32_t> more = random_ids(rng, 4, cfg.vocab);
  std::vector<uint32_t> all = ids;
  all.insert(all.end(), more.begin(), more.end());
  const std::vector<Vec> want = reference_logits(m, all);

  Tensor logits = model.forward(ids);
  EXPECT_EQ(logits.device(), dev);
  EXPECT_EQ(logits.shape(), (Shape{cfg.vocab}));
  WICK_EXPECT_CLOSE(logits, as_ref(want[5]), logits_tol(want[5], quantized));
  for (size_t i = 0; i < more.size(); i++) {
    logits = model.forward({more[i]});
    SCOPED_TRACE("decode step " + std::to_string(i));
    WICK_EXPECT_CLOSE(logits, as_ref(want[6 + i]), logits_tol(want[6 + i], quantized));
  }
  EXPECT_EQ(model.position(), 10);

  // After reset, the whole sequence in one pass gives the last position's logits again.
  model.reset();
  EXPECT_EQ(model.position(), 0);
  WICK_EXPECT_CLOSE(model.forward(all), as_ref(want[9]), logits_tol(want[9], quantized));
}

TEST_P(Llama, F32WeightsMatchTheFloat64Reference) {
  check_against_reference(device(), TinyLlamaConfig{}, 0);
}

TEST_P(Llama, UntiedF16WeightsMatchTheFloat64Reference) {
  TinyLlamaConfig cfg;
  cfg.tied_embeddings = false;
  cfg.weight_dtype = DType::F16;
  cfg.heads = 8;
  cfg.kv_heads = 8;  // plain multi-head attention
  check_against_reference(device(), cfg, kF16Rel);
}

// The default f16 cache: k and v rounded to f16 (relative 2^-11) before attention reads them.
TEST_P(Llama, F16KvCacheMatchesTheFloat64Reference) {
  TinyLlamaConfig cfg;
  cfg.heads = 4;
  cfg.kv_heads = 2;
  check_against_reference(device(), cfg, kF16Rel, KvCacheType::F16);
}

TEST_P(Llama, QuantizedWeightsMatchTheFloat64Reference) {
  for (QuantType q : {QuantType::Q4_1, QuantType::Q8_0, QuantType::Q4_K}) {
    TinyLlamaConfig cfg;
    cfg.hidden = q == QuantType::Q4_K ? 256 : 64;
    cfg.ffn = q == QuantType::Q4_K ? 512 : 96;
    cfg.heads = 4;
    cfg.kv_heads = 1;  // 4 query heads share one kv head
    cfg.matrix_quant = q;
    cfg.embed_quant = QuantType::Q8_0;
    SCOPED_TRACE(quant_type_info(q)->name);
    check_against_reference(device(), cfg, 0.04);
  }
}

TEST_P(Llama, GenerateStreamsTokensAndStopsAtEndOfSequence) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng);
  LlamaModel model = LlamaModel::load_gguf(dir.file("tiny.gguf"), device(), 32);
  const std::vector<uint32_t> prompt = random_ids(rng, 5, m.config.vocab);

  // Greedy tokens are the reference's argmax at every step.
  std::vector<uint32_t> got;
  Sampler greedy;
  GenerationStats st = generate(model, prompt, 6, greedy, -1, [&](uint32_t id) {
    got.push_back(id);
    return true;
  });
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(st.prompt_tokens, 5);
  EXPECT_EQ(st.generated_tokens, 6);
  EXPECT_FALSE(st.stopped_at_eos);
  EXPECT_EQ(model.position(), 5 + 5);  // the last sampled token is not fed back
  std::vector<uint32_t> seq = prompt;
  for (size_t i = 0; i < got.size(); i++) {
    const Vec want = reference_logits(m, seq).back();
    const double best = *std::max_element(want.begin(), want.end());
    // The pick is the reference's maximum up to f32 rounding of near-ties.
    EXPECT_GE(want[got[i]], best - 1e-4 * (1 + std::abs(best))) << "step " << i;
    seq.push_back(got[i]);
  }

  // Stops at eos (passed to the callback), and when the callback says so.
  model.reset();
  Sampler greedy2;
  std::vector<uint32_t> until_eos;
  size_t stop = 0;  // the last token whose first occurrence is in got[0..2]
  for (size_t i = 1; i < 3; i++)
    if (std::find(got.begin(), got.begin() + static_cast<long>(i), got[i]) ==
        got.begin() + static_cast<long>(i))
      stop = i;
  st = generate(model, prompt, 6, greedy2, static_cast<int32_t>(got[stop]), [&](uint32_t id) {
    until_eos.push_back(id);
    return true;
  });
  EXPECT_TRUE(st.stopped_at_eos);
  EXPECT_EQ(until_eos,
            std::vector<uint32_t>(got.begin(), got.begin() + static_cast<long>(stop) + 1));
  model.reset();
  Sampler greedy3;
  int calls = 0;
  st = generate(model, prompt, 6, greedy3, -1, [&](uint32_t) { return ++calls < 2; });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(st.generated_tokens, 2);
}

// Generation that fills the KV cache stops and says so (issue 9: it stopped silently).
TEST_P(Llama, GenerateStopsWhenTheContextIsFull) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng);
  LlamaModel model = LlamaModel::load_gguf(dir.file("tiny.gguf"), device(), 8);
  const std::vector<uint32_t> prompt = random_ids(rng, 5, m.config.vocab);
  Sampler greedy;
  const GenerationStats st = generate(model, prompt, 10, greedy, -1, nullptr);
  // Positions 5, 6 and 7 take the first three tokens sampled; the fourth has no room.
  EXPECT_EQ(st.generated_tokens, 4);
  EXPECT_EQ(model.position(), 8);
  EXPECT_TRUE(st.stopped_at_context_end);
  EXPECT_FALSE(st.stopped_at_eos);
  // Exactly as many tokens as fit: the run ends at max_new, not at the context's end.
  model.reset();
  Sampler greedy2;
  const GenerationStats exact = generate(model, prompt, 4, greedy2, -1, nullptr);
  EXPECT_EQ(exact.generated_tokens, 4);
  EXPECT_FALSE(exact.stopped_at_context_end);
}

TEST_P(Llama, Errors) {
  Rng rng;
  TempDir dir;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng);
  LlamaModel model = LlamaModel::load_gguf(dir.file("tiny.gguf"), device(), 8);
  EXPECT_EQ(model.max_seq(), 8);
  EXPECT_EQ(model.kv_cache_type(), KvCacheType::F16);  // the default
  EXPECT_EQ(model.kv_cache_bytes(),
            2 * m.config.layers * m.config.kv_heads * 8 * (m.config.hidden / m.config.heads) * 2);
  expect_error([&] { model.forward({static_cast<uint32_t>(m.config.vocab)}); },
               ErrorKind::OutOfRange, {"token id", std::to_string(m.config.vocab)});
  expect_error([&] { model.forward({}); }, ErrorKind::Shape, {"no tokens"});
  model.forward(random_ids(rng, 6, m.config.vocab));
  expect_error([&] { model.forward(random_ids(rng, 3, m.config.vocab)); }, ErrorKind::OutOfRange,
               {"position 6", "cache of 8"});
  EXPECT_EQ(model.position(), 6);  // a refused call changes nothing
  model.forward(random_ids(rng, 2, m.config.vocab));

  // Not a llama, or a tensor missing: parse errors naming the file and what is wrong.
  GgufWriter w;
  w.set("general.architecture", "gpt2");
  w.write(dir.file("gpt2.gguf"));
  expect_error([&] { LlamaModel::load_gguf(dir.file("gpt2.gguf"), device()); }, ErrorKind::Parse,
               {"gpt2.gguf", "architecture 'gpt2'"});
  GgufWriter w2;
  w2.set("general.architecture", "llama");
  const GgufFile tiny = GgufFile::open(dir.file("tiny.gguf"));
  for (const auto& [key, value] : tiny.metadata())
    if (key != "general.architecture" && key != "general.alignment") w2.set(key, value);
  for (const auto& [name, t] : m.weights)
    if (name != "blk.1.ffn_up.weight") w2.add_tensor(name, t);
  w2.write(dir.file("missing.gguf"));
  expect_error([&] { LlamaModel::load_gguf(dir.file("missing.gguf"), device()); }, ErrorKind::Parse,
               {"missing.gguf", "blk.1.ffn_up.weight"});

  // KV cache types: q8_0 is named but not implemented; unknown names do not parse.
  expect_error(
      [&] {
        LlamaModel::load_gguf(dir.file("tiny.gguf"), device(), {8, KvCacheType::Q8_0});
      },
      ErrorKind::Unsupported, {"tiny.gguf", "q8_0 KV cache is not implemented"});
  EXPECT_EQ(parse_kv_cache_type("bf16"), KvCacheType::BF16);
  EXPECT_STREQ(kv_cache_type_name(parse_kv_cache_type("q8_0")), "q8_0");
  expect_error([] { parse_kv_cache_type("f8"); }, ErrorKind::Parse, {"'f8'", "f16"});
}

WICK_INSTANTIATE_DEVICES(Llama);

// ---- tokenizer and chat template from the GGUF metadata ---------------------------------------

TEST(LlamaGguf, TokenizerAndChatTemplateComeFromTheFile) {
  Rng rng;
  TempDir dir;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng);
  const GgufFile f = GgufFile::open(dir.file("tiny.gguf"));
  const Tokenizer tok = load_gguf_tokenizer(f);
  EXPECT_EQ(tok.vocab_size(), m.config.vocab);
  EXPECT_EQ(tok.bos_id(), static_cast<int32_t>(m.bos_id));
  EXPECT_EQ(tok.eos_id(), static_cast<int32_t>(m.eos_id));
  EXPECT_FALSE(gguf_adds_bos(f));
  for (const char* text : {"abc def", " hello world", "zzz"})
    EXPECT_EQ(tok.decode(tok.encode(text)), text);
  EXPECT_TRUE(tok.is_control(tok.token_id("<|im_end|>")));
  const ChatTemplate tmpl = load_gguf_chat_template(f);
  const ChatMessage msg{"user", "hi"};
  EXPECT_EQ(tmpl.apply({&msg, 1}, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");

  GgufWriter w;
  w.set("general.architecture", "llama");
  w.write(dir.file("bare.gguf"));
  expect_error([&] { load_gguf_tokenizer(GgufFile::open(dir.file("bare.gguf"))); },
               ErrorKind::Parse, {"bare.gguf", "tokenizer"});
  GgufWriter w2;
  w2.set("tokenizer.ggml.model", "bert");
  w2.write(dir.file("wpm.gguf"));
  expect_error([&] { load_gguf_tokenizer(GgufFile::open(dir.file("wpm.gguf"))); },
               ErrorKind::Unsupported, {"'bert'", "gpt2", "llama"});
}

// ---- sampling -----------------------------------------------------------------------------------

TEST(Sampler, GreedyPicksTheFirstMaximum) {
  Sampler s;
  EXPECT_EQ(s.sample(Tensor::from_vec(std::vector<float>{0.5f, 3.0f, -1.0f, 3.0f}, {4})), 1u);
  expect_error([&] { s.sample(Tensor::zeros({2, 2}, DType::F32)); }, ErrorKind::Shape, {"vector"});
}

TEST(Sampler, TemperatureFollowsTheSoftmaxAndIsSeeded) {
  // p = softmax(l / T): with l = log(1, 2, 3, 4) and T = 1, p = (0.1, 0.2, 0.3, 0.4).
  const Tensor l = Tensor::from_vec(
      std::vector<float>{0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)}, {4});
  SamplingOptions o;
  o.temperature = 1.0;
  o.seed = 12345;
  Sampler a(o), b(o);
  std::vector<int> count(4, 0);
  const int n = 20000;
  for (int i = 0; i < n; i++) {
    const uint32_t x = a.sample(l);
    ASSERT_EQ(x, b.sample(l)) << "same seed, same sequence";
    count[x]++;
  }
  for (int i = 0; i < 4; i++)  // 5 sigma of a binomial
    EXPECT_NEAR(count[static_cast<size_t>(i)] / double(n), 0.1 * (i + 1), 5 * std::sqrt(0.25 / n))
        << i;

  // top-k 2 keeps {3, 2}; top-p 0.65 keeps {3, 2} (0.4 + 0.3 >= 0.65).
  for (int mode = 0; mode < 2; mode++) {
    SamplingOptions o2 = o;
    if (mode == 0)
      o2.top_k = 2;
    else
      o2.top_p = 0.65;
    Sampler s(o2);
    std::vector<int> c(4, 0);
    for (int i = 0; i < 4000; i++) c[s.sample(l)]++;
    EXPECT_EQ(c[0] + c[1], 0) << "mode " << mode;
    EXPECT_NEAR(c[3] / 4000.0, 4.0 / 7.0, 0.04) << "mode " << mode;
  }
  SamplingOptions bad;
  bad.top_p = 0;
  expect_error([&] { Sampler s(bad); }, ErrorKind::OutOfRange, {"top_p"});
}

}  // namespace
}  // namespace wick::testing
