// LlamaModel::load of Hugging Face folders (tests/tiny_hf.h writes them): logits against a
// float64 implementation of HF's llama (rotate-half rotary embeddings on the unpermuted q and k)
// and against the same weights loaded from the GGUF file the converter would write; f16 and bf16
// weights in their dtype; one file or shards; the tokenizer and chat template; the CLI; and the
// errors of folders that are incomplete or ask for what wick lacks. On every device of the
// harness.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gguf_bytes.h"
#include "harness.h"
#include "llama_ref.h"
#include "tiny_hf.h"
#include "wick/gguf.h"
#include "wick/llama.h"
#include "wick/safetensors.h"

namespace wick::testing {
namespace {

using nlohmann::json;

// Each pair's rotation from config.json, by transformers' definitions of the rope types (written
// here, not wick's): the angle it turns a position, and the magnitude cos and sin take. `context`:
// the positions the model runs with, which picks longrope's factors by llama.cpp's rule (the
// long ones when it exceeds the original context; transformers switches per sequence length).
struct Rotary {
  Vec freq;
  double magnitude = 1;
};
Rotary rotary_of(const json& config, int64_t d, int64_t context) {
  const double theta = config.at("rope_theta").get<double>();
  const auto max_pos = config.at("max_position_embeddings").get<double>();
  Rotary r;
  for (int64_t i = 0; i < d / 2; i++)
    r.freq.push_back(std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d)));
  json rs = config.value("rope_scaling", json());
  if (rs.is_null()) rs = config.value("rope_parameters", json());
  if (rs.is_null()) return r;
  const std::string type = rs.value("rope_type", rs.value("type", std::string("default")));
  if (type == "linear") {
    for (double& f : r.freq) f /= rs.at("factor").get<double>();
  } else if (type == "llama3") {
    const double factor = rs.at("factor"), low = rs.at("low_freq_factor"),
                 high = rs.at("high_freq_factor"), orig = rs.at("original_max_position_embeddings");
    for (double& f : r.freq) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen > orig / low) {
        f /= factor;
      } else if (!(wavelen < orig / high)) {
        const double smooth = (orig / wavelen - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
  } else if (type == "yarn") {
    const double factor = rs.at("factor"),
                 orig = rs.value("original_max_position_embeddings", max_pos),
                 fast = rs.value("beta_fast", 32.0), slow = rs.value("beta_slow", 1.0);
    const auto dd = static_cast<double>(d);
    const auto correction_dim = [&](double rotations) {
      return dd * std::log(orig / (rotations * 2 * M_PI)) / (2 * std::log(theta));
    };
    const double low = std::max(std::floor(correction_dim(fast)), 0.0),
                 high = std::min(std::ceil(correction_dim(slow)), dd - 1);
    for (size_t i = 0; i < r.freq.size(); i++) {
      const double ramp =
          std::clamp((static_cast<double>(i) - low) / (low == high ? 0.001 : high - low), 0.0, 1.0);
      const double extrapolation = 1 - ramp;
      r.freq[i] = r.freq[i] / factor * (1 - extrapolation) + r.freq[i] * extrapolation;
    }
    const auto mscale = [&](double m) {
      return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1;
    };
    r.magnitude = rs.contains("attention_factor") ? rs.at("attention_factor").get<double>()
                  : rs.contains("mscale") && rs.contains("mscale_all_dim")
                      ? mscale(rs.at("mscale")) / mscale(rs.at("mscale_all_dim"))
                      : mscale(1);
  } else if (type == "longrope") {
    const double orig = rs.contains("original_max_position_embeddings")
                            ? rs.at("original_max_position_embeddings")
                            : config.at("original_max_position_embeddings");
    const double factor = rs.value("factor", max_pos / orig);
    const json& set =
        static_cast<double>(context) > orig ? rs.at("long_factor") : rs.at("short_factor");
    for (size_t i = 0; i < r.freq.size(); i++) r.freq[i] /= set.at(i).get<double>();
    r.magnitude = rs.value("attention_factor",
                           factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(orig)));
  } else {
    ADD_FAILURE() << "rope type " << type;
  }
  return r;
}

