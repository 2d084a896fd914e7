// Hugging Face checkpoint folders: config.json, safetensors weights (one file or shards), and the
// tokenizer files, put together as an in-memory GGUF file for LlamaModel::load_gguf. Everything
// config.json asks for is checked, and what wick does not implement refused, before any weight
// byte is read.
#include "models/hf_checkpoint.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "io/file.h"
#include "wick/llama.h"
#include "wick/safetensors.h"

namespace wick {

namespace models {

namespace {

using nlohmann::json;
constexpr const char* kOp = "LlamaModel::load_hf";
constexpr int64_t kMaxCount = INT32_MAX;
// config.json and tokenizer files are at most a few MiB; anything past this is not one.
constexpr uint64_t kMaxJsonBytes = 1ull << 30;

std::string in_folder(const std::string& folder, const std::string& name) {
  return (std::filesystem::path(folder) / name).string();
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

std::string read_text(const std::string& path) {
  const io::ReadableFile file = io::open_regular_file(path, kOp);
  const auto bytes = io::read_whole_file(file, kMaxJsonBytes);
  if (!bytes) fail(ErrorKind::Io, kOp, path, ": larger than ", kMaxJsonBytes, " bytes");
  return std::string(bytes->begin(), bytes->end());
}

json parse_json(const std::string& text, const std::string& path) {
  io::check_json_nesting(text, kOp, path);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(ErrorKind::Parse, kOp, path, ": not valid JSON");
  if (!j.is_object()) fail(ErrorKind::Parse, kOp, path, ": not a JSON object");
  return j;
}

json read_json(const std::string& path) {
  return parse_json(read_text(path), path);
}

// A JSON value for an error message, bounded.
std::string shown(const json& v) {
  return io::excerpt(v.dump(), 120);
}

// Checked reads of config.json; a key whose value is null counts as absent.
struct Config {
  const json& j;
  std::string path;

  const json* find(const char* key) const {
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi,
                  std::optional<int64_t> fallback = std::nullopt) const {
    const json* v = find(key);
    if (!v) {
      if (fallback) return *fallback;
      fail(ErrorKind::Parse, kOp, path, ": no ", key);
    }
    const bool ok =
        v->is_number_integer() && !(v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX);
    const int64_t x = ok ? v->get<int64_t>() : 0;
    if (!ok || x < lo || x > hi)
      fail(ErrorKind::Parse, kOp, path, ": ", key, " is ", shown(*v), ", want an integer in [", lo,
           ", ", hi, "]");
    return x;
  }
  // A finite number > 0 (an integer is taken too: rope_theta is sometimes written as one).
  // Absent: `fallback`, or Error(Parse) when there is none.
  double positive(const char* key, std::optional<double> fallback = std::nullopt) const {
    const json* v = find(key);
    if (!v) {
      if (fallback) return *fallback;
      fail(ErrorKind::Parse, kOp, path, ": no ", key);
    }
    const double x = v->is_number() ? v->get<double>() : -1;
    if (!v->is_number() || !std::isfinite(x) || x <= 0)
      fail(ErrorKind::Parse, kOp, path, ": ", key, " is ", shown(*v), ", want a finite number > 0");
    return x;
  }
  bool boolean(const char* key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(ErrorKind::Parse, kOp, path, ": ", key, " is ", shown(*v));
    return v->get<bool>();
  }
  std::string string(const char* key, const std::string& fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_string()) fail(ErrorKind::Parse, kOp, path, ": ", key, " is ", shown(*v));
    return v->get<std::string>();
  }
};

// Rotary scaling as llama.cpp's converter writes it: llama.rope.scaling.* keys, and tensors of
// head dim / 2 per-pair factors (rope_freqs for Llama 3.x, rope_factors_long/short for longrope).
struct HfRope {
  std::vector<std::pair<std::string, GgufValue>> keys;
  std::vector<std::pair<std::string, std::vector<float>>> tensors;
};

// The hyper-parameters, as llama.cpp's keys.
struct Hyper {
  int64_t vocab, hidden, ffn, layers, heads, kv_heads, head_dim, context;
  double rope_theta, rms_eps;
  bool tied;
  HfRope rope;
};

void refuse_architecture(const Config& c) {
  static const std::set<std::string> kSupported = {"LlamaForCausalLM", "MistralForCausalLM"};
  if (const json* archs = c.find("architectures")) {
    if (!archs->is_array() || archs->empty())
      fail(ErrorKind::Parse, kOp, c.path, ": architectures is ", shown(*archs),
           ", want a list of names");
    for (const json& a : *archs)
      if (a.is_string() && kSupported.count(a.get<std::string>())) return;
    fail(ErrorKind::Unsupported, kOp, c.path, ": architectures ", shown(*archs),
         " is not supported (wick loads LlamaForCausalLM and MistralForCausalLM folders)");
  }
  const std::string type = c.string("model_type", "");
  if (type != "llama" && type != "mistral")
    fail(ErrorKind::Unsupported, kOp, c.path, ": model_type '", io::excerpt(type),
         "' is not supported (wick loads llama and mistral folders)");
}

// What config.json may ask for that would change the model and that wick does not implement.
void refuse_variants(const Config& c, const Hyper& h) {
  const std::string act = c.string("hidden_act", "silu");
  if (act != "silu")
    fail(ErrorKind::Unsupported, kOp, c.path, ": hidden_act '", io::excerpt(act),
         "' (the llama MLP is implemented with silu only)");
  for (const char* bias : {"attention_bias", "mlp_bias"})
    if (c.boolean(bias, false))
      fail(ErrorKind::Unsupported, kOp, c.path, ": ", bias,
           " is true (projections with biases are not implemented)");
  if (const json* q = c.find("quantization_config"))
    fail(ErrorKind::Unsupported, kOp, c.path, ": quantization_config ", shown(*q),
         " (quantized safetensors checkpoints are not implemented; f32, f16 and bf16 are)");
  if (const json* p = c.find("partial_rotary_factor");
      p && !(p->is_number() && p->get<double>() == 1.0))
    fail(ErrorKind::Unsupported, kOp, c.path, ": partial_rotary_factor ", shown(*p),
         " (partial rotary is not implemented)");
  if (c.find("head_dim")) {
    const int64_t d = c.integer("head_dim", 1, kMaxCount);
    if (d != h.head_dim)
      fail(ErrorKind::Unsupported, kOp, c.path, ": head_dim ", d, " is not hidden_size ", h.hidden,
           " / num_attention_heads ", h.heads, " = ", h.head_dim,
           " (heads of another width are not implemented)");
  }
}

// rope_type (or the older type) of a rope_scaling / rope_parameters object; "default" when absent.
std::string rope_type(const Config& s) {
  for (const char* k : {"rope_type", "type"})
    if (s.find(k)) return s.string(k, "");
  return "default";
}

// A list of head dim / 2 positive factors (longrope's long_factor, short_factor).
std::vector<float> factor_list(const Config& s, const char* key, int64_t half) {
  const json* v = s.find(key);
  if (!v) fail(ErrorKind::Parse, kOp, s.path, ": no ", key);
  if (!v->is_array() || static_cast<int64_t>(v->size()) != half)
    fail(ErrorKind::Parse, kOp, s.path, ": ", key, " is ", shown(*v), ", want a list of ", half,
         " numbers (head dim / 2)");
  std::vector<float> out;
  for (size_t i = 0; i < v->size(); i++) {
    const json& x = (*v)[i];
    const double f = x.is_number() ? x.get<double>() : -1;
    if (!x.is_number() || !std::isfinite(f) || !(f > 0))
      fail(ErrorKind::Parse, kOp, s.path, ": ", key, "[", i, "] is ", shown(x),
           ", want a finite number > 0");
    out.push_back(static_cast<float>(f));
  }
  return out;
}

// rope_scaling, or transformers 5's rope_parameters (which also holds rope_theta), as the keys and
// tensors llama.cpp's converter writes: linear (a factor), llama3 (per-pair factors computed as
// transformers' _compute_llama3_parameters does: rope_freqs.weight), yarn (its keys; the ramp's
// original context defaults to max_position_embeddings, as in transformers) and longrope / su
// (both factor lists, the original context from rope_scaling or config.json, the attention factor
// sqrt(1 + ln(factor) / ln(original)) unless given, the factor max_position_embeddings / original
// unless given). Other types, and what the GGUF keys cannot say, are refused.
HfRope read_rope_scaling(const Config& c, const Hyper& h) {
  const json* scaling = nullptr;
  std::string where;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const json* v = c.find(key);
    if (!v) continue;
    if (!v->is_object())
      fail(ErrorKind::Parse, kOp, c.path, ": ", key, " is ", shown(*v), ", want an object");
    const Config s{*v, c.path + " " + key};
    if (const json* p = s.find("partial_rotary_factor");
        p && !(p->is_number() && p->get<double>() == 1.0))
      fail(ErrorKind::Unsupported, kOp, c.path, ": ", key, " ", shown(*v),
           " (partial rotary is not implemented)");
    if (rope_type(s) == "default") continue;
    if (scaling) {  // both: the same scaling, but for rope_parameters' rope_theta
      json a = *v, b = *scaling;
      a.erase("rope_theta");
      b.erase("rope_theta");
      if (a != b)
        fail(ErrorKind::Parse, kOp, c.path, ": rope_scaling ", shown(*scaling),
             " and rope_parameters ", shown(*v), " disagree");
    }
    scaling = v;
    where = key;
  }
  HfRope r;
  if (!scaling) return r;
  const Config s{*scaling, c.path + " " + where};
  const std::string type = rope_type(s);
  const int64_t half = h.head_dim / 2;
  const int64_t max_pos = c.integer("max_position_embeddings", 1, kMaxCount, 2048);
  const auto key = [](const char* k) { return std::string("llama.rope.scaling.") + k; };
  if (type == "linear") {
    r.keys.emplace_back(key("type"), "linear");
    r.keys.emplace_back(key("factor"), s.positive("factor"));
  } else if (type == "llama3") {
    const double factor = s.positive("factor"), low = s.positive("low_freq_factor"),
                 high = s.positive("high_freq_factor");
    if (!(high > low))
      fail(ErrorKind::Parse, kOp, s.path, ": high_freq_factor ", high,
           " is not more than low_freq_factor ", low);
    const auto orig =
        static_cast<double>(s.integer("original_max_position_embeddings", 1, kMaxCount));
    // Pairs of wavelengths shorter than orig / high keep their frequency, longer than orig / low
    // divide it by the factor, and those between blend the two.
    std::vector<float> factors;
    for (int64_t i = 0; i < half; i++) {
      const double freq =
          std::pow(h.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(h.head_dim));
      const double wavelen = 2 * M_PI / freq;
      double f = 1;
      if (wavelen > orig / low) {
        f = factor;
      } else if (wavelen >= orig / high) {
        const double smooth = (orig / wavelen - low) / (high - low);
        f = 1 / ((1 - smooth) / factor + smooth);
      }
      factors.push_back(static_cast<float>(f));
    }
    r.tensors.emplace_back("rope_freqs.weight", std::move(factors));
  } else if (type == "yarn") {
    if (!s.boolean("truncate", true))
      fail(ErrorKind::Unsupported, kOp, s.path,
           ": truncate false (a ramp between fractional dims) is not implemented");
    const double factor = s.positive("factor");
    const int64_t orig = s.integer("original_max_position_embeddings", 1, kMaxCount, max_pos);
    r.keys.emplace_back(key("type"), "yarn");
    r.keys.emplace_back(key("factor"), factor);
    r.keys.emplace_back(key("original_context_length"), orig);
    const double fast = s.positive("beta_fast", 32.0), slow = s.positive("beta_slow", 1.0);
    if (!(fast > slow))
      fail(ErrorKind::Parse, kOp, s.path, ": beta_fast ", fast, " is not more than beta_slow ",
           slow, " (the ramp runs from the fast pairs to the slow)");
    r.keys.emplace_back(key("yarn_beta_fast"), fast);
    r.keys.emplace_back(key("yarn_beta_slow"), slow);
    // transformers' attention factor: given, or from mscale and mscale_all_dim (both non-zero),
    // else 0.1 ln(factor) + 1 (the loader's default).
    const auto mscale = [&](double m) {
      return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1;
    };
    const double m = s.positive("mscale", 0.0), m_all = s.positive("mscale_all_dim", 0.0);
    if (s.find("attention_factor"))
      r.keys.emplace_back(key("yarn_attn_factor"), s.positive("attention_factor"));
    else if (m > 0 && m_all > 0)
      r.keys.emplace_back(key("yarn_attn_factor"), mscale(m) / mscale(m_all));
  } else if (type == "longrope" || type == "su") {
    r.tensors.emplace_back("rope_factors_long.weight", factor_list(s, "long_factor", half));
    r.tensors.emplace_back("rope_factors_short.weight", factor_list(s, "short_factor", half));
    const int64_t orig = s.find("original_max_position_embeddings")
                             ? s.integer("original_max_position_embeddings", 2, kMaxCount)
                             : c.integer("original_max_position_embeddings", 2, kMaxCount);
    const double factor =
        s.positive("factor", static_cast<double>(max_pos) / static_cast<double>(orig));
    const double attn = s.positive(
        "attention_factor",
        factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(orig))));
    r.keys.emplace_back(key("type"), "longrope");
    r.keys.emplace_back(key("original_context_length"), orig);
    r.keys.emplace_back(key("attn_factor"), attn);
  } else {
    fail(ErrorKind::Unsupported, kOp, c.path, ": ", where, " ", shown(*scaling),
         " is not implemented (wick implements default, linear, llama3, yarn and longrope)");
  }
  return r;
}

