// Tokenizer::from_hf_json: reads HF's tokenizer.json (and optionally tokenizer_config.json) into
// the GGUF-shaped data build_model takes. Byte-level BPE and SentencePiece-style BPE are accepted;
// anything that would change the output and is not implemented is refused rather than ignored.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/file.h"
#include "tokenizer/model.h"
#include "wick/error.h"

namespace wick {
namespace {

using nlohmann::json;
constexpr const char* kOp = "Tokenizer::from_hf_json";

std::string describe(const json& j) {
  std::string s = j.dump();
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

const json& member(const json& obj, const char* key, const char* where) {
  if (!obj.is_object() || !obj.contains(key))
    fail(ErrorKind::Parse, kOp, where, " has no '", key, "'");
  return obj.at(key);
}

bool is_null_or(const json& obj, const char* key, const json& value) {
  return !obj.contains(key) || obj.at(key).is_null() || obj.at(key) == value;
}

std::string_view type_of(const json& j) {
  if (!j.is_object() || !j.contains("type") || !j.at("type").is_string()) return {};
  return j.at("type").get_ref<const std::string&>();
}

std::string regex_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// What a tokenizer.json's normalizer and pre_tokenizer ask of the model.
struct TextPipeline {
  tokenizer_detail::ModelOptions options;
  bool byte_level_seen = false;  // a ByteLevel pre-tokenizer
  bool spm_seen = false;         // '▁' spaces: Metaspace, or Prepend/Replace normalizers
};

void read_normalizer(const json& norm, TextPipeline& p) {
  if (norm.is_null()) return;
  const auto unsupported = [&] {
    fail(ErrorKind::Unsupported, kOp, "normalizer ", describe(norm),
         " (supported: none, or SentencePiece's Prepend('▁') and Replace(' ', '▁'))");
  };
  std::vector<json> steps;
  if (type_of(norm) == "Sequence" && norm.contains("normalizers") &&
      norm.at("normalizers").is_array())
    steps.assign(norm.at("normalizers").begin(), norm.at("normalizers").end());
  else
    steps.push_back(norm);
  for (const json& step : steps) {
    if (type_of(step) == "Prepend" && step.value("prepend", "") == "\u2581") {
      p.options.space_prefix = tokenizer_detail::SpacePrefix::EverySegment;
    } else if (type_of(step) == "Replace" && step.contains("pattern") &&
               step.at("pattern").value("String", "") == " " &&
               step.value("content", "") == "\u2581") {
      p.options.escape_spaces = true;
    } else {
      unsupported();
    }
  }
  p.spm_seen = true;
}

void read_pre_tokenizer(const json& pre, TextPipeline& p) {
  using tokenizer_detail::PreTokenizerStep;
  using tokenizer_detail::Regex;
  if (pre.is_null()) return;
  const auto unsupported = [&](const json& what) {
    fail(ErrorKind::Unsupported, kOp, "pre_tokenizer ", describe(what),
         " (supported: Split(Regex or String, behavior Isolated), Digits(individual_digits), "
         "ByteLevel, Metaspace)");
  };
  std::vector<json> steps;
  if (type_of(pre) == "Sequence" && pre.contains("pretokenizers") &&
      pre.at("pretokenizers").is_array())
    steps.assign(pre.at("pretokenizers").begin(), pre.at("pretokenizers").end());
  else
    steps.push_back(pre);
  std::vector<PreTokenizerStep> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const json& step = steps[i];
    if (!step.is_object()) fail(ErrorKind::Parse, kOp, "pre-tokenizer step ", describe(step));
    const std::string_view type = type_of(step);
    if (p.byte_level_seen) unsupported(step);  // ByteLevel must come last
    if (type == "Split") {
      if (step.value("behavior", "") != "Isolated" || step.value("invert", false))
        unsupported(step);
      const json& pattern = member(step, "pattern", "Split");
      std::string regex;
      if (pattern.contains("Regex") && pattern.at("Regex").is_string())
        regex = pattern.at("Regex").get<std::string>();
      else if (pattern.contains("String") && pattern.at("String").is_string())
        regex = regex_escape(pattern.at("String").get<std::string>());
      else
        unsupported(step);
      out.push_back({PreTokenizerStep::Kind::Regex, std::make_shared<Regex>(std::move(regex))});
    } else if (type == "Digits") {
      if (!step.value("individual_digits", false)) unsupported(step);
      out.push_back({PreTokenizerStep::Kind::IndividualDigits, nullptr});
    } else if (type == "ByteLevel") {
      // add_prefix_space would prepend a space, which no supported family does.
      if (!is_null_or(step, "add_prefix_space", false)) unsupported(step);
      if (step.value("use_regex", true))
        out.push_back({PreTokenizerStep::Kind::Regex,
                       std::make_shared<Regex>(std::string(tokenizer_detail::kGpt2Regex))});
      p.byte_level_seen = true;
    } else if (type == "Metaspace" && steps.size() == 1) {
      if (step.value("replacement", "\u2581") != "\u2581" || step.value("split", false))
        unsupported(step);
      std::string scheme = step.value("prepend_scheme", "");
      if (scheme.empty()) scheme = step.value("add_prefix_space", true) ? "always" : "never";
      using tokenizer_detail::SpacePrefix;
      p.options.space_prefix = scheme == "always"  ? SpacePrefix::EverySegment
                               : scheme == "first" ? SpacePrefix::FirstSegment
                               : scheme == "never" ? SpacePrefix::None
                                                   : (unsupported(step), SpacePrefix::None);
      p.options.escape_spaces = true;
      p.spm_seen = true;
    } else {
      unsupported(step);
    }
  }
  p.options.pre = tokenizer_detail::PreTokenizer(std::move(out));
}

void check_model(const json& model, TextPipeline& p) {
  if (model.value("type", "BPE") != "BPE")
    fail(ErrorKind::Unsupported, kOp, "model type '", model.value("type", ""), "' (only BPE)");
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"})
    if (!is_null_or(model, key, json()))
      fail(ErrorKind::Unsupported, kOp, "BPE option ", key, " = ", describe(model.at(key)));
  p.options.ignore_merges = model.value("ignore_merges", false);
  p.options.byte_fallback = model.value("byte_fallback", false);
  if (p.byte_level_seen == p.spm_seen)
    fail(ErrorKind::Unsupported, kOp,
         p.byte_level_seen ? "a ByteLevel pre-tokenizer with '▁' space handling"
                           : "a BPE model with neither a ByteLevel pre-tokenizer nor '▁' spaces");
  p.options.byte_level = p.byte_level_seen;
  if (p.byte_level_seen && p.options.byte_fallback)
    fail(ErrorKind::Unsupported, kOp, "byte_fallback in a byte-level BPE model");
}

// HF stores merges as "a b" strings (older files) or ["a", "b"] pairs.
std::vector<std::pair<std::string, std::string>> read_merges(const json& merges) {
  if (!merges.is_array()) fail(ErrorKind::Parse, kOp, "model.merges is not an array");
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        fail(ErrorKind::Parse, kOp, "merge ", rank, " '", io::excerpt(s),
             "' is not two tokens split by a space");
      out.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail(ErrorKind::Parse, kOp, "merge ", rank, " is ", describe(m));
    }
  }
  return out;
}

