// SentencePiece tokenizers: (1) a small random vocabulary against a naive reference of
// SentencePiece's BPE (llama.cpp's llm_tokenizer_spm), (2) byte fallback, the unknown token, the
// '▁' space prefix and streaming decode of characters split over byte tokens, (3) the
// SentencePiece-style BPE of HF tokenizer.json files, (4) the regex pre-tokenizers' edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "harness.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"
#include "wick/tokenizer.h"

namespace wick::testing {
namespace {

using nlohmann::json;
namespace td = tokenizer_detail;

const std::string kSp = "\xE2\x96\x81";  // '▁'

std::string utf8(char32_t cp) {
  std::string s;
  td::utf8_append(s, cp);
  return s;
}

// A SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then pieces with scores.
struct SpmVocab {
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  std::vector<float> scores{0, 0, 0};
  std::vector<int32_t> types{2, 3, 3};
  explicit SpmVocab(bool with_bytes = true) {
    if (!with_bytes) return;
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      add(name, 0, TokenType::Byte);
    }
  }
  int32_t add(const std::string& piece, float score, TokenType type = TokenType::Normal) {
    tokens.push_back(piece);
    scores.push_back(score);
    types.push_back(int32_t(type));
    return int32_t(tokens.size() - 1);
  }
  int32_t id(const std::string& piece) const {
    const auto it = std::find(tokens.begin(), tokens.end(), piece);
    return it == tokens.end() ? -1 : int32_t(it - tokens.begin());
  }
  Tokenizer build(bool add_space_prefix = true) const {
    SpecialTokens special;
    special.unk = 0;
    special.bos = 1;
    special.eos = 2;
    return Tokenizer::from_spm_vocab(tokens, scores, types, special, add_space_prefix);
  }
};

// The definition, quadratic: merge the adjacent pair that spells a normal token of the highest
// score (leftmost on ties) until none does; then unknown characters become byte tokens.
std::vector<int32_t> naive_spm(const std::string& text, const SpmVocab& v) {
  std::vector<std::string> symbols;
  size_t subpart;
  for (size_t i = 0; i < text.size();) {
    const size_t len = td::utf8_sequence_length(text, i, &subpart);
    symbols.push_back(text.substr(i, len));
    i += len;
  }
  const auto normal_id = [&](const std::string& s) {
    const int32_t id = v.id(s);
    return id >= 0 && v.types[id] == int32_t(TokenType::Normal) ? id : -1;
  };
  for (;;) {
    float best = -std::numeric_limits<float>::infinity();
    size_t at = SIZE_MAX;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const int32_t id = normal_id(symbols[i] + symbols[i + 1]);
      if (id >= 0 && (at == SIZE_MAX || v.scores[id] > best)) best = v.scores[id], at = i;
    }
    if (at == SIZE_MAX) break;
    symbols[at] += symbols[at + 1];
    symbols.erase(symbols.begin() + long(at) + 1);
  }
  std::vector<int32_t> ids;
  for (const std::string& s : symbols) {
    if (const int32_t id = normal_id(s); id >= 0) {
      ids.push_back(id);
      continue;
    }
    for (unsigned char b : s) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      ids.push_back(v.id(name));
    }
  }
  return ids;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == ' ' ? kSp : std::string(1, c);
  return out;
}

TEST(TokenizerSpm, MergesByScoreLikeTheNaiveDefinition) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const std::vector<std::string> alphabet{"a", "b", "c", kSp, utf8(0xE9)};
  for (int trial = 0; trial < 20; ++trial) {
    SpmVocab v;
    std::vector<std::string> pieces;
    for (const auto& c : alphabet) {
      v.add(c, float(rng.integer(-40, 0)));
      pieces.push_back(c);
    }
    // Random pieces made of earlier ones, with few distinct scores so that ties happen.
    for (int k = 0; k < 25; ++k) {
      const std::string p = pieces[size_t(rng.integer(0, int64_t(pieces.size()) - 1))] +
                            pieces[size_t(rng.integer(0, int64_t(pieces.size()) - 1))];
      if (v.id(p) >= 0) continue;
      // Half the trials keep '▁' at the start of pieces (then words are merged apart, as in real
      // vocabularies); the others allow "a▁" too (then the whole text is merged at once).
      if (trial % 2 == 0 && p.find(kSp, 1) != std::string::npos &&
          p.find_first_not_of(kSp) < p.rfind(kSp))
        continue;
      v.add(p, float(rng.integer(-8, 0)));
      pieces.push_back(p);
    }
    const Tokenizer tok = v.build(false);
    for (int s = 0; s < 30; ++s) {
      std::string text;
      const int len = int(rng.integer(1, 30));
      for (int i = 0; i < len; ++i) {
        const int64_t k = rng.integer(0, 5);  // 5: 'z', outside the vocabulary
        text += k == 3 ? std::string(" ") : k == 5 ? std::string("z") : alphabet[size_t(k)];
      }
      ASSERT_EQ(tok.encode(text), naive_spm(escape(text), v)) << text;
      ASSERT_EQ(tok.decode(tok.encode(text)), text);
    }
  }
}