// Logits of every position of `ids`, from the folder's tensors (HF names) through the float64
// reference (llama_ref.h), with HF's rotate_half: element i of a head turns with element i + d/2,
// by pair i's angle.
std::vector<Vec> reference_logits(const TinyHf& m, const std::vector<uint32_t>& ids,
                                  int64_t context) {
  const TinyLlamaConfig& c = m.gguf.config;
  const Rotary rotary = rotary_of(m.config, c.head_dim(), context);
  std::map<std::string, Ref> w;
  for (const auto& [name, tensor] : m.tensors) w.emplace(name, to_ref(tensor.to_dtype(DType::F64)));
  RefModel r;
  r.heads = c.heads;
  r.kv_heads = c.kv_heads;
  r.head_dim = c.head_dim();
  r.rms_eps = c.rms_eps;
  r.embed = w.at("model.embed_tokens.weight");
  r.output_norm = w.at("model.norm.weight");
  r.head = c.tied_embeddings ? r.embed : w.at("lm_head.weight");
  for (int64_t l = 0; l < c.layers; l++) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    RefLayer& y = r.layers.emplace_back();
    y.attn_norm = w.at(p + "input_layernorm.weight");
    y.wq = w.at(p + "self_attn.q_proj.weight");
    y.wk = w.at(p + "self_attn.k_proj.weight");
    y.wv = w.at(p + "self_attn.v_proj.weight");
    y.wo = w.at(p + "self_attn.o_proj.weight");
    y.ffn_norm = w.at(p + "post_attention_layernorm.weight");
    y.wgate = w.at(p + "mlp.gate_proj.weight");
    y.wup = w.at(p + "mlp.up_proj.weight");
    y.wdown = w.at(p + "mlp.down_proj.weight");
  }
  r.rope = [&](Vec& x, int64_t heads, int64_t pos) {
    rotate_pairs(x, heads, r.head_dim, true, [&](int64_t i) {
      return PairRotation{static_cast<double>(pos) * rotary.freq[static_cast<size_t>(i)],
                          rotary.magnitude};
    });
  };
  return r.logits(ids);
}

class HfCheckpoint : public DeviceTest {};

