// Conformance with llama.cpp's tokenizer tests: its vocab-only GGUF files
// (models/ggml-vocab-*.gguf) and, for most, test vectors (*.gguf.inp: texts split by
// "\n__ggml_vocab_test__\n"; *.gguf.out: one line of ids per text, made by HF tokenizers). Every
// vector of every vocabulary wick supports must match; the others must be refused with
// Error(Unsupported). The files are not in the repo: scripts/install-deps.sh puts them in
// .cache/llama-vocab/ (WICK_LLAMA_VOCAB_DIR overrides), and their absence fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"
#include "tokenizer/unicode.h"
#include "wick/gguf.h"
#include "wick/llama.h"
#include "wick/tokenizer.h"

namespace wick::testing {
namespace {

namespace fs = std::filesystem;
namespace td = tokenizer_detail;

struct Vector {
  std::string text;
  std::vector<int32_t> ids;
};

// llama.cpp's tests/test-tokenizer-0.cpp reading.
std::vector<Vector> read_vectors(const fs::path& gguf) {
  const std::string inp = read_file(gguf.string() + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::ifstream out(gguf.string() + ".out");
  std::vector<Vector> vectors;
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    std::vector<int32_t> ids;
    std::istringstream ls(line);
    for (int32_t id; ls >> id;) ids.push_back(id);
    vectors.push_back({i < texts.size() ? texts[i] : std::string(), std::move(ids)});
  }
  EXPECT_EQ(vectors.size(), texts.size()) << gguf;
  return vectors;
}

struct VocabCase {
  const char* name;     // models/ggml-vocab-<name>.gguf
  bool has_vectors;     // a .inp/.out pair ships with it
  const char* refusal;  // nullptr: supported; else a word the Unsupported error must contain
};

const VocabCase kCases[] = {
    {"llama-spm", true, nullptr},      {"phi-3", true, nullptr},
    {"baichuan", false, nullptr},      {"llama-bpe", true, nullptr},
    {"gpt-2", true, nullptr},          {"qwen2", true, nullptr},
    {"qwen35", true, nullptr},         {"deepseek-llm", true, nullptr},
    {"deepseek-coder", true, nullptr}, {"falcon", true, nullptr},
    {"starcoder", true, nullptr},      {"refact", true, nullptr},
    {"command-r", true, nullptr},      {"mpt", true, nullptr},
    {"gpt-neox", false, nullptr},      {"aquila", false, nullptr},
    {"bert-bge", true, "'bert'"},       // WordPiece
    {"nomic-bert-moe", false, "'t5'"},  // Unigram
    {"gemma-4", true, "'gemma4'"},      // BPE over '▁' text, not byte-level
};

class LlamaCppVocab : public ::testing::TestWithParam<VocabCase> {};

TEST_P(LlamaCppVocab, EncodesEveryVectorLikeLlamaCpp) {
  const VocabCase& c = GetParam();
  const fs::path gguf = llama_vocab_dir() / (std::string("ggml-vocab-") + c.name + ".gguf");
  // A failure, not a skip: CI must run these (scripts/test.sh runs install-deps.sh first).
  ASSERT_TRUE(fs::exists(gguf)) << gguf
                                << " is missing: run scripts/install-deps.sh (it fetches "
                                   "llama.cpp's vocab files) or set WICK_LLAMA_VOCAB_DIR";
  const GgufFile f = GgufFile::open(gguf.string());
  if (c.refusal) {
    expect_error([&] { load_gguf_tokenizer(f); }, ErrorKind::Unsupported, {c.refusal});
    return;
  }
  const Tokenizer tok = load_gguf_tokenizer(f);
  if (!c.has_vectors) {
    EXPECT_EQ(tok.decode(tok.encode("Hello world")), "Hello world");
    return;
  }
  const std::vector<Vector> vectors = read_vectors(gguf);
  ASSERT_FALSE(vectors.empty());
  size_t matched = 0;
  for (const Vector& v : vectors) {
    const std::vector<int32_t> ids = tok.encode(v.text);
    EXPECT_EQ(ids, v.ids) << c.name << ": '" << v.text << "'";
    matched += ids == v.ids;
    // Decoding gives the text back (every input is valid UTF-8), at once and streamed.
    EXPECT_EQ(tok.decode(ids), v.text) << c.name;
    TokenStreamer streamer(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += streamer.push(id);
    streamed += streamer.finish();
    EXPECT_EQ(streamed, v.text) << c.name;
  }
  RecordProperty("vectors_matched", std::to_string(matched) + "/" + std::to_string(vectors.size()));
  std::cout << "[ vectors  ] " << c.name << ": " << matched << "/" << vectors.size() << " match\n";
}

// ---- the same vocabularies as HF tokenizer.json files -----------------------------------------
// Written here from the GGUF data the way HF's converters lay them out; the vectors were made by HF
// tokenizers from the original tokenizer.json files, so they check the tokenizer.json reading.

using nlohmann::json;

struct GgufVocab {
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
  std::vector<float> scores;
};

GgufVocab read_gguf_vocab(const fs::path& gguf) {
  const GgufFile f = GgufFile::open(gguf.string());
  GgufVocab v;
  v.tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  v.types = f.get_array<int32_t>("tokenizer.ggml.token_type");
  if (f.find("tokenizer.ggml.merges")) v.merges = f.get_array<std::string>("tokenizer.ggml.merges");
  if (f.find("tokenizer.ggml.scores")) v.scores = f.get_array<float>("tokenizer.ggml.scores");
  return v;
}

json hf_vocab_and_added(const GgufVocab& v, json& added) {
  json vocab = json::object();
  added = json::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    vocab[v.tokens[i]] = i;
    const auto type = TokenType(v.types[i]);
    if (type == TokenType::Control || type == TokenType::Unknown)
      added.push_back({{"id", i}, {"content", v.tokens[i]}, {"special", true}});
  }
  return vocab;
}

void expect_vectors_match(const Tokenizer& tok, const fs::path& gguf, const char* what) {
  const std::vector<Vector> vectors = read_vectors(gguf);
  ASSERT_FALSE(vectors.empty());
  size_t matched = 0;
  for (const Vector& v : vectors) {
    const std::vector<int32_t> ids = tok.encode(v.text);
    EXPECT_EQ(ids, v.ids) << what << ": '" << v.text << "'";
    matched += ids == v.ids;
  }
  std::cout << "[ vectors  ] " << what << ": " << matched << "/" << vectors.size() << " match\n";
}

TEST(LlamaCppVocabJson, Llama3ByteLevelWithSplitRegexAndIgnoreMerges) {
  const fs::path gguf = llama_vocab_dir() / "ggml-vocab-llama-bpe.gguf";
  ASSERT_TRUE(fs::exists(gguf)) << gguf << " is missing: run scripts/install-deps.sh";
  const GgufVocab v = read_gguf_vocab(gguf);
  json j, added;
  j["model"] = {{"type", "BPE"},
                {"ignore_merges", true},
                {"vocab", hf_vocab_and_added(v, added)},
                {"merges", v.merges}};
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  // Meta's tokenizer.json, with its (?i:...) group that llama.cpp rewrote.
  const std::string regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", regex}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                          {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", false}}}}};
  j["decoder"] = {{"type", "ByteLevel"}};
  expect_vectors_match(Tokenizer::from_hf_json(j.dump()), gguf, "llama-bpe as tokenizer.json");
}