Hyper read_hyper(const Config& c) {
  refuse_architecture(c);
  Hyper h{};
  h.hidden = c.integer("hidden_size", 1, kMaxCount);
  h.ffn = c.integer("intermediate_size", 1, kMaxCount);
  h.layers = c.integer("num_hidden_layers", 1, kMaxCount);
  h.heads = c.integer("num_attention_heads", 1, h.hidden);
  if (h.hidden % h.heads != 0)
    fail(ErrorKind::Parse, kOp, c.path, ": hidden_size ", h.hidden,
         " is not a multiple of num_attention_heads ", h.heads);
  h.kv_heads = c.integer("num_key_value_heads", 1, h.heads, h.heads);
  if (h.heads % h.kv_heads != 0)
    fail(ErrorKind::Parse, kOp, c.path, ": num_attention_heads ", h.heads,
         " is not a multiple of num_key_value_heads ", h.kv_heads);
  h.head_dim = h.hidden / h.heads;
  if (h.head_dim % 2 != 0)
    fail(ErrorKind::Parse, kOp, c.path, ": odd head dim ", h.head_dim,
         " (hidden_size / num_attention_heads): rotary embeddings rotate pairs");
  h.vocab = c.integer("vocab_size", 1, kMaxCount);
  // HF's defaults for a key the file leaves out (LlamaConfig's).
  h.context = c.integer("max_position_embeddings", 1, kMaxCount, 2048);
  // Mistral's sliding window: within it every position sees all earlier ones, as wick attends, so
  // the context is capped there instead of refused.
  if (const json* w = c.find("sliding_window"); w && !(w->is_boolean() && !w->get<bool>()))
    h.context = std::min(h.context, c.integer("sliding_window", 1, kMaxCount));
  h.rms_eps = c.positive("rms_norm_eps", 1e-6);
  if (h.rms_eps > 1)
    fail(ErrorKind::Parse, kOp, c.path, ": rms_norm_eps ", h.rms_eps, " is more than 1");
  h.tied = c.boolean("tie_word_embeddings", false);
  refuse_variants(c, h);
  h.rope_theta = c.positive("rope_theta", 10000.0);
  if (const json* rp = c.find("rope_parameters");
      rp && rp->is_object() && rp->contains("rope_theta")) {
    const Config sub{*rp, c.path + " rope_parameters"};
    const double theta = sub.positive("rope_theta", h.rope_theta);
    if (c.find("rope_theta") && theta != h.rope_theta)
      fail(ErrorKind::Parse, kOp, c.path, ": rope_theta ", h.rope_theta,
           " disagrees with rope_parameters.rope_theta ", theta);
    h.rope_theta = theta;
  }
  h.rope = read_rope_scaling(c, h);
  return h;
}