// Places `token` at `id`, growing the table; a clash of two different strings is an error. Ids
// reach at most `entries` (the vocabulary's and the added tokens' count) plus a gap of 65,536:
// one far id would make a table of billions of empty tokens.
void place(std::vector<std::string>& tokens, int64_t id, const std::string& token, size_t entries) {
  if (id < 0 || id >= INT32_MAX)
    fail(ErrorKind::Parse, kOp, "token '", io::excerpt(token), "' has id ", id);
  if (uint64_t(id) >= uint64_t(entries) + 65536)
    fail(ErrorKind::Parse, kOp, "token '", io::excerpt(token), "' has id ", id, ", far past the ",
         entries, " tokens of the file");
  if (size_t(id) >= tokens.size()) tokens.resize(size_t(id) + 1);
  if (!tokens[id].empty() && tokens[id] != token)
    fail(ErrorKind::Parse, kOp, "id ", id, " is both '", io::excerpt(tokens[id]), "' and '",
         io::excerpt(token), "'");
  tokens[id] = token;
}

// tokenizer_config.json names a special token as a string or as {"content": ...}.
int32_t config_token(const json& config, const char* key, const std::vector<std::string>& tokens) {
  if (!config.contains(key) || config.at(key).is_null()) return -1;
  const json& v = config.at(key);
  std::string name;
  if (v.is_string())
    name = v.get<std::string>();
  else if (v.is_object() && v.contains("content") && v.at("content").is_string())
    name = v.at("content").get<std::string>();
  else
    fail(ErrorKind::Parse, kOp, "tokenizer_config ", key, " is ", describe(v));
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == name) return int32_t(i);
  fail(ErrorKind::Parse, kOp, "tokenizer_config ", key, " '", io::excerpt(name),
       "' is not in the vocabulary");
}