// A prompt, then decode steps: the folder's model against the float64 reference (within `rel` of
// the largest logit; f32 caches) and against the GGUF file's model (the same weights and ops: up to
// f32 rounding).
// `max_seq`: the caches' positions (which pick longrope's factors).
void check_folder(const Device& dev, const TinyHfConfig& cfg, double rel, int64_t max_seq = 16) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  const TinyHf m = write_tiny_hf(dir.file("hf"), dir.file("tiny.gguf"), rng, cfg);
  const LlamaOptions opts{max_seq, KvCacheType::F32};
  LlamaModel hf = LlamaModel::load(dir.file("hf"), dev, opts);
  LlamaModel gguf = LlamaModel::load(dir.file("tiny.gguf"), dev, opts);
  const LlamaConfig &a = hf.config(), &b = gguf.config();
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.intermediate, b.intermediate);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.context_length, b.context_length);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rms_eps, b.rms_eps);
  EXPECT_EQ(a.tied_embeddings, cfg.llama.tied_embeddings);
  // The rotary scaling config.json asks for is the GGUF file's.
  EXPECT_EQ(a.rope_freq_scale, b.rope_freq_scale);
  EXPECT_EQ(a.rope_yarn, b.rope_yarn);
  EXPECT_EQ(a.rope_yarn_beta_fast, b.rope_yarn_beta_fast);
  EXPECT_EQ(a.rope_yarn_beta_slow, b.rope_yarn_beta_slow);
  EXPECT_EQ(a.rope_original_context, b.rope_original_context);
  EXPECT_NEAR(a.rope_attn_factor, b.rope_attn_factor, 1e-6);
  ASSERT_EQ(a.rope_freq_factors.size(), b.rope_freq_factors.size());
  for (size_t i = 0; i < a.rope_freq_factors.size(); i++)
    EXPECT_NEAR(a.rope_freq_factors[i], b.rope_freq_factors[i], 1e-6 * b.rope_freq_factors[i]);
  EXPECT_EQ(hf.gguf().name(), dir.file("hf"));
  // The weights as the folder stores them, in their dtype.
  const QuantType stored = cfg.llama.weight_dtype == DType::F16    ? QuantType::F16
                           : cfg.llama.weight_dtype == DType::BF16 ? QuantType::BF16
                                                                   : QuantType::F32;
  for (const char* name : {"token_embd.weight", "blk.0.attn_q.weight", "blk.1.ffn_down.weight"})
    EXPECT_EQ(hf.gguf().tensor_info(name).type, stored) << name;
  EXPECT_EQ(hf.gguf().tensor("blk.0.attn_k.weight").dtype(), cfg.llama.weight_dtype);

  const int64_t vocab = cfg.llama.vocab;
  std::vector<uint32_t> all;
  for (int i = 0; i < 8; i++) all.push_back(static_cast<uint32_t>(rng.integer(0, vocab - 1)));
  const std::vector<Vec> want = reference_logits(m, all, max_seq);
  const std::vector<std::vector<uint32_t>> steps = {
      {all.begin(), all.begin() + 5}, {all[5]}, {all[6]}, {all[7]}};
  size_t pos = 0;
  for (const std::vector<uint32_t>& step : steps) {
    pos += step.size();
    SCOPED_TRACE("position " + std::to_string(pos - 1));
    const Tensor got = hf.forward(step), same = gguf.forward(step);
    ASSERT_EQ(got.device(), dev);
    ASSERT_EQ(got.shape(), (Shape{vocab}));
    const Vec& w = want[pos - 1];
    WICK_EXPECT_CLOSE(got, as_ref(w), Tol{rel * max_abs(w) + 1e-5, 0});
    WICK_EXPECT_CLOSE(got, to_ref(same), Tol{1e-5 * max_abs(w), 0});
  }
}

TEST_P(HfCheckpoint, F32FolderMatchesTheReferenceAndTheConvertedGguf) {
  TinyHfConfig cfg;
  cfg.llama.heads = 4;
  cfg.llama.kv_heads = 2;
  check_folder(device(), cfg, 2e-4);
}

TEST_P(HfCheckpoint, ShardedUntiedFolderMatchesTheReferenceAndTheConvertedGguf) {
  TinyHfConfig cfg;
  cfg.llama.tied_embeddings = false;
  cfg.llama.heads = 8;
  cfg.llama.kv_heads = 1;
  cfg.shards = 2;
  check_folder(device(), cfg, 2e-4);
}

// 16-bit weights stay 16-bit: the reference takes the stored values, so only the products' and
// activations' rounding separates them (2^-11 for f16; bf16 activations, where a kernel rounds
// them, 2^-8).
TEST_P(HfCheckpoint, F16AndBf16FoldersKeepTheirDtype) {
  for (const DType dt : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    TinyHfConfig cfg;
    cfg.llama.weight_dtype = dt;
    cfg.llama.tied_embeddings = dt == DType::F16;
    cfg.shards = dt == DType::F16 ? 1 : 3;
    check_folder(device(), cfg, dt == DType::F16 ? 5e-3 : 2e-2);
  }
}

