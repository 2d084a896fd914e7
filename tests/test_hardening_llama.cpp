// Issue 9, items 8 and 9 (the model parts): the llama loader refuses nonsense hyper-parameters,
// naming the file, the key and the value; the context a caller asks for is checked against the
// model and the machine before anything is allocated; the sampler refuses NaN options. Each case
// is a tiny model (tests/tiny_llama.h) rewritten with one bad value.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "gguf_bytes.h"
#include "harness.h"
#include "tiny_llama.h"
#include "wick/gguf.h"
#include "wick/llama.h"

namespace wick::testing {
namespace {

using Changes = std::vector<std::pair<std::string, std::optional<GgufValue>>>;

// Copies the GGUF file `src` to `dst` with `changes` applied to its metadata (a value replaces or
// adds the key, nullopt removes it), without the tensors `drop` names, then with what `add` adds.
void rewrite(const std::string& src, const std::string& dst, const Changes& changes,
             const std::vector<std::string>& drop = {},
             const std::function<void(GgufWriter&)>& add = {}) {
  const GgufFile f = GgufFile::open(src);
  GgufWriter w(f.alignment());
  const auto change_of = [&](const std::string& key) -> const std::optional<GgufValue>* {
    for (const auto& [k, v] : changes)
      if (k == key) return &v;
    return nullptr;
  };
  for (const auto& [key, value] : f.metadata()) {
    if (key == "general.alignment") continue;
    const std::optional<GgufValue>* c = change_of(key);
    if (!c)
      w.set(key, value);
    else if (*c)
      w.set(key, **c);
  }
  for (const auto& [key, value] : changes)
    if (value && !f.find(key)) w.set(key, *value);
  for (const GgufTensorInfo& t : f.tensors())
    if (std::find(drop.begin(), drop.end(), t.name) == drop.end())
      w.add_raw_tensor(t.name, t.type, t.shape, t.bytes());
  if (add) add(w);
  w.write(dst);
}

struct BadModel {
  const char* what;
  Changes changes;
  ErrorKind kind;
  std::vector<std::string> needles;  // besides the file name
};

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(LlamaHardening, HyperParametersOutOfRangeOrInconsistentAreRefused) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng);  // vocab 40, hidden 32, ...
  ASSERT_EQ(m.config.vocab, 40);
  ASSERT_EQ(m.config.head_dim(), 8);
  LlamaModel::load_gguf(dir.file("tiny.gguf"));  // the unchanged file loads