json parse(std::string_view text, const char* what) {
  io::check_json_nesting(text, kOp, what);
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(ErrorKind::Parse, kOp, what, " is not valid JSON");
  if (!j.is_object()) fail(ErrorKind::Parse, kOp, what, " is not a JSON object");
  return j;
}

// tokenizer.json files are a few MiB; anything past this bound is not one.
constexpr uint64_t kMaxJsonBytes = 1ull << 30;

std::string read_file(const std::string& path) {
  // A regular file only (a FIFO would block the read forever), read with a size bound.
  const io::ReadableFile file = io::open_regular_file(path, kOp);
  const auto bytes = io::read_whole_file(file, kMaxJsonBytes);
  if (!bytes) fail(ErrorKind::Io, kOp, "'", path, "' is larger than ", kMaxJsonBytes, " bytes");
  return std::string(bytes->begin(), bytes->end());
}

}  // namespace

Tokenizer Tokenizer::from_hf_json(std::string_view tokenizer_json,
                                  std::string_view tokenizer_config_json) {
  try {
    return from_parsed_hf_json(tokenizer_json, tokenizer_config_json);
  } catch (const json::exception& e) {
    // A value of the wrong JSON type somewhere nlohmann noticed before our own checks did.
    fail(ErrorKind::Parse, kOp, e.what());
  }
}