// rope_scaling of each type wick implements, against the reference written from transformers'
// definitions and against the GGUF file llama.cpp's converter would write (its keys, and the
// per-pair factors as tensors). Llama 3's factors for that file are computed here from the
// reference's frequencies; wick computes its own from config.json. Longrope runs below (12
// positions, the short factors) and above (16, the long ones) the original context of 12.
TEST_P(HfCheckpoint, ScaledRotaryFoldersMatchTheReferenceAndTheConvertedGguf) {
  const auto base = [] {
    TinyHfConfig cfg;
    cfg.llama.rope_theta = 100.0f;  // fast pairs, so that the scaling moves the logits far
    return cfg;
  };
  {
    SCOPED_TRACE("linear");
    TinyHfConfig cfg = base();
    cfg.llama.rope_linear = 4.0f;
    cfg.config_patch = {{"rope_scaling", {{"rope_type", "linear"}, {"factor", 4.0}}}};
    check_folder(device(), cfg, 2e-4);
  }
  {
    SCOPED_TRACE("llama3");
    TinyHfConfig cfg = base();
    cfg.config_patch = {{"rope_scaling",
                         {{"rope_type", "llama3"},
                          {"factor", 8.0},
                          {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 64}}}};
    json config = {{"rope_theta", 100.0}, {"max_position_embeddings", 64}};
    config.merge_patch(cfg.config_patch);
    const int64_t d = cfg.llama.head_dim();
    const Rotary plain = rotary_of({{"rope_theta", 100.0}, {"max_position_embeddings", 64}}, d, 16),
                 scaled = rotary_of(config, d, 16);
    cfg.llama.rope_freqs = true;
    for (size_t i = 0; i < plain.freq.size(); i++)
      cfg.llama.rope_freq_values.push_back(static_cast<float>(plain.freq[i] / scaled.freq[i]));
    // Pair 0 keeps its frequency, 3 is divided by 8, 1 and 2 are blended.
    EXPECT_EQ(cfg.llama.rope_freq_values[0], 1.0f);
    EXPECT_EQ(cfg.llama.rope_freq_values[3], 8.0f);
    EXPECT_GT(cfg.llama.rope_freq_values[1], 1.0f);
    EXPECT_LT(cfg.llama.rope_freq_values[2], 8.0f);
    check_folder(device(), cfg, 2e-4);
  }
  for (const bool defaults : {true, false}) {
    SCOPED_TRACE(defaults ? "yarn" : "yarn, rope_parameters with betas and mscales");
    TinyHfConfig cfg = base();
    cfg.llama.rope_yarn = 4.0f;
    cfg.llama.rope_original_context = 32;
    if (defaults) {
      cfg.config_patch = {
          {"rope_scaling",
           {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32}}}};
    } else {
      cfg.llama.rope_yarn_beta_fast = 8.0f;
      cfg.llama.rope_yarn_beta_slow = 0.5f;
      const auto mscale = [](double m) { return 0.1 * m * std::log(4.0) + 1; };
      cfg.llama.rope_yarn_attn_factor = static_cast<float>(mscale(1.0) / mscale(0.5));
      cfg.config_patch = {{"rope_parameters",
                           {{"rope_type", "yarn"},
                            {"rope_theta", 100.0},
                            {"factor", 4.0},
                            {"original_max_position_embeddings", 32},
                            {"beta_fast", 8.0},
                            {"beta_slow", 0.5},
                            {"mscale", 1.0},
                            {"mscale_all_dim", 0.5}}}};
    }
    check_folder(device(), cfg, 2e-4);
  }
  for (const int64_t max_seq : {12, 16}) {
    SCOPED_TRACE("longrope, max_seq " + std::to_string(max_seq));
    TinyHfConfig cfg = base();
    cfg.llama.longrope = true;
    cfg.llama.rope_original_context = 12;
    cfg.llama.rope_long_factors = {2.5f, 4.0f, 9.0f, 15.0f};
    cfg.llama.rope_short_factors = {1.0f, 1.25f, 1.5f, 2.0f};
    // Phi-3's layout: the original context beside max_position_embeddings (64).
    cfg.config_patch = {{"original_max_position_embeddings", 12},
                        {"rope_scaling",
                         {{"type", "longrope"},
                          {"long_factor", cfg.llama.rope_long_factors},
                          {"short_factor", cfg.llama.rope_short_factors}}}};
    check_folder(device(), cfg, 2e-4, max_seq);
  }
}