  const ErrorKind P = ErrorKind::Parse, U = ErrorKind::Unsupported;
  const std::vector<BadModel> cases = {
      {"no layers", {{"llama.block_count", uint32_t{0}}}, P, {"llama.block_count", "u32 0"}},
      {"negative layers", {{"llama.block_count", int32_t{-1}}}, P, {"llama.block_count", "i32 -1"}},
      {"layers as a bool", {{"llama.block_count", true}}, P, {"llama.block_count", "bool true"}},
      {"fewer layers than the tensors",
       {{"llama.block_count", uint32_t{1}}},
       P,
       {"blk.1.", "llama.block_count is 1"}},
      {"rope base NaN", {{"llama.rope.freq_base", kNan}}, P, {"llama.rope.freq_base", "nan"}},
      {"rope base inf", {{"llama.rope.freq_base", kInf}}, P, {"llama.rope.freq_base", "inf"}},
      {"rope base 0", {{"llama.rope.freq_base", 0.0f}}, P, {"llama.rope.freq_base", "f32 0"}},
      {"rope base < 0",
       {{"llama.rope.freq_base", -10000.0}},
       P,
       {"llama.rope.freq_base", "-10000"}},
      {"epsilon NaN",
       {{"llama.attention.layer_norm_rms_epsilon", kNan}},
       P,
       {"llama.attention.layer_norm_rms_epsilon", "nan"}},
      {"epsilon < 0",
       {{"llama.attention.layer_norm_rms_epsilon", -1e-5f}},
       P,
       {"llama.attention.layer_norm_rms_epsilon", "-9.99999975e-06"}},
      {"feed-forward length not the tensors'",
       {{"llama.feed_forward_length", uint32_t{47}}},
       P,
       {"blk.0.ffn_gate.weight", "[48, 32]", "llama.feed_forward_length 47"}},
      {"embedding length not the tensors'",
       {{"llama.embedding_length", uint32_t{64}}},
       P,
       {"token_embd.weight", "[40, 32]", "llama.embedding_length 64"}},
      {"heads not dividing the width",
       {{"llama.attention.head_count", uint32_t{5}}},
       P,
       {"llama.embedding_length 32", "llama.attention.head_count 5"}},
      {"no heads", {{"llama.attention.head_count", uint32_t{0}}}, P, {"head_count", "u32 0"}},
      {"kv heads not dividing the heads",
       {{"llama.attention.head_count_kv", uint32_t{3}}},
       P,
       {"llama.attention.head_count_kv 3"}},
      {"kv heads 0",
       {{"llama.attention.head_count_kv", uint32_t{0}}},
       P,
       {"head_count_kv", "u32 0"}},
      {"odd head dim",
       {{"llama.attention.head_count", uint32_t{32}}},
       P,
       {"odd head dim 1", "llama.attention.head_count"}},
      {"context length 0",
       {{"llama.context_length", uint32_t{0}}},
       P,
       {"llama.context_length", "u32 0"}},
      {"context length beyond u32",
       {{"llama.context_length", uint64_t{1} << 40}},
       P,
       {"llama.context_length", "1099511627776"}},
      {"vocab size not the embedding's",
       {{"llama.vocab_size", uint32_t{41}}},
       P,
       {"llama.vocab_size is 41", "token_embd.weight", "40"}},
      // The key length is the head dim (Gemma's differ from hidden / heads): q's rows disagree.
      {"key length not the matrices' head dim",
       {{"llama.attention.key_length", uint32_t{16}}},
       P,
       {"blk.0.attn_q.weight", "[32, 32]", "[64, 32]", "head dim 16 (llama.attention.key_length)"}},
      {"value length not the key length",
       {{"llama.attention.value_length", uint32_t{16}}},
       P,
       {"llama.attention.value_length is 16", "8"}},
      {"rope dims beyond the head",
       {{"llama.rope.dimension_count", uint32_t{16}}},
       P,
       {"llama.rope.dimension_count", "u32 16"}},
      {"partial rope",
       {{"llama.rope.dimension_count", uint32_t{4}}},
       U,
       {"llama.rope.dimension_count 4"}},
      {"rope scaling of a type not implemented",
       {{"llama.rope.scaling.type", "dynamic"}},
       U,
       {"llama.rope.scaling.type 'dynamic'", "none, linear, yarn and longrope"}},
      {"yarn without a factor",
       {{"llama.rope.scaling.type", "yarn"},
        {"llama.rope.scaling.original_context_length", uint32_t{32}}},
       P,
       {"no key llama.rope.scaling.factor"}},
      {"yarn factor 0",
       {{"llama.rope.scaling.type", "yarn"},
        {"llama.rope.scaling.factor", 0.0f},
        {"llama.rope.scaling.original_context_length", uint32_t{32}}},
       P,
       {"llama.rope.scaling.factor is f32 0", "want a finite number > 0"}},
      {"yarn factor negative",
       {{"llama.rope.scaling.type", "yarn"},
        {"llama.rope.scaling.factor", -4.0f},
        {"llama.rope.scaling.original_context_length", uint32_t{32}}},
       P,
       {"llama.rope.scaling.factor is f32 -4"}},
      {"yarn without the original context",
       {{"llama.rope.scaling.type", "yarn"}, {"llama.rope.scaling.factor", 4.0f}},
       P,
       {"no key llama.rope.scaling.original_context_length"}},
      {"yarn original context 0",
       {{"llama.rope.scaling.type", "yarn"},
        {"llama.rope.scaling.factor", 4.0f},
        {"llama.rope.scaling.original_context_length", uint32_t{0}}},
       P,
       {"llama.rope.scaling.original_context_length is u32 0"}},
      {"yarn ramp backwards",
       {{"llama.rope.scaling.type", "yarn"},
        {"llama.rope.scaling.factor", 4.0f},
        {"llama.rope.scaling.original_context_length", uint32_t{32}},
        {"llama.rope.scaling.yarn_beta_fast", 1.0f},
        {"llama.rope.scaling.yarn_beta_slow", 2.0f}},
       P,
       {"llama.rope.scaling.yarn_beta_fast 1 is not more than llama.rope.scaling.yarn_beta_slow "
        "2"}},
      {"yarn over a base of 1",
       {{"llama.rope.freq_base", 1.0f},
        {"llama.rope.scaling.type", "yarn"},
        {"llama.rope.scaling.factor", 4.0f},
        {"llama.rope.scaling.original_context_length", uint32_t{32}}},
       P,
       {"llama.rope.freq_base is 1", "yarn"}},
      {"partial yarn",
       {{"llama.rope.scaling.type", "yarn"},
        {"llama.rope.scaling.factor", 4.0f},
        {"llama.rope.scaling.original_context_length", uint32_t{32}},
        {"llama.rope.scaling.yarn_ext_factor", 0.5f}},
       U,
       {"llama.rope.scaling.yarn_ext_factor 0.5"}},
      {"DeepSeek's yarn",
       {{"llama.rope.scaling.type", "yarn"},
        {"llama.rope.scaling.factor", 4.0f},
        {"llama.rope.scaling.original_context_length", uint32_t{32}},
        {"llama.rope.scaling.yarn_log_multiplier", 0.1f}},
       U,
       {"llama.rope.scaling.yarn_log_multiplier 0.1", "mscale_all_dim"}},
      {"attention factor 0",
       {{"llama.rope.scaling.attn_factor", 0.0f}},
       P,
       {"llama.rope.scaling.attn_factor is f32 0"}},
      {"longrope without its factors",
       {{"llama.rope.scaling.type", "longrope"},
        {"llama.rope.scaling.original_context_length", uint32_t{32}}},
       P,
       {"no tensor rope_factors_long.weight"}},
      {"experts", {{"llama.expert_count", uint32_t{8}}}, U, {"llama.expert_count is 8"}},
      {"bos id beyond u32 (was truncated to 0)",
       {{"tokenizer.ggml.bos_token_id", uint64_t{1} << 40}},
       P,
       {"tokenizer.ggml.bos_token_id", "1099511627776"}},
      {"bos id beyond i64",
       {{"tokenizer.ggml.bos_token_id", std::numeric_limits<uint64_t>::max()}},
       P,
       {"tokenizer.ggml.bos_token_id", "u64 18446744073709551615"}},
      {"eos id past the vocabulary",
       {{"tokenizer.ggml.eos_token_id", uint32_t{40}}},
       P,
       {"tokenizer.ggml.eos_token_id", "u32 40", "[0, 39]"}},
      {"negative pad id",
       {{"tokenizer.ggml.padding_token_id", int32_t{-1}}},
       P,
       {"tokenizer.ggml.padding_token_id", "i32 -1"}},
      {"an unread special token past the vocabulary",
       {{"tokenizer.ggml.mask_token_id", uint32_t{1000}}},
       P,
       {"tokenizer.ggml.mask_token_id", "1000"}},
  };
  int i = 0;
  for (const BadModel& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string path = dir.file("bad" + std::to_string(i++) + ".gguf");
    rewrite(dir.file("tiny.gguf"), path, c.changes);
    std::vector<std::string> needles = c.needles;
    needles.push_back(path);
    expect_error([&] { LlamaModel::load_gguf(path, Device::cpu(), 8); }, c.kind, needles);
  }
}