// The safetensors files and which one holds each tensor.
struct Weights {
  std::map<std::string, SafetensorsFile> files;  // by file name
  std::map<std::string, std::string> where;      // tensor -> file name
  std::string listing;                           // the file that lists the tensors
};

// A shard's file name as the index gives it: a plain name in the folder.
bool plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

Weights open_weights(const std::string& folder) {
  Weights w;
  const std::string index = in_folder(folder, "model.safetensors.index.json");
  const std::string single = in_folder(folder, "model.safetensors");
  if (is_file(index)) {
    w.listing = index;
    const json j = read_json(index);
    const auto map = j.find("weight_map");
    if (map == j.end() || !map->is_object() || map->empty())
      fail(ErrorKind::Parse, kOp, index, ": no weight_map object naming the shard of each tensor");
    for (const auto& [tensor, file] : map->items()) {
      if (!file.is_string() || !plain_file_name(file.get<std::string>()))
        fail(ErrorKind::Parse, kOp, index, ": weight_map gives tensor ", io::excerpt(tensor),
             " the file ", shown(file), ", want the name of a file in the folder");
      const std::string name = file.get<std::string>();
      if (!w.files.count(name)) {
        const std::string path = in_folder(folder, name);
        if (!is_file(path))
          fail(ErrorKind::Io, kOp, path, ": no such shard (", index, " lists it for tensor ",
               io::excerpt(tensor), ")");
        w.files.emplace(name, SafetensorsFile(path));
      }
      if (!w.files.at(name).contains(tensor))
        fail(ErrorKind::Parse, kOp, in_folder(folder, name), ": no tensor ", io::excerpt(tensor),
             " (", index, " lists it there)");
      w.where.emplace(tensor, name);
    }
  } else if (is_file(single)) {
    w.listing = single;
    const auto [it, _] = w.files.emplace("model.safetensors", SafetensorsFile(single));
    for (const std::string& t : it->second.names()) w.where.emplace(t, "model.safetensors");
  } else {
    fail(ErrorKind::Io, kOp, folder,
         ": no model.safetensors or model.safetensors.index.json (the weights of a Hugging Face "
         "folder)");
  }
  return w;
}