WICK_INSTANTIATE_DEVICES(HfCheckpoint);

// The tokenizer, its special tokens and the chat template come from the folder's files and agree
// with the GGUF file's.
TEST(HfCheckpointText, TokenizerAndChatTemplateMatchTheGguf) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  write_tiny_hf(dir.file("hf"), dir.file("tiny.gguf"), rng);
  const LlamaModel hf = LlamaModel::load(dir.file("hf"), Device::cpu(), {8});
  const GgufFile gguf = GgufFile::open(dir.file("tiny.gguf"));
  const Tokenizer a = load_gguf_tokenizer(hf.gguf()), b = load_gguf_tokenizer(gguf);
  EXPECT_EQ(a.vocab_size(), b.vocab_size());
  EXPECT_EQ(a.bos_id(), b.bos_id());
  EXPECT_EQ(a.eos_id(), b.eos_id());
  EXPECT_EQ(a.special_tokens().pad, b.special_tokens().pad);
  for (const char* text : {"abc", "the quick brown fox", "  zz top", "<|im_start|>hi"}) {
    EXPECT_EQ(a.encode(text), b.encode(text)) << text;
    EXPECT_EQ(a.encode(text, true), b.encode(text, true)) << text;
  }
  EXPECT_EQ(gguf_adds_bos(hf.gguf()), false);
  const ChatMessage user{"user", "hello"};
  EXPECT_EQ(load_gguf_chat_template(hf.gguf()).apply({&user, 1}, true),
            load_gguf_chat_template(gguf).apply({&user, 1}, true));

  // Without tokenizer_config.json: bos and eos from generation_config.json's ids, the ChatML
  // fallback template.
  std::filesystem::remove(dir.file("hf/tokenizer_config.json"));
  write_json(dir.file("hf/generation_config.json"),
             {{"bos_token_id", 1}, {"eos_token_id", {2, 0}}});
  const LlamaModel bare = LlamaModel::load(dir.file("hf"), Device::cpu(), {8});
  const Tokenizer c = load_gguf_tokenizer(bare.gguf());
  EXPECT_EQ(c.bos_id(), 1);
  EXPECT_EQ(c.eos_id(), 2);
  EXPECT_EQ(load_gguf_chat_template(bare.gguf()).source(), ChatTemplate::chatml().source());

  // chat_template.jinja (newer transformers) is the template; the folder's name the model's.
  const std::string jinja = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}";
  std::ofstream(dir.file("hf/chat_template.jinja")) << jinja;
  const LlamaModel templated = LlamaModel::load(dir.file("hf") + "/", Device::cpu(), {8});
  EXPECT_EQ(load_gguf_chat_template(templated.gguf()).apply({&user, 1}, false),
            "<|im_start|>hello");
  EXPECT_EQ(templated.gguf().get<std::string>("general.name"), "hf");
}

// Mistral folders load as llama; a sliding window shorter than the context caps it (within the
// window every position attends to all earlier ones, as wick does). transformers 5's
// rope_parameters give rope_theta.
TEST(HfCheckpointText, MistralSlidingWindowAndRopeParameters) {
  Rng rng;
  TempDir dir;
  const TinyHf m = write_tiny_hf(dir.file("hf"), dir.file("tiny.gguf"), rng);
  json c = m.config;
  c["architectures"] = {"MistralForCausalLM"};
  c["model_type"] = "mistral";
  c["sliding_window"] = 24;
  write_json(dir.file("hf/config.json"), c);
  EXPECT_EQ(LlamaModel::load(dir.file("hf")).config().context_length, 24);
  c["sliding_window"] = nullptr;
  write_json(dir.file("hf/config.json"), c);
  EXPECT_EQ(LlamaModel::load(dir.file("hf")).config().context_length, m.gguf.config.context);

  // transformers 5 writes rope_theta inside rope_parameters.
  c.erase("rope_theta");
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 250000.0}};
  write_json(dir.file("hf/config.json"), c);
  EXPECT_EQ(LlamaModel::load(dir.file("hf")).config().rope_theta, 250000.0);
}