TEST(TokenizerSpm, SpacePrefixByteFallbackAndDecode) {
  SpmVocab v;
  const int32_t hello = v.add(kSp + "Hello", -1);
  const int32_t world = v.add(kSp + "world", -1);
  for (const char* p : {"H", "e", "l", "o", "w", "r", "d"}) v.add(p, -10);
  v.add(kSp, -5);
  for (const std::string& p :
       std::vector<std::string>{kSp + "H", kSp + "He", kSp + "Hel", kSp + "Hell", kSp + "w",
                                kSp + "wo", kSp + "wor", kSp + "worl"})
    v.add(p, -2);
  const Tokenizer tok = v.build();
  EXPECT_EQ(tok.encode("Hello world"), (std::vector<int32_t>{hello, world}));
  EXPECT_EQ(tok.decode(tok.encode("Hello world")), "Hello world");
  // Without the prefix "Hello" starts with no '▁' and falls apart into letters.
  EXPECT_EQ(v.build(false).encode("Hello world").size(), 6u);
  // BOS first: skipped, the leading space still goes; rendered, it stays (as HF does).
  const std::vector<int32_t> with_bos{1, hello};
  EXPECT_EQ(tok.decode(with_bos, true), "Hello");
  EXPECT_EQ(tok.decode(with_bos, false), "<s> Hello");
  // 'é' and '🦙' are not in the vocabulary: their UTF-8 bytes, each a <0xNN> token.
  const std::vector<int32_t> ids = tok.encode("Hello \xF0\x9F\xA6\x99\xC3\xA9");
  const int32_t b0 = 3;  // <0x00>
  EXPECT_EQ(ids, (std::vector<int32_t>{hello, v.id(kSp), b0 + 0xF0, b0 + 0x9F, b0 + 0xA6, b0 + 0x99,
                                       b0 + 0xC3, b0 + 0xA9}));
  EXPECT_EQ(tok.decode(ids), "Hello \xF0\x9F\xA6\x99\xC3\xA9");
  // Streaming: a character split over byte tokens comes out with its last byte.
  TokenStreamer streamer(tok);
  std::vector<std::string> parts;
  for (int32_t id : ids) parts.push_back(streamer.push(id));
  EXPECT_EQ(parts, (std::vector<std::string>{"Hello", " ", "", "", "", "\xF0\x9F\xA6\x99", "",
                                             "\xC3\xA9"}));
  EXPECT_EQ(streamer.finish(), "");
  // After finish() the next text starts afresh: its leading space is dropped again.
  EXPECT_EQ(streamer.push(world), "world");
  // A user-defined token is matched whole, and the text after it gets a '▁' prefix too.
  SpmVocab u = v;
  const int32_t tag = u.add("<tag>", 0, TokenType::UserDefined);
  EXPECT_EQ(u.build().encode("Hello<tag>world"), (std::vector<int32_t>{hello, tag, world}));
}

TEST(TokenizerSpm, UnknownWithoutByteTokens) {
  SpmVocab v(/*with_bytes=*/false);
  const int32_t a = v.add(kSp + "a", -1);
  v.add("a", -2);
  const Tokenizer tok = v.build();
  // One <unk> per character outside the vocabulary.
  EXPECT_EQ(tok.encode("a\xC3\xA9z"), (std::vector<int32_t>{a, 0, 0}));
  EXPECT_EQ(tok.decode(tok.encode("a\xC3\xA9")), "a<unk>");
}

TEST(TokenizerSpm, ErrorsOnMalformedVocab) {
  SpmVocab v;
  v.scores.pop_back();
  expect_error([&] { v.build(); }, ErrorKind::Parse, {"Tokenizer::from_spm_vocab", "scores"});
  SpmVocab w;
  w.types[5] = int32_t(TokenType::Byte);
  w.tokens[5] = "<0xZZ>";
  expect_error([&] { w.build(); }, ErrorKind::Parse, {"byte token 5", "<0xZZ>"});
}

// ---- SentencePiece-style BPE in tokenizer.json (Llama 2, TinyLlama, Mistral) --------------------

json llama2_style_json(const json& pre_tokenizer, const json& normalizer) {
  json vocab = json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  vocab["</s>"] = 2;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  int next = 259;
  for (const std::string& t : std::vector<std::string>{kSp, "a", "b", kSp + "a", "ab", kSp + "ab"})
    vocab[t] = next++;
  json j;
  j["normalizer"] = normalizer;
  j["pre_tokenizer"] = pre_tokenizer;
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", kSp}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  j["added_tokens"] = {{{"id", 1}, {"content", "<s>"}, {"special", true}}};
  j["model"] = {{"type", "BPE"},    {"byte_fallback", true},
                {"fuse_unk", true}, {"unk_token", "<unk>"},
                {"vocab", vocab},   {"merges", {kSp + " a", "a b", kSp + "a b"}}};
  return j;
}