// Owns what the assembled file's tensors point into.
struct Backing {
  std::map<std::string, SafetensorsFile> files;
  std::deque<std::vector<std::byte>> permuted;  // attn_q / attn_k rows, reordered
  std::deque<std::vector<float>> rope_factors;  // computed from config.json
};

// GGUF's row order of q or k: the converter's permute. Within each head of d rows HF keeps the
// two halves rotated together (row i pairs with i + d/2); GGUF interleaves them, so that row 2i
// is HF's i and row 2i+1 HF's i + d/2.
std::vector<std::byte> permute_rows(const std::byte* src, int64_t rows, size_t row_bytes,
                                    int64_t heads) {
  std::vector<std::byte> out(static_cast<size_t>(rows) * row_bytes);
  const int64_t d = rows / heads, half = d / 2;
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < half; i++)
      for (int64_t s = 0; s < 2; s++)
        std::memcpy(out.data() + static_cast<size_t>(h * d + 2 * i + s) * row_bytes,
                    src + static_cast<size_t>(h * d + s * half + i) * row_bytes, row_bytes);
  return out;
}

// The special token ids of config.json / generation_config.json: an id, or the first of a list.
int64_t config_token_id(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return -1;
  const json& v = it->is_array() && !it->empty() ? it->front() : *it;
  return v.is_number_integer() ? v.get<int64_t>() : -1;
}