// The Hugging Face cache's layout: a snapshot folder of symlinks to blobs elsewhere.
TEST(HfCheckpointText, SnapshotOfSymlinksLoads) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  write_tiny_hf(dir.file("blobs"), dir.file("tiny.gguf"), rng, {TinyLlamaConfig{}, 2});
  std::filesystem::create_directories(dir.file("snapshot"));
  for (const auto& e : std::filesystem::directory_iterator(dir.file("blobs")))
    std::filesystem::create_symlink(e.path(),
                                    dir.file("snapshot") + "/" + e.path().filename().string());
  LlamaModel hf = LlamaModel::load(dir.file("snapshot"), Device::cpu(), {8, KvCacheType::F32});
  LlamaModel gguf = LlamaModel::load(dir.file("tiny.gguf"), Device::cpu(), {8, KvCacheType::F32});
  EXPECT_EQ(hf.forward({3, 9, 4}).to_vec<float>(), gguf.forward({3, 9, 4}).to_vec<float>());
}

// `wick generate --model <folder>` writes what the GGUF file makes it write.
TEST(HfCheckpointText, CliGeneratesFromAFolder) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  write_tiny_hf(dir.file("hf"), dir.file("tiny.gguf"), rng);
  const auto run = [](const std::string& model) {
    const std::string cmd = "'" WICK_CLI_PATH "' generate -m '" + model +
                            "' -p abc -n 10 --temp 0 --ignore-eos 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = p ? ::pclose(p) : -1;
    EXPECT_EQ(status, 0) << out;
    return out.substr(0, out.find("\n\n"));
  };
  const std::string from_folder = run(dir.file("hf"));
  EXPECT_EQ(from_folder.rfind("abc", 0), 0u) << from_folder;
  EXPECT_EQ(from_folder, run(dir.file("tiny.gguf")));
}

// ---- errors -------------------------------------------------------------------------------------

class HfFolder {
 public:
  HfFolder() {
    Rng rng;
    TinyHfConfig cfg;
    cfg.shards = 2;
    m_ = write_tiny_hf(path(), dir_.file("tiny.gguf"), rng, cfg);
  }
  std::string path() const { return dir_.file("hf"); }
  std::string file(const std::string& name) const { return path() + "/" + name; }
  const TinyHf& model() const { return m_; }
  // config.json with `patch` merged in (null removes a key).
  void patch_config(const json& patch) const {
    json c = m_.config;
    c.merge_patch(patch);
    write_json(file("config.json"), c);
  }
  void load() const { LlamaModel::load(path(), Device::cpu(), {8}); }

 private:
  TempDir dir_;
  TinyHf m_;
};