Tokenizer Tokenizer::from_parsed_hf_json(std::string_view tokenizer_json,
                                         std::string_view tokenizer_config_json) {
  const json root = parse(tokenizer_json, "tokenizer.json");
  TextPipeline pipeline;
  if (root.contains("normalizer")) read_normalizer(root.at("normalizer"), pipeline);
  read_pre_tokenizer(member(root, "pre_tokenizer", "tokenizer.json"), pipeline);
  // The decoder follows from the model (ByteLevel, or '▁' -> ' ' with byte fallback); a post
  // processor only adds special tokens, which encode() leaves to the caller.
  if (root.contains("decoder") && !root.at("decoder").is_null()) {
    const json& d = root.at("decoder");
    std::vector<json> steps;
    if (type_of(d) == "Sequence" && d.contains("decoders") && d.at("decoders").is_array())
      steps.assign(d.at("decoders").begin(), d.at("decoders").end());
    else
      steps.push_back(d);
    for (const json& step : steps) {
      const std::string_view t = type_of(step);
      if (t != "ByteLevel" && t != "Metaspace" && t != "ByteFallback" && t != "Fuse" &&
          t != "Strip" && t != "Replace")
        fail(ErrorKind::Unsupported, kOp, "decoder ", describe(d));
    }
  }
  if (root.contains("post_processor") && !root.at("post_processor").is_null()) {
    // Alone, or a Sequence of them (Llama 3's ByteLevel then TemplateProcessing).
    const json& post = root.at("post_processor");
    const auto allowed = [](const json& step) {
      const std::string_view t = type_of(step);
      return t == "ByteLevel" || t == "TemplateProcessing";
    };
    bool ok = allowed(post);
    if (type_of(post) == "Sequence" && post.contains("processors") &&
        post.at("processors").is_array()) {
      ok = true;
      for (const json& step : post.at("processors")) ok = ok && allowed(step);
    }
    if (!ok) fail(ErrorKind::Unsupported, kOp, "post_processor ", describe(post));
  }
  const json& model = member(root, "model", "tokenizer.json");
  check_model(model, pipeline);
  const json& vocab = member(model, "vocab", "model");
  if (!vocab.is_object()) fail(ErrorKind::Parse, kOp, "model.vocab is not an object");

  std::vector<std::string> tokens;
  tokens.reserve(vocab.size());
  const size_t entries =
      vocab.size() + (root.contains("added_tokens") ? root.at("added_tokens").size() : 0);
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer())
      fail(ErrorKind::Parse, kOp, "vocab id of '", io::excerpt(token), "' is ", describe(id));
    place(tokens, id.get<int64_t>(), token, entries);
  }
  std::vector<int32_t> types(tokens.size(), int32_t(TokenType::Normal));
  if (root.contains("added_tokens")) {
    if (!root.at("added_tokens").is_array())
      fail(ErrorKind::Parse, kOp, "added_tokens is not an array");
    for (const json& added : root.at("added_tokens")) {
      const json& content = member(added, "content", "added token");
      const json& id = member(added, "id", "added token");
      if (!content.is_string() || !id.is_number_integer())
        fail(ErrorKind::Parse, kOp, "added token ", describe(added));
      for (const char* key : {"lstrip", "rstrip", "single_word"})
        if (added.value(key, false))
          fail(ErrorKind::Unsupported, kOp, "added token option ", key, " in ", describe(added));
      place(tokens, id.get<int64_t>(), content.get<std::string>(), entries);
      types.resize(tokens.size(), int32_t(TokenType::Normal));
      types[id.get<int64_t>()] =
          int32_t(added.value("special", false) ? TokenType::Control : TokenType::UserDefined);
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].empty()) types[i] = int32_t(TokenType::Unused);
    // HF's ByteFallback decoder reads every <0xNN> token as its byte.
    if (pipeline.options.byte_fallback && types[i] == int32_t(TokenType::Normal) &&
        tokens[i].size() == 6 && tokens[i].starts_with("<0x") && tokens[i][5] == '>' &&
        std::isxdigit(uint8_t(tokens[i][3])) && std::isxdigit(uint8_t(tokens[i][4])))
      types[i] = int32_t(TokenType::Byte);
  }

  SpecialTokens special;
  if (model.contains("unk_token") && model.at("unk_token").is_string()) {
    const auto it =
        std::find(tokens.begin(), tokens.end(), model.at("unk_token").get<std::string>());
    if (it != tokens.end()) special.unk = int32_t(it - tokens.begin());
  }
  if (!tokenizer_config_json.empty()) {
    const json config = parse(tokenizer_config_json, "tokenizer_config.json");
    special.bos = config_token(config, "bos_token", tokens);
    special.eos = config_token(config, "eos_token", tokens);
    special.pad = config_token(config, "pad_token", tokens);
    if (const int32_t unk = config_token(config, "unk_token", tokens); unk >= 0) special.unk = unk;
  }
  return Tokenizer(tokenizer_detail::build_model(std::move(pipeline.options), std::move(tokens),
                                                 read_merges(member(model, "merges", "model")), {},
                                                 types, special, kOp));
}

Tokenizer Tokenizer::from_hf_json_file(const std::string& tokenizer_json_path,
                                       const std::string& tokenizer_config_path) {
  const std::string config =
      tokenizer_config_path.empty() ? std::string() : read_file(tokenizer_config_path);
  return from_hf_json(read_file(tokenizer_json_path), config);
}

}  // namespace wick