TEST(LlamaHardening, TensorsThatDisagreeWithTheVocabularyAreRefused) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  TinyLlamaConfig cfg;
  cfg.tied_embeddings = false;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng, cfg);

  // An output projection of 41 rows for a 40-token embedding: logits of the wrong length.
  const std::string wide = dir.file("wide_output.gguf");
  rewrite(dir.file("tiny.gguf"), wide, {}, {"output.weight"}, [&](GgufWriter& w) {
    w.add_tensor("output.weight", Tensor::zeros({41, cfg.hidden}, DType::F32));
  });
  expect_error([&] { LlamaModel::load_gguf(wide); }, ErrorKind::Parse,
               {wide, "output.weight", "[41, 32]", "[40, 32]"});

  // A tokenizer with more tokens than the embedding has rows: ids the model cannot embed.
  std::vector<std::string> tokens = m.tokens;
  tokens.push_back("zzextra");
  std::vector<int32_t> types = m.token_types;
  types.push_back(1);
  const std::string more = dir.file("more_tokens.gguf");
  rewrite(dir.file("tiny.gguf"), more,
          {{"tokenizer.ggml.tokens", GgufValue::array(tokens)},
           {"tokenizer.ggml.token_type", GgufValue::array(types)}});
  expect_error([&] { LlamaModel::load_gguf(more); }, ErrorKind::Parse,
               {more, "tokenizer.ggml.tokens has 41 tokens", "40"});
}