// tokenizer.json's text of token `id` (vocab or added tokens), or "".
std::string token_text(const json& tok, int64_t id) {
  if (tok.contains("added_tokens") && tok.at("added_tokens").is_array())
    for (const json& a : tok.at("added_tokens"))
      if (a.is_object() && a.value("id", int64_t{-1}) == id && a.contains("content") &&
          a.at("content").is_string())
        return a.at("content").get<std::string>();
  if (tok.contains("model") && tok.at("model").contains("vocab") &&
      tok.at("model").at("vocab").is_object())
    for (const auto& [text, v] : tok.at("model").at("vocab").items())
      if (v.is_number_integer() && v.get<int64_t>() == id) return text;
  return "";
}

// tokenizer.json's id of a token text, or -1.
int64_t token_id(const json& tok, const std::string& text) {
  if (tok.contains("added_tokens") && tok.at("added_tokens").is_array())
    for (const json& a : tok.at("added_tokens"))
      if (a.is_object() && a.contains("content") && a.at("content") == text && a.contains("id") &&
          a.at("id").is_number_integer())
        return a.at("id").get<int64_t>();
  if (tok.contains("model") && tok.at("model").contains("vocab")) {
    const json& vocab = tok.at("model").at("vocab");
    if (vocab.is_object() && vocab.contains(text) && vocab.at(text).is_number_integer())
      return vocab.at(text).get<int64_t>();
  }
  return -1;
}

