// Tokenizer::from_hf_json: reads HF's tokenizer.json (and optionally tokenizer_config.json) into
// the GGUF-shaped data build_model takes. Only what byte-level BPE tokenizers use is accepted;
// anything that would change the output and is not implemented is refused rather than ignored.
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

tokenizer_detail::PreTokenizerKind read_pre_tokenizer(const json& pre) {
  const auto byte_level_ok = [](const json& p) {
    // add_prefix_space would prepend a space; without use_regex there is no GPT-2 split.
    return p.is_object() && p.value("type", "") == "ByteLevel" &&
           is_null_or(p, "add_prefix_space", false) && is_null_or(p, "use_regex", true);
  };
  if (byte_level_ok(pre)) return tokenizer_detail::PreTokenizerKind::Gpt2;
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers")) {
    const json& steps = pre.at("pretokenizers");
    if (steps.is_array() && steps.size() == 2 && steps[0].value("type", "") == "Digits" &&
        steps[0].value("individual_digits", false) && byte_level_ok(steps[1]))
      return tokenizer_detail::PreTokenizerKind::DigitsThenGpt2;
  }
  fail(ErrorKind::Unsupported, kOp, "pre_tokenizer ", describe(pre),
       " (supported: ByteLevel with the GPT-2 regex, optionally after Digits(individual_digits))");
}

void check_model(const json& model) {
  if (model.value("type", "BPE") != "BPE")
    fail(ErrorKind::Unsupported, kOp, "model type '", model.value("type", ""), "' (only BPE)");
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"})
    if (!is_null_or(model, key, json()))
      fail(ErrorKind::Unsupported, kOp, "BPE option ", key, " = ", describe(model.at(key)));
  for (const char* key : {"byte_fallback", "ignore_merges"})
    if (!is_null_or(model, key, false))
      fail(ErrorKind::Unsupported, kOp, "BPE option ", key, " = ", describe(model.at(key)));
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

// Places `token` at `id`, growing the table; a clash of two different strings is an error.
void place(std::vector<std::string>& tokens, int64_t id, const std::string& token) {
  if (id < 0 || id >= INT32_MAX)
    fail(ErrorKind::Parse, kOp, "token '", io::excerpt(token), "' has id ", id);
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
  if (!is_null_or(root, "normalizer", json()))
    fail(ErrorKind::Unsupported, kOp, "normalizer ", describe(root.at("normalizer")));
  const auto pre = read_pre_tokenizer(member(root, "pre_tokenizer", "tokenizer.json"));
  for (const char* key : {"decoder", "post_processor"}) {
    // Their ByteLevel forms change nothing for ids; any other form would.
    if (root.contains(key) && !root.at(key).is_null() &&
        root.at(key).value("type", "") != "ByteLevel")
      fail(ErrorKind::Unsupported, kOp, key, " ", describe(root.at(key)));
  }
  const json& model = member(root, "model", "tokenizer.json");
  check_model(model);
  const json& vocab = member(model, "vocab", "model");
  if (!vocab.is_object()) fail(ErrorKind::Parse, kOp, "model.vocab is not an object");

  std::vector<std::string> tokens;
  tokens.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer())
      fail(ErrorKind::Parse, kOp, "vocab id of '", io::excerpt(token), "' is ", describe(id));
    place(tokens, id.get<int64_t>(), token);
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
      place(tokens, id.get<int64_t>(), content.get<std::string>());
      types.resize(tokens.size(), int32_t(TokenType::Normal));
      types[id.get<int64_t>()] =
          int32_t(added.value("special", false) ? TokenType::Control : TokenType::UserDefined);
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i].empty()) types[i] = int32_t(TokenType::Unused);

  SpecialTokens special;
  if (!tokenizer_config_json.empty()) {
    const json config = parse(tokenizer_config_json, "tokenizer_config.json");
    special.bos = config_token(config, "bos_token", tokens);
    special.eos = config_token(config, "eos_token", tokens);
    special.pad = config_token(config, "pad_token", tokens);
    special.unk = config_token(config, "unk_token", tokens);
  }
  return Tokenizer(tokenizer_detail::build_model(
      std::move(tokens), read_merges(member(model, "merges", "model")), types, special, pre, kOp));
}

Tokenizer Tokenizer::from_hf_json_file(const std::string& tokenizer_json_path,
                                       const std::string& tokenizer_config_path) {
  const std::string config =
      tokenizer_config_path.empty() ? std::string() : read_file(tokenizer_config_path);
  return from_hf_json(read_file(tokenizer_json_path), config);
}

}  // namespace wick