// The tensors of llama's relatives and Llama 3's rotary factors are checked as llama's are.
TEST(LlamaHardening, ArchitectureTensorsAreChecked) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  TinyLlamaConfig cfg;
  cfg.rope_freqs = true;
  write_tiny_llama(dir.file("llama3.gguf"), rng, cfg);
  const std::string short_freqs = dir.file("short_freqs.gguf");
  rewrite(dir.file("llama3.gguf"), short_freqs, {}, {"rope_freqs.weight"},
          [&](GgufWriter& w) { w.add_tensor("rope_freqs.weight", Tensor::ones({3}, DType::F32)); });
  expect_error([&] { LlamaModel::load_gguf(short_freqs); }, ErrorKind::Parse,
               {short_freqs, "rope_freqs.weight", "[3]", "[4]"});
  const std::string zero_freq = dir.file("zero_freq.gguf");
  rewrite(dir.file("llama3.gguf"), zero_freq, {}, {"rope_freqs.weight"}, [&](GgufWriter& w) {
    w.add_tensor("rope_freqs.weight", Tensor::from_vec(std::vector<float>{1, 2, 0, 4}, {4}));
  });
  expect_error([&] { LlamaModel::load_gguf(zero_freq); }, ErrorKind::Parse,
               {zero_freq, "rope_freqs.weight[2] is 0"});

  cfg = {};
  cfg.arch = "qwen2";
  write_tiny_llama(dir.file("qwen2.gguf"), rng, cfg);
  const std::string no_bias = dir.file("no_bias.gguf");
  rewrite(dir.file("qwen2.gguf"), no_bias, {}, {"blk.1.attn_k.bias"});
  expect_error([&] { LlamaModel::load_gguf(no_bias); }, ErrorKind::Parse,
               {no_bias, "blk.1.attn_k.bias"});

  cfg = {};
  cfg.arch = "phi3";
  write_tiny_llama(dir.file("phi3.gguf"), rng, cfg);
  const std::string narrow_up = dir.file("narrow_up.gguf");
  rewrite(dir.file("phi3.gguf"), narrow_up, {}, {"blk.0.ffn_up.weight"}, [&](GgufWriter& w) {
    w.add_tensor("blk.0.ffn_up.weight", Tensor::zeros({48, 32}, DType::F32));
  });
  expect_error([&] { LlamaModel::load_gguf(narrow_up); }, ErrorKind::Parse,
               {narrow_up, "blk.0.ffn_up.weight", "[48, 32]", "[96, 32]", "gate, then up"});
  // Longrope: both factor sets, head dim / 2 positive factors each, and the original context
  // that picks between them.
  struct LongRope {
    const char* what;
    Changes changes;
    std::vector<std::pair<std::string, Tensor>> tensors;
    std::vector<std::string> needles;
  };
  const Changes orig = {{"phi3.rope.scaling.original_context_length", uint32_t{16}}};
  const Tensor four = Tensor::ones({4}, DType::F32);
  const std::vector<LongRope> longropes = {
      {"one set",
       orig,
       {{"rope_factors_long.weight", four}},
       {"no tensor rope_factors_short.weight"}},
      {"a set too short",
       orig,
       {{"rope_factors_long.weight", Tensor::ones({3}, DType::F32)},
        {"rope_factors_short.weight", four}},
       {"rope_factors_long.weight", "[3]", "[4]", "head dim / 2"}},
      {"a factor -1",
       orig,
       {{"rope_factors_long.weight", four},
        {"rope_factors_short.weight", Tensor::from_vec(std::vector<float>{1, -1, 1, 1}, {4})}},
       {"rope_factors_short.weight[1] is -1"}},
      {"no original context",
       {},
       {{"rope_factors_long.weight", four}, {"rope_factors_short.weight", four}},
       {"no key phi3.rope.scaling.original_context_length"}},
      {"Llama 3's factors too",
       orig,
       {{"rope_factors_long.weight", four},
        {"rope_factors_short.weight", four},
        {"rope_freqs.weight", four}},
       {"rope_freqs.weight", "longrope", "both scale the rotary frequencies"}},
  };
  for (const LongRope& c : longropes) {
    SCOPED_TRACE(c.what);
    const std::string longrope = dir.file("longrope.gguf");
    rewrite(dir.file("phi3.gguf"), longrope, c.changes, {}, [&](GgufWriter& w) {
      for (const auto& [name, t] : c.tensors) w.add_tensor(name, t);
    });
    std::vector<std::string> needles = c.needles;
    needles.push_back(longrope);
    expect_error([&] { LlamaModel::load_gguf(longrope); }, ErrorKind::Parse, needles);
  }
  const std::string longrope = dir.file("longrope.gguf");
  rewrite(dir.file("phi3.gguf"), longrope, orig, {}, [&](GgufWriter& w) {
    w.add_tensor("rope_factors_long.weight", four * 4.0);
    w.add_tensor("rope_factors_short.weight", four);
  });
  // Files from before the converter wrote the type key: the tensors say longrope.
  EXPECT_EQ(LlamaModel::load_gguf(longrope, Device::cpu(), 8).config().rope_freq_factors,
            std::vector<float>(4, 1.0f));
  EXPECT_EQ(LlamaModel::load_gguf(longrope, Device::cpu(), 32).config().rope_freq_factors,
            std::vector<float>(4, 4.0f));

  cfg = {};
  cfg.arch = "gemma2";
  write_tiny_llama(dir.file("gemma2.gguf"), rng, cfg);
  const std::string no_post = dir.file("no_post.gguf");
  rewrite(dir.file("gemma2.gguf"), no_post, {}, {"blk.0.post_ffw_norm.weight"});
  expect_error([&] { LlamaModel::load_gguf(no_post); }, ErrorKind::Parse,
               {no_post, "blk.0.post_ffw_norm.weight"});
  // Without the keys, Gemma 2's values (llama.cpp's defaults).
  const LlamaConfig g = LlamaModel::load_gguf(dir.file("gemma2.gguf")).config();
  EXPECT_EQ(g.attn_softcap, 50.0);
  EXPECT_EQ(g.final_softcap, 30.0);
  EXPECT_EQ(g.sliding_window, 4096);
  EXPECT_TRUE(g.post_norms && g.gelu_ffn && !g.rope_interleaved);
  EXPECT_DOUBLE_EQ(g.embed_scale, std::sqrt(32.0));
}