TEST(TokenizerSpmJson, PrependReplaceNormalizerAndMetaspace) {
  const json normalizer = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Prepend"}, {"prepend", kSp}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSp}}}}};
  const Tokenizer a = Tokenizer::from_hf_json(llama2_style_json(nullptr, normalizer).dump());
  const json metaspace = {
      {"type", "Metaspace"}, {"replacement", kSp}, {"prepend_scheme", "first"}, {"split", false}};
  const Tokenizer b = Tokenizer::from_hf_json(llama2_style_json(metaspace, nullptr).dump());
  // "ab ab c": ▁ab ▁ab ▁ <0x63>; 'c' is outside the vocabulary.
  const std::vector<int32_t> expect{264, 264, 259, 3 + 'c'};
  EXPECT_EQ(a.encode("ab ab c"), expect);
  EXPECT_EQ(b.encode("ab ab c"), expect);
  EXPECT_EQ(a.decode(expect), "ab ab c");
  EXPECT_EQ(a.special_tokens().unk, 0);
  EXPECT_EQ(a.token_type(3 + 'c'), TokenType::Byte);
  // After a special token: Prepend adds '▁' to every segment, Metaspace "first" only to the first.
  EXPECT_EQ(a.encode("ab<s>ab", true), (std::vector<int32_t>{264, 1, 264}));
  EXPECT_EQ(b.encode("ab<s>ab", true), (std::vector<int32_t>{264, 1, 263}));
}

// ---- the regex pre-tokenizers ---------------------------------------------------------------

std::vector<std::string> split(std::string_view pre_name, std::string_view text) {
  const auto pre = td::llama_cpp_pre_tokenizer(pre_name);
  EXPECT_TRUE(pre.has_value()) << pre_name;
  std::vector<std::pair<size_t, size_t>> p, scratch;
  td::make_regex_pre_tokenizer(pre->regexes).split(text, p, scratch);
  std::vector<std::string> out;
  for (auto [b, e] : p) out.emplace_back(text.substr(b, e - b));
  return out;
}

TEST(TokenizerRegex, PiecesCoverTheTextInOrder) {
  // Whatever the regexes, the pieces are the text cut at some places: nothing lost or repeated.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  static const char32_t kPool[] = {'a',     'Z',    ' ',  ' ',    '\n',  '\r',  '\t',
                                   '7',     '\'',   '!',  '$',    0xE9,  0x3B1, 0x4E2D,
                                   0x1F600, 0x200D, 0xA0, 0x3000, 0x0663};
  const std::string names = td::llama_cpp_pre_tokenizer_names();
  for (size_t start = 0; start < names.size();) {
    const size_t comma = std::min(names.find(", ", start), names.size());
    const std::string name = names.substr(start, comma - start);
    start = comma + 2;
    for (int i = 0; i < 20; ++i) {
      std::string text;
      for (int64_t k = rng.integer(0, 40); k > 0; --k)
        text += utf8(kPool[rng.integer(0, std::size(kPool) - 1)]);
      std::string joined;
      for (const std::string& p : split(name, text)) {
        ASSERT_FALSE(p.empty()) << name;
        joined += p;
      }
      ASSERT_EQ(joined, text) << name;
    }
  }
}

TEST(TokenizerRegex, LlamaCppSplits) {
  using V = std::vector<std::string>;
  // GPT-2: a lone space joins the next word; a run of spaces keeps its last for the word.
  EXPECT_EQ(split("gpt-2", "a   b's"), (V{"a", "  ", " b", "'s"}));
  // llama3: case-insensitive contractions, 1-3 digits, newlines apart.
  EXPECT_EQ(split("llama-bpe", "I'LL 12345\n\nx"), (V{"I", "'LL", " ", "123", "45", "\n\n", "x"}));
  // qwen2: single digits.
  EXPECT_EQ(split("qwen2", "x 123"), (V{"x", " ", "1", "2", "3"}));
  // falcon: punctuation runs first, then the GPT-2 regex, then three-digit groups.
  EXPECT_EQ(split("falcon", "a+=b 12345"), (V{"a", "+=", "b", " ", "123", "45"}));
  // deepseek-coder: newlines alone, letters with one space before them, digits alone.
  EXPECT_EQ(split("deepseek-coder", "ab\n 12"), (V{"ab", "\n", " ", "1", "2"}));
  // A run of spaces long enough to need a big JIT stack for (?!\S) backtracking.
  const std::string spaces(100000, ' ');
  EXPECT_EQ(split("gpt-2", spaces + "x"), (V{spaces.substr(1), " x"}));
}

}  // namespace
}  // namespace wick::testing