TEST(HfCheckpointErrors, MissingFiles) {
  {
    HfFolder f;
    std::filesystem::remove(f.file("config.json"));
    expect_error([&] { f.load(); }, ErrorKind::Io, {f.path(), "no config.json"});
  }
  {
    HfFolder f;
    std::filesystem::remove(f.file("model-00002-of-00002.safetensors"));
    expect_error(
        [&] { f.load(); }, ErrorKind::Io,
        {"model-00002-of-00002.safetensors", "no such shard", "model.safetensors.index.json"});
  }
  {
    // Malformed JSON, and an index naming a file outside the folder.
    HfFolder f;
    std::ofstream(f.file("config.json")) << "{\"hidden_size\": ";
    expect_error([&] { f.load(); }, ErrorKind::Parse, {"config.json", "not valid JSON"});
    f.patch_config(json::object());
    json index = json::parse(std::ifstream(f.file("model.safetensors.index.json")));
    index["weight_map"]["model.norm.weight"] = "../model.safetensors";
    write_json(f.file("model.safetensors.index.json"), index);
    expect_error([&] { f.load(); }, ErrorKind::Parse,
                 {"model.safetensors.index.json", "model.norm.weight", "../model.safetensors"});
    index["weight_map"] = json::array();
    write_json(f.file("model.safetensors.index.json"), index);
    expect_error([&] { f.load(); }, ErrorKind::Parse, {"no weight_map object"});
  }
  {
    HfFolder f;
    std::filesystem::remove(f.file("model.safetensors.index.json"));
    expect_error([&] { f.load(); }, ErrorKind::Io,
                 {f.path(), "no model.safetensors or model.safetensors.index.json"});
  }
  {
    // The index lists a tensor its shard lacks; a tensor the model needs is listed nowhere.
    HfFolder f;
    json index = json::parse(std::ifstream(f.file("model.safetensors.index.json")));
    const std::string shard = index["weight_map"]["model.norm.weight"];
    index["weight_map"]["model.layers.9.mlp.up_proj.weight"] = shard;
    write_json(f.file("model.safetensors.index.json"), index);
    expect_error([&] { f.load(); }, ErrorKind::Parse,
                 {shard, "no tensor model.layers.9.mlp.up_proj.weight"});
    index["weight_map"].erase("model.layers.9.mlp.up_proj.weight");
    index["weight_map"].erase("model.layers.1.mlp.up_proj.weight");
    write_json(f.file("model.safetensors.index.json"), index);
    expect_error([&] { f.load(); }, ErrorKind::Parse,
                 {"no tensor model.layers.1.mlp.up_proj.weight", "model.safetensors.index.json"});
  }
}

TEST(HfCheckpointErrors, ConfigAsksForWhatWickLacks) {
  HfFolder f;
  f.load();  // the unchanged folder loads
  struct Case {
    json patch;
    ErrorKind kind;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {{{"architectures", {"Qwen2ForCausalLM"}}},
       ErrorKind::Unsupported,
       {"config.json", "Qwen2ForCausalLM", "LlamaForCausalLM"}},
      {{{"architectures", nullptr}, {"model_type", "gemma"}},
       ErrorKind::Unsupported,
       {"model_type 'gemma'"}},
      {{{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}}},
       ErrorKind::Unsupported,
       {"config.json", "rope_scaling", "dynamic", "llama3, yarn and longrope"}},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"truncate", false}}}},
       ErrorKind::Unsupported,
       {"rope_scaling", "truncate false"}},
      {{{"rope_scaling",
         {{"rope_type", "linear"}, {"factor", 4.0}, {"partial_rotary_factor", 0.5}}}},
       ErrorKind::Unsupported,
       {"rope_scaling", "partial rotary"}},
      {{{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1e6}}}},
       ErrorKind::Parse,
       {"rope_theta 10000 disagrees with rope_parameters.rope_theta 1e+06"}},
      {{{"head_dim", 16}}, ErrorKind::Unsupported, {"head_dim 16"}},
      {{{"attention_bias", true}}, ErrorKind::Unsupported, {"attention_bias"}},
      {{{"hidden_act", "gelu"}}, ErrorKind::Unsupported, {"hidden_act 'gelu'"}},
      {{{"hidden_size", nullptr}}, ErrorKind::Parse, {"config.json", "no hidden_size"}},
      {{{"num_key_value_heads", 3}}, ErrorKind::Parse, {"num_key_value_heads", "3"}},
      {{{"rms_norm_eps", "small"}}, ErrorKind::Parse, {"rms_norm_eps"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.patch.dump());
    f.patch_config(c.patch);
    expect_error([&] { f.load(); }, c.kind, c.needles);
  }
}