TEST(LlamaCppVocabJson, LlamaSpmAsSentencePieceStyleBpe) {
  const fs::path gguf = llama_vocab_dir() / "ggml-vocab-llama-spm.gguf";
  ASSERT_TRUE(fs::exists(gguf)) << gguf << " is missing: run scripts/install-deps.sh";
  const GgufVocab v = read_gguf_vocab(gguf);
  // HF's SentencePieceExtractor: every split of a piece into two pieces is a merge; a piece's
  // merges ordered by the pieces' ids, all ordered by the merged piece's score, highest first.
  std::unordered_map<std::string, int32_t> id_of;
  for (size_t i = 0; i < v.tokens.size(); ++i) id_of.emplace(v.tokens[i], int32_t(i));
  struct Merge {
    float score;
    int32_t left, right;
  };
  std::vector<Merge> merges;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (TokenType(v.types[i]) != TokenType::Normal) continue;
    const std::string& piece = v.tokens[i];
    std::vector<Merge> local;
    size_t subpart;
    for (size_t cut = td::utf8_sequence_length(piece, 0, &subpart); cut < piece.size();
         cut += td::utf8_sequence_length(piece, cut, &subpart)) {
      const auto l = id_of.find(piece.substr(0, cut)), r = id_of.find(piece.substr(cut));
      if (l != id_of.end() && r != id_of.end())
        local.push_back({v.scores[i], l->second, r->second});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  json merge_strings = json::array();
  for (const Merge& m : merges) merge_strings.push_back(v.tokens[m.left] + " " + v.tokens[m.right]);
  json j, added;
  j["model"] = {{"type", "BPE"},
                {"byte_fallback", true},
                {"fuse_unk", true},
                {"unk_token", "<unk>"},
                {"vocab", hf_vocab_and_added(v, added)},
                {"merges", merge_strings}};
  j["added_tokens"] = added;
  j["pre_tokenizer"] = nullptr;
  j["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Prepend"}, {"prepend", "\u2581"}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
  const Tokenizer tok = Tokenizer::from_hf_json(j.dump());
  expect_vectors_match(tok, gguf, "llama-spm as tokenizer.json");
  EXPECT_EQ(tok.decode(tok.encode(" Hello, world!")), " Hello, world!");
}

INSTANTIATE_TEST_SUITE_P(Vocab, LlamaCppVocab, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<VocabCase>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(uint8_t(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace wick::testing