TEST(LlamaHardening, TokenizerIdsAreCheckedBeforeNarrowing) {
  Rng rng;
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng);
  const std::string path = dir.file("bos.gguf");
  // 2^40 used to become bos id 0 silently.
  rewrite(dir.file("tiny.gguf"), path, {{"tokenizer.ggml.bos_token_id", uint64_t{1} << 40}});
  expect_error([&] { load_gguf_tokenizer(GgufFile::open(path)); }, ErrorKind::Parse,
               {path, "tokenizer.ggml.bos_token_id", "1099511627776"});
  const std::string eos = dir.file("eos.gguf");
  rewrite(dir.file("tiny.gguf"), eos, {{"tokenizer.ggml.eos_token_id", int64_t{-2}}});
  expect_error([&] { load_gguf_tokenizer(GgufFile::open(eos)); }, ErrorKind::Parse,
               {eos, "tokenizer.ggml.eos_token_id", "i64 -2"});
}

TEST(LlamaHardening, ContextIsCheckedAgainstTheModelAndTheMachine) {
  Rng rng;
  TempDir dir;
  const TinyLlama m = write_tiny_llama(dir.file("tiny.gguf"), rng);  // context 64
  const std::string path = dir.file("tiny.gguf");
  EXPECT_EQ(LlamaModel::load_gguf(path, Device::cpu(), 64).max_seq(), 64);
  EXPECT_EQ(LlamaModel::load_gguf(path, Device::cpu(), 0).max_seq(), 64);  // the model's
  expect_error([&] { LlamaModel::load_gguf(path, Device::cpu(), 65); }, ErrorKind::OutOfRange,
               {path, "max_seq 65", "context length of 64", "llama.context_length"});
  expect_error([&] { LlamaModel::load_gguf(path, Device::cpu(), -1); }, ErrorKind::OutOfRange,
               {path, "max_seq -1"});

  // A trained context of 2^31 - 1 tokens: its KV cache alone is over 0.5 TB for this tiny shape
  // (2 layers x k and v x 4 heads x 8 dims x 2 bytes (f16) per token; 4 for an f32 cache),
  // refused before any allocation.
  TinyLlamaConfig cfg;
  cfg.kv_heads = cfg.heads;
  cfg.context = INT32_MAX;
  write_tiny_llama(dir.file("long.gguf"), rng, cfg);
  for (const KvCacheType kv : {KvCacheType::F16, KvCacheType::F32}) {
    const uint64_t cache = 2ull * 2 * 4 * 8 * (kv == KvCacheType::F16 ? 2 : 4) * INT32_MAX;
    expect_error(
        [&] {
          LlamaModel::load_gguf(dir.file("long.gguf"), Device::cpu(), {INT32_MAX, kv});
        },
        ErrorKind::OutOfRange,
        {"long.gguf", "a context of 2147483647 tokens", std::to_string(cache) + " bytes",
         "this machine's"});
  }
}

TEST(LlamaHardening, SamplerRefusesNanOptions) {
  SamplingOptions o;
  o.temperature = std::nan("");
  expect_error([&] { Sampler s(o); }, ErrorKind::OutOfRange, {"temperature", "NaN"});
  SamplingOptions p;
  p.top_p = std::nan("");
  expect_error([&] { Sampler s(p); }, ErrorKind::OutOfRange, {"top_p"});
}

}  // namespace
}  // namespace wick::testing