// tokenizer_config.json names a special token as a string or as {"content": ...}.
std::string config_token_text(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && it->at("content").is_string())
    return it->at("content").get<std::string>();
  return "";
}

// Whether tokenizer.json's post-processor puts a special token before the text (Llama 3's
// TemplateProcessing, possibly inside a Sequence).
bool template_adds_bos(const json& tok) {
  const auto it = tok.find("post_processor");
  if (it == tok.end() || !it->is_object()) return false;
  const auto adds = [](const json& s) {
    if (!s.is_object() || s.value("type", "") != "TemplateProcessing" || !s.contains("single"))
      return false;
    const json& single = s.at("single");
    return single.is_array() && !single.empty() && single.front().is_object() &&
           single.front().contains("SpecialToken");
  };
  if (it->value("type", "") == "Sequence" && it->contains("processors") &&
      it->at("processors").is_array()) {
    for (const json& s : it->at("processors"))
      if (adds(s)) return true;
    return false;
  }
  return adds(*it);
}

// The tokenizer keys (see read_hf_checkpoint); nothing when the folder has no tokenizer.json.
void add_tokenizer(const std::string& folder, const json& config, int64_t vocab,
                   std::vector<std::pair<std::string, GgufValue>>& md) {
  const std::string tok_path = in_folder(folder, "tokenizer.json");
  if (!is_file(tok_path)) return;
  std::string tok_text = read_text(tok_path);
  const json tok = parse_json(tok_text, tok_path);
  json tok_config = json::object();
  const std::string tc_path = in_folder(folder, "tokenizer_config.json");
  if (is_file(tc_path)) tok_config = read_json(tc_path);
  json gen = json::object();
  const std::string gen_path = in_folder(folder, "generation_config.json");
  if (is_file(gen_path)) gen = read_json(gen_path);

  // The special tokens: tokenizer_config.json's, else the ids generation_config.json (what HF's
  // generate() reads) or config.json give.
  json special = json::object();
  for (const char* key : {"bos_token", "eos_token", "pad_token", "unk_token"})
    if (const std::string t = config_token_text(tok_config, key); !t.empty()) special[key] = t;
  for (const auto& [key, id_key] :
       {std::pair{"bos_token", "bos_token_id"}, std::pair{"eos_token", "eos_token_id"}}) {
    if (special.contains(key)) continue;
    int64_t id = config_token_id(gen, id_key);
    if (id < 0) id = config_token_id(config, id_key);
    if (id < 0) continue;
    const std::string t = token_text(tok, id);
    if (t.empty())
      fail(ErrorKind::Parse, kOp, folder, ": ", id_key, " ", id, " is not a token of ", tok_path);
    special[key] = t;
  }
  for (const auto& [key, gguf_key] : {std::pair{"bos_token", "tokenizer.ggml.bos_token_id"},
                                      std::pair{"eos_token", "tokenizer.ggml.eos_token_id"}}) {
    if (!special.contains(key)) continue;
    const int64_t id = token_id(tok, special[key].get<std::string>());
    if (id < 0 || id >= vocab)
      fail(ErrorKind::Parse, kOp, folder, ": ", key, " '",
           io::excerpt(special[key].get<std::string>()), "' is not a token of ", tok_path,
           " below vocab_size ", vocab);
    md.emplace_back(gguf_key, static_cast<uint32_t>(id));
  }
  bool add_bos = template_adds_bos(tok);
  if (const auto it = tok_config.find("add_bos_token"); it != tok_config.end() && it->is_boolean())
    add_bos = it->get<bool>();
  md.emplace_back("tokenizer.ggml.add_bos_token", add_bos && special.contains("bos_token"));
  md.emplace_back("tokenizer.huggingface.json", std::move(tok_text));
  md.emplace_back("tokenizer.huggingface.config", special.dump());

  // The chat template: chat_template.jinja (newer transformers), else tokenizer_config.json's
  // (a string, or a list of named templates of which "default" is the one used).
  std::string tmpl;
  if (const std::string jinja = in_folder(folder, "chat_template.jinja"); is_file(jinja)) {
    tmpl = read_text(jinja);
  } else if (const auto it = tok_config.find("chat_template"); it != tok_config.end()) {
    if (it->is_string()) tmpl = it->get<std::string>();
    if (it->is_array())
      for (const json& t : *it)
        if (t.is_object() && t.value("name", "") == "default" && t.contains("template") &&
            t.at("template").is_string())
          tmpl = t.at("template").get<std::string>();
  }
  if (!tmpl.empty()) md.emplace_back("tokenizer.chat_template", std::move(tmpl));
}

}  // namespace