// Malformed rope_scaling values name the key: a factor <= 0, a missing original context, factor
// lists of the wrong length, a ramp that runs backwards.
TEST(HfCheckpointErrors, MalformedRopeScalingIsRefusedNamingTheKey) {
  HfFolder f;
  const json llama3 = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8}};
  const json longrope = {{"type", "longrope"},
                         {"long_factor", {4.0, 4.0, 4.0, 4.0}},
                         {"short_factor", {1.0, 1.0, 1.0, 1.0}},
                         {"original_max_position_embeddings", 8}};
  const auto with = [](json j, const json& patch) {
    j.merge_patch(patch);
    return json{{"rope_scaling", j}};
  };
  struct Case {
    json patch;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {{{"rope_scaling", {{"rope_type", "linear"}, {"factor", 0.0}}}},
       {"config.json rope_scaling", "factor is 0", "> 0"}},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", -2.0}}}},
       {"config.json rope_scaling", "factor is -2", "> 0"}},
      {{{"rope_scaling", {{"rope_type", "yarn"}}}}, {"config.json rope_scaling", "no factor"}},
      {with(llama3, {{"original_max_position_embeddings", nullptr}}),
       {"config.json rope_scaling", "no original_max_position_embeddings"}},
      {with(llama3, {{"high_freq_factor", 1.0}}),
       {"high_freq_factor 1 is not more than low_freq_factor 1"}},
      {with(llama3, {{"factor", "eight"}}), {"rope_scaling: factor is", "eight", "> 0"}},
      {with(longrope, {{"original_max_position_embeddings", nullptr}}),
       {"config.json", "no original_max_position_embeddings"}},
      {with(longrope, {{"long_factor", {4.0, 4.0, 4.0}}}),
       {"rope_scaling", "long_factor", "want a list of 4 numbers (head dim / 2)"}},
      {with(longrope, {{"short_factor", {1.0, 0.0, 1.0, 1.0}}}),
       {"rope_scaling", "short_factor[1] is 0.0", "> 0"}},
      {with(longrope, {{"long_factor", nullptr}}), {"rope_scaling", "no long_factor"}},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", 0.5}}}},
       {"config.json rope_scaling", "beta_fast 0.5 is not more than beta_slow 1"}},
      {{{"rope_scaling", "yarn"}}, {"config.json: rope_scaling is", "yarn", "want an object"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.patch.dump());
    f.patch_config(c.patch);
    expect_error([&] { f.load(); }, ErrorKind::Parse, c.needles);
  }
}

TEST(HfCheckpointErrors, TensorsThatDoNotFit) {
  const auto rewrite = [](const HfFolder& f, const std::string& name, const Tensor& t) {
    json index = json::parse(std::ifstream(f.file("model.safetensors.index.json")));
    const json& listed =
        index["weight_map"][index["weight_map"].contains(name) ? name : "model.norm.weight"];
    const std::string shard = listed.get<std::string>();
    std::map<std::string, Tensor> tensors = load_safetensors(f.file(shard));
    tensors[name] = t;
    save_safetensors(f.file(shard), tensors);
    index["weight_map"][name] = shard;
    write_json(f.file("model.safetensors.index.json"), index);
    return shard;
  };
  {
    HfFolder f;
    const TinyLlamaConfig& c = f.model().gguf.config;
    const std::string shard =
        rewrite(f, "model.layers.1.self_attn.v_proj.weight",
                Tensor::zeros({c.kv_heads * c.head_dim(), c.hidden / 2}, DType::F32));
    expect_error([&] { f.load(); }, ErrorKind::Parse,
                 {shard, "model.layers.1.self_attn.v_proj.weight", "has shape", "want",
                  "num_key_value_heads"});
  }
  {
    HfFolder f;
    const std::string shard =
        rewrite(f, "model.norm.weight", Tensor::zeros({f.model().gguf.config.hidden}, DType::F64));
    expect_error([&] { f.load(); }, ErrorKind::Unsupported,
                 {shard, "model.norm.weight", "dtype F64"});
  }
  {
    HfFolder f;
    const std::string shard = rewrite(f, "model.layers.0.self_attn.q_proj.bias",
                                      Tensor::zeros({f.model().gguf.config.hidden}, DType::F32));
    expect_error([&] { f.load(); }, ErrorKind::Unsupported,
                 {shard, "model.layers.0.self_attn.q_proj.bias"});
  }
}

}  // namespace
}  // namespace wick::testing
