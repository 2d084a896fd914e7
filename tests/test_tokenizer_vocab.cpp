// Conformance with llama.cpp's tokenizer tests: its vocab-only GGUF files
// (models/ggml-vocab-*.gguf) and, for most, test vectors (*.gguf.inp: texts split by
// "\n__ggml_vocab_test__\n"; *.gguf.out: one line of ids per text, made by HF tokenizers). Every
// vector of every vocabulary wick supports must match; the others must be refused with
// Error(Unsupported). The files are not in the repo: scripts/install-deps.sh puts them in
// .cache/llama-vocab/ (WICK_LLAMA_VOCAB_DIR overrides), and their absence fails the test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"
#include "tokenizer/unicode.h"
#include "wick/gguf.h"
#include "wick/llama.h"
#include "wick/tokenizer.h"

namespace wick::testing {
namespace {

namespace fs = std::filesystem;

fs::path vocab_dir() {
  if (const char* env = std::getenv("WICK_LLAMA_VOCAB_DIR"); env && *env) return env;
  return fs::path(__FILE__).parent_path().parent_path() / ".cache" / "llama-vocab";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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
  const fs::path gguf = vocab_dir() / (std::string("ggml-vocab-") + c.name + ".gguf");
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

INSTANTIATE_TEST_SUITE_P(Vocab, LlamaCppVocab, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<VocabCase>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(uint8_t(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace wick::testing