GgufFile read_hf_checkpoint(const std::string& folder) {
  const std::string config_path = in_folder(folder, "config.json");
  if (!is_file(config_path))
    fail(ErrorKind::Io, kOp, folder,
         ": no config.json (a Hugging Face model folder holds config.json, the *.safetensors "
         "weights and tokenizer.json)");
  const json config_json = read_json(config_path);
  const Config config{config_json, config_path};
  const Hyper h = [&] {
    try {
      return read_hyper(config);
    } catch (const json::exception& e) {
      fail(ErrorKind::Parse, kOp, config_path, ": ", e.what());
    }
  }();

  std::string name = config.string("_name_or_path", "");
  if (name.empty()) name = std::filesystem::path(folder).lexically_normal().filename().string();
  if (name.empty())
    name = std::filesystem::path(folder).lexically_normal().parent_path().filename().string();
  std::vector<std::pair<std::string, GgufValue>> md = {
      {"general.architecture", GgufValue("llama")},
      {"general.name", GgufValue(name)},
      {"llama.context_length", GgufValue(h.context)},
      {"llama.embedding_length", GgufValue(h.hidden)},
      {"llama.feed_forward_length", GgufValue(h.ffn)},
      {"llama.block_count", GgufValue(h.layers)},
      {"llama.attention.head_count", GgufValue(h.heads)},
      {"llama.attention.head_count_kv", GgufValue(h.kv_heads)},
      {"llama.rope.freq_base", GgufValue(h.rope_theta)},
      {"llama.rope.dimension_count", GgufValue(h.head_dim)},
      {"llama.attention.layer_norm_rms_epsilon", GgufValue(h.rms_eps)},
      {"llama.vocab_size", GgufValue(h.vocab)},
  };
  md.insert(md.end(), h.rope.keys.begin(), h.rope.keys.end());
  try {
    add_tokenizer(folder, config_json, h.vocab, md);
  } catch (const json::exception& e) {
    fail(ErrorKind::Parse, kOp, folder, ": tokenizer files: ", e.what());
  }

  Weights w = open_weights(folder);
  // HF name -> GGUF name, the shape config.json implies, and the config keys that imply it.
  struct Want {
    std::string hf, gguf;
    Shape shape;
    std::string from;
    int64_t permute_heads = 0;  // q/k: their rows go to GGUF's order
  };
  std::vector<Want> want;
  const std::string hs = "hidden_size " + std::to_string(h.hidden);
  const std::string ffn = "intermediate_size " + std::to_string(h.ffn) + ", " + hs;
  const std::string kv = "num_key_value_heads " + std::to_string(h.kv_heads) + " x head dim " +
                         std::to_string(h.head_dim) + ", " + hs;
  const int64_t kv_dim = h.kv_heads * h.head_dim;
  want.push_back({"model.embed_tokens.weight", "token_embd.weight", Shape{h.vocab, h.hidden},
                  "vocab_size " + std::to_string(h.vocab) + ", " + hs});
  for (int64_t i = 0; i < h.layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".", g = "blk." + std::to_string(i);
    want.push_back({p + "input_layernorm.weight", g + ".attn_norm.weight", Shape{h.hidden}, hs});
    want.push_back({p + "self_attn.q_proj.weight", g + ".attn_q.weight", Shape{h.hidden, h.hidden},
                    hs, h.heads});
    want.push_back({p + "self_attn.k_proj.weight", g + ".attn_k.weight", Shape{kv_dim, h.hidden},
                    kv, h.kv_heads});
    want.push_back(
        {p + "self_attn.v_proj.weight", g + ".attn_v.weight", Shape{kv_dim, h.hidden}, kv});
    want.push_back(
        {p + "self_attn.o_proj.weight", g + ".attn_output.weight", Shape{h.hidden, h.hidden}, hs});
    want.push_back(
        {p + "post_attention_layernorm.weight", g + ".ffn_norm.weight", Shape{h.hidden}, hs});
    want.push_back(
        {p + "mlp.gate_proj.weight", g + ".ffn_gate.weight", Shape{h.ffn, h.hidden}, ffn});
    want.push_back({p + "mlp.up_proj.weight", g + ".ffn_up.weight", Shape{h.ffn, h.hidden}, ffn});
    want.push_back(
        {p + "mlp.down_proj.weight", g + ".ffn_down.weight", Shape{h.hidden, h.ffn}, ffn});
  }
  want.push_back({"model.norm.weight", "output_norm.weight", Shape{h.hidden}, hs});
  if (!h.tied)
    want.push_back(
        {"lm_head.weight", "output.weight", Shape{h.vocab, h.hidden},
         "vocab_size " + std::to_string(h.vocab) + ", " + hs + ", tie_word_embeddings false"});

  // Every tensor is one the model uses (or a copy of one: a tied lm_head, rotary tables).
  std::set<std::string> known;
  for (const Want& x : want) known.insert(x.hf);
  for (const auto& [tensor, file] : w.where) {
    if (known.count(tensor) || (h.tied && tensor == "lm_head.weight") ||
        tensor.ends_with(".self_attn.rotary_emb.inv_freq"))
      continue;
    fail(ErrorKind::Unsupported, kOp, in_folder(folder, file), ": tensor ", io::excerpt(tensor),
         " is not one of a ", h.layers, "-layer llama model (config.json num_hidden_layers ",
         h.layers, "; biases and other extra weights are not implemented)");
  }

  auto backing = std::make_shared<Backing>();
  std::vector<GgufTensorInfo> tensors;
  for (const Want& x : want) {
    const auto it = w.where.find(x.hf);
    if (it == w.where.end())
      fail(ErrorKind::Parse, kOp, folder, ": no tensor ", x.hf, " in ", w.listing);
    const SafetensorsFile& file = w.files.at(it->second);
    const SafetensorsFile::Entry& e = file.entry(x.hf);
    GgufTensorInfo t;
    t.name = x.gguf;
    t.shape = x.shape;
    if (e.dtype == "F32")
      t.type = QuantType::F32;
    else if (e.dtype == "F16")
      t.type = QuantType::F16;
    else if (e.dtype == "BF16")
      t.type = QuantType::BF16;
    else
      fail(ErrorKind::Unsupported, kOp, file.path(), ": tensor ", x.hf, " has dtype ",
           io::excerpt(e.dtype), " (wick loads F32, F16 and BF16 weights)");
    if (e.shape != x.shape)
      fail(ErrorKind::Parse, kOp, file.path(), ": tensor ", x.hf, " has shape ", e.shape, ", want ",
           x.shape, " (config.json ", x.from, ")");
    uint64_t header = 0;
    std::memcpy(&header, file.mapped_data(), 8);
    const std::byte* data = file.mapped_data() + 8 + header + e.begin;
    if (x.permute_heads > 0) {
      const size_t row_bytes =
          static_cast<size_t>(e.end - e.begin) / static_cast<size_t>(x.shape[0]);
      backing->permuted.push_back(permute_rows(data, x.shape[0], row_bytes, x.permute_heads));
      data = backing->permuted.back().data();
    }
    t.data = data;
    tensors.push_back(std::move(t));
  }
  for (const auto& [name, factors] : h.rope.tensors) {
    backing->rope_factors.push_back(factors);
    GgufTensorInfo t;
    t.name = name;
    t.shape = Shape{static_cast<int64_t>(factors.size())};
    t.type = QuantType::F32;
    t.data = reinterpret_cast<const std::byte*>(backing->rope_factors.back().data());
    tensors.push_back(std::move(t));
  }
  backing->files = std::move(w.files);
  return GgufFile::assemble(folder, std::move(md), std::move(tensors), std::move(backing));
}

}  // namespace models

LlamaModel LlamaModel::load_hf(const std::string& folder, const Device& dev,
                               const LlamaOptions& opts, const LoadProgress& progress) {
  return load_gguf(std::make_shared<const GgufFile>(models::read_hf_checkpoint(folder)), dev, opts,
                   progress);
}

LlamaModel LlamaModel::load(const std::string& path, const Device& dev, const LlamaOptions& opts,
                            const LoadProgress& progress) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return load_hf(path, dev, opts, progress);
  return load_gguf(path, dev, opts, progress);
}

}  // namespace wick
