// Tokenizer tests: (1) a small hand-built vocabulary against a naive reference BPE and the UTF-8
// rules, (2) the real SmolLM2 tokenizer against encodings made by HF tokenizers
// (tests/data/tokenizer/smollm2, scripts/gen_tokenizer_reference.py), (3) streaming decode.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "harness.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"
#include "wick/tokenizer.h"

namespace wick::testing {
namespace {

using nlohmann::json;
namespace td = tokenizer_detail;

std::filesystem::path data_dir() {
  return std::filesystem::path(WICK_TESTS_DIR) / "data" / "tokenizer" / "smollm2";
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += char(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::string utf8(char32_t cp) {
  std::string s;
  td::utf8_append(s, cp);
  return s;
}

// ---------------------------------------------------------------------------------------------
// (1) A tiny vocabulary: the 256 byte symbols as ids 0..255 (id == byte), merged tokens after them.

struct TinyVocab {
  std::vector<std::string> tokens;  // byte-level form
  std::vector<std::string> merges;  // "a b", by rank
  std::vector<int32_t> types;

  TinyVocab() {
    for (int b = 0; b < 256; ++b) tokens.push_back(td::byte_level_encode(std::string(1, char(b))));
  }
  // Adds the token left+right (given as raw bytes) and its merge; returns its id.
  int32_t add_merge(const std::string& left, const std::string& right) {
    const std::string l = td::byte_level_encode(left), r = td::byte_level_encode(right);
    merges.push_back(l + " " + r);
    if (std::find(tokens.begin(), tokens.end(), l + r) == tokens.end()) tokens.push_back(l + r);
    return int32_t(std::find(tokens.begin(), tokens.end(), l + r) - tokens.begin());
  }
  int32_t add_token(const std::string& text, TokenType type) {
    tokens.push_back(text);
    types.resize(tokens.size(), int32_t(TokenType::Normal));
    types.back() = int32_t(type);
    return int32_t(tokens.size() - 1);
  }
  Tokenizer build(std::string_view pre = "gpt2") const {
    std::vector<int32_t> t = types;
    if (!t.empty()) t.resize(tokens.size(), int32_t(TokenType::Normal));
    return Tokenizer::from_vocab(tokens, merges, t, SpecialTokens{}, pre);
  }
};

// The textbook definition: merge the lowest-ranked adjacent pair (leftmost on ties) until none is
// left; quadratic, obviously right.
std::vector<std::string> naive_bpe(const std::string& word,
                                   const std::vector<std::string>& merges) {
  std::vector<std::string> symbols;
  for (unsigned char b : word) symbols.push_back(td::byte_level_encode(std::string(1, char(b))));
  while (symbols.size() > 1) {
    size_t best_rank = std::numeric_limits<size_t>::max(), best_pos = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = std::find(merges.begin(), merges.end(), symbols[i] + " " + symbols[i + 1]);
      const size_t rank = size_t(it - merges.begin());
      if (it != merges.end() && rank < best_rank) best_rank = rank, best_pos = i;
    }
    if (best_rank == std::numeric_limits<size_t>::max()) break;
    symbols[best_pos] += symbols[best_pos + 1];
    symbols.erase(symbols.begin() + long(best_pos) + 1);
  }
  return symbols;
}

std::vector<int32_t> ids_of(const std::vector<std::string>& symbols, const TinyVocab& v) {
  std::vector<int32_t> ids;
  for (const auto& s : symbols)
    ids.push_back(int32_t(std::find(v.tokens.begin(), v.tokens.end(), s) - v.tokens.begin()));
  return ids;
}

TEST(TokenizerUnit, ByteAlphabetIsGpt2s) {
  // The table in reference.json comes from the script's own copy of GPT-2's definition.
  const json ref = json::parse(read_file(data_dir() / "reference.json"));
  const auto& table = ref.at("byte_to_unicode");
  ASSERT_EQ(table.size(), 256u);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(td::byte_to_codepoint(uint8_t(b)), table[b].get<char32_t>()) << b;
    EXPECT_EQ(td::codepoint_to_byte(table[b].get<char32_t>()), b);
  }
  EXPECT_EQ(td::codepoint_to_byte(U'a' + 0x10000), -1);
}

TEST(TokenizerUnit, EveryByteFallsBackToItsSymbol) {
  const TinyVocab v;
  const Tokenizer tok = v.build();
  EXPECT_EQ(tok.vocab_size(), 256);
  // Code points whose UTF-8 forms use every byte that valid UTF-8 can hold.
  std::string text;
  for (char32_t cp = 1; cp < 0x800; ++cp) text += utf8(cp);
  for (char32_t cp = 0x800; cp < 0x110000; cp += 0x40)
    if (cp < 0xD800 || cp >= 0xE000) text += utf8(cp);
  std::set<int32_t> seen;
  const std::vector<int32_t> ids = tok.encode(text);
  ASSERT_EQ(ids.size(), text.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(ids[i], int32_t(uint8_t(text[i]))) << i;
    seen.insert(ids[i]);
  }
  EXPECT_EQ(seen.size(), 256u - 1 - 2 - 11);  // all but 0x00 (not in text), C0, C1, F5..FF
  EXPECT_EQ(tok.decode(ids), text);
  // The bytes that never occur in UTF-8 still decode: raw, or as U+FFFD in text.
  for (int b : {0xC0, 0xC1, 0xF5, 0xFF}) {
    const std::vector<int32_t> one{b};
    EXPECT_EQ(tok.decode_bytes(one), std::string(1, char(b)));
    EXPECT_EQ(tok.decode(one), "\xEF\xBF\xBD");
  }
  EXPECT_EQ(tok.encode(std::string(1, '\0')), std::vector<int32_t>{0});
}

TEST(TokenizerUnit, MergesFollowRankLikeTheNaiveDefinition) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (int trial = 0; trial < 20; ++trial) {
    TinyVocab v;
    std::vector<std::string> words{"a", "b", "c", "d"};  // raw-byte forms of the tokens so far
    const int n_merges = int(rng.integer(1, 30));
    for (int k = 0; k < n_merges; ++k) {
      const std::string l = words[size_t(rng.integer(0, int64_t(words.size()) - 1))];
      const std::string r = words[size_t(rng.integer(0, int64_t(words.size()) - 1))];
      v.add_merge(l, r);  // a repeated pair keeps its first rank, as in HF
      if (std::find(words.begin(), words.end(), l + r) == words.end()) words.push_back(l + r);
    }
    const Tokenizer tok = v.build();
    for (int s = 0; s < 20; ++s) {
      std::string word;
      const int len = int(rng.integer(1, 40));
      for (int i = 0; i < len; ++i) word += char('a' + rng.integer(0, 3));
      ASSERT_EQ(tok.encode(word), ids_of(naive_bpe(word, v.merges), v)) << word;
    }
  }
}

TEST(TokenizerUnit, LongWordMatchesNaiveDefinition) {
  TinyVocab v;
  v.add_merge("a", "b");
  v.add_merge("ab", "ab");
  v.add_merge("b", "a");
  v.add_merge("a", "a");
  v.add_merge("abab", "abab");
  v.add_merge("aa", "ba");
  Rng rng;
  SCOPED_TRACE(rng.seed());
  std::string word;
  for (int i = 0; i < 1500; ++i) word += rng.integer(0, 2) ? 'a' : 'b';
  EXPECT_EQ(v.build().encode(word), ids_of(naive_bpe(word, v.merges), v));
}

TEST(TokenizerUnit, SpecialTokensAreNeverSplit) {
  TinyVocab v;
  v.add_merge("h", "i");
  const int32_t start = v.add_token("<|s|>", TokenType::Control);
  const int32_t start_long = v.add_token("<|s|>x", TokenType::Control);
  const int32_t user = v.add_token("<ud>", TokenType::UserDefined);
  const Tokenizer tok = v.build();
  const auto cat = [](std::vector<std::vector<int32_t>> parts) {
    std::vector<int32_t> out;
    for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  // Leftmost-longest: "<|s|>x" wins over "<|s|>" at the same place.
  EXPECT_EQ(
      tok.encode("hi<|s|>hi<|s|>x<ud>hi", true),
      cat({tok.encode("hi"), {start}, tok.encode("hi"), {start_long, user}, tok.encode("hi")}));
  // Without allow_special, control tokens are text; user-defined ones are still whole tokens.
  const std::vector<int32_t> as_text = tok.encode("hi<|s|>hi<ud>", false);
  EXPECT_EQ(std::count(as_text.begin(), as_text.end(), start), 0);
  EXPECT_EQ(as_text.back(), user);
  EXPECT_EQ(tok.decode(as_text), "hi<|s|>hi<ud>");
  const std::vector<int32_t> with = tok.encode("a<|s|>", true);
  EXPECT_EQ(tok.decode(with), "a<|s|>");
  EXPECT_EQ(tok.decode(with, /*skip_special=*/true), "a");
  EXPECT_TRUE(tok.is_control(start));
  EXPECT_EQ(tok.token_type(user), TokenType::UserDefined);
  EXPECT_EQ(tok.token_id("<|s|>"), start);
  EXPECT_EQ(tok.token_id("hi"), tok.encode("hi")[0]);
  EXPECT_EQ(tok.token_id("nope"), -1);
}

TEST(TokenizerUnit, EmptyInput) {
  const Tokenizer tok = TinyVocab().build();
  EXPECT_TRUE(tok.encode("").empty());
  EXPECT_TRUE(tok.encode("", true).empty());
  EXPECT_EQ(tok.decode(std::vector<int32_t>{}), "");
  TokenStreamer streamer(tok);
  EXPECT_EQ(streamer.finish(), "");
}

std::string random_utf8(Rng& rng, int max_len, bool allow_invalid) {
  static const char32_t kPool[] = {'a',    'Z',  ' ',    ' ',    '\n',     '\t',    '7',
                                   '\'',   '!',  0xE9,   0x3B1,  0x4E2D,   0x1F600, 0x1F3FD,
                                   0x200D, 0xA0, 0x3000, 0xFFFD, 0x10FFFF, 0xBD};
  static const char* kBad[] = {"\x80",         "\xC0",         "\xC3", "\xE4\xBD", "\xF0\x9F",
                               "\xF0\x9F\x98", "\xED\xA0\x80", "\xF5", "\xFF",     "\xE0\x80"};
  std::string s;
  const int len = int(rng.integer(0, max_len));
  for (int i = 0; i < len; ++i) {
    if (allow_invalid && rng.integer(0, 5) == 0)
      s += kBad[rng.integer(0, std::size(kBad) - 1)];
    else
      s += utf8(kPool[rng.integer(0, std::size(kPool) - 1)]);
  }
  return s;
}

TEST(TokenizerUnit, RandomTextRoundTrips) {
  TinyVocab v;
  v.add_merge(" ", "a");
  v.add_merge("\xE4", "\xB8");
  v.add_merge("\xE4\xB8", "\xAD");
  v.add_merge("\xF0", "\x9F");
  v.add_merge("\xF0\x9F", "\x98");
  const Tokenizer tok = v.build("smollm");
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (int i = 0; i < 300; ++i) {
    const std::string valid = random_utf8(rng, 30, false);
    ASSERT_EQ(tok.decode(tok.encode(valid)), valid);
    // Invalid input is tokenized as its lossy decoding (one U+FFFD per maximal ill-formed subpart).
    const std::string any = random_utf8(rng, 30, true);
    const std::string lossy = td::utf8_make_valid(any);
    ASSERT_TRUE(td::utf8_is_valid(lossy));
    ASSERT_EQ(tok.encode(any), tok.encode(lossy));
    ASSERT_EQ(tok.decode(tok.encode(any)), lossy);
  }
}

TEST(TokenizerUnit, PreTokenizerNames) {
  // "a 12": the smollm family isolates digits; plain GPT-2 keeps " 12" as one piece; llama3 takes
  // up to three digits and never a space before them.
  const auto pieces = [](std::string_view name, std::string_view text) {
    const auto pre = td::llama_cpp_pre_tokenizer(name);
    EXPECT_TRUE(pre.has_value()) << name;
    std::vector<std::pair<size_t, size_t>> p, scratch;
    td::make_regex_pre_tokenizer(pre->regexes).split(text, p, scratch);
    std::vector<std::string> out;
    for (auto [b, e] : p) out.emplace_back(text.substr(b, e - b));
    return out;
  };
  EXPECT_EQ(pieces("gpt2", "a 12"), (std::vector<std::string>{"a", " 12"}));
  EXPECT_EQ(pieces("smollm", "a 12"), (std::vector<std::string>{"a", " ", "1", "2"}));
  EXPECT_EQ(pieces("llama-bpe", "a 12345"), (std::vector<std::string>{"a", " ", "123", "45"}));
  EXPECT_FALSE(td::llama_cpp_pre_tokenizer("no-such-pre").has_value());
  try {
    TinyVocab().build("no-such-pre");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("no-such-pre"), std::string::npos) << e.what();
  }
}

TEST(TokenizerUnit, ChatTemplateFromJinja) {
  const ChatTemplate plain = ChatTemplate::from_jinja(
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
      "'<|im_start|>assistant\\n' "
      "}}{% endif %}");
  const std::vector<ChatMessage> msgs{{"user", "hi"}};
  EXPECT_EQ(plain.apply(msgs, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(plain.apply({}, false), "");
  EXPECT_EQ(ChatTemplate::chatml().apply(msgs, true), plain.apply(msgs, true));
  // bos_token and eos_token are the texts given; raise_exception refuses a conversation.
  const ChatTemplate inst = ChatTemplate::from_jinja(
      "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}"
      "{{ raise_exception('no system turns, got: ' + m['content']) }}{% endif %}"
      "[INST] {{ m['content'] | trim }} [/INST]{% endfor %}{{ eos_token }}",
      "<s>", "</s>");
  EXPECT_EQ(inst.apply(std::vector<ChatMessage>{{"user", " hi "}}, false),
            "<s>[INST] hi [/INST]</s>");
  expect_error(
      [&] {
        inst.apply(std::vector<ChatMessage>{{"system", "be brief"}}, false);
      },
      ErrorKind::Unsupported, {"ChatTemplate::apply", "no system turns, got: be brief"});
}

TEST(TokenizerUnit, ErrorsOnMalformedVocab) {
  TinyVocab v;
  v.add_merge("a", "b");
  const auto build = [](std::vector<std::string> tokens, std::vector<std::string> merges,
                        std::vector<int32_t> types = {}, SpecialTokens sp = {},
                        std::string_view pre = "gpt2") {
    return [=] { Tokenizer::from_vocab(tokens, merges, types, sp, pre); };
  };
  const char* op = "Tokenizer::from_vocab";
  expect_error(build({}, {}), ErrorKind::Parse, {op, "empty vocabulary"});
  expect_error(build(v.tokens, {"ab"}), ErrorKind::Parse, {op, "merge 0", "'ab'"});
  expect_error(build(v.tokens, {"a b c"}), ErrorKind::Parse, {op, "merge 0"});
  expect_error(build(v.tokens, {"a zz"}), ErrorKind::Parse, {op, "'zz'", "not in the vocabulary"});
  expect_error(build(v.tokens, {"b a"}), ErrorKind::Parse, {op, "'ba'", "not in the vocabulary"});
  std::vector<std::string> dup = v.tokens;
  dup.push_back("ab");
  expect_error(build(dup, v.merges), ErrorKind::Parse, {op, "duplicates token"});
  expect_error(build(v.tokens, v.merges, {1, 1}), ErrorKind::Parse, {op, "2 token types for 257"});
  expect_error(build(v.tokens, v.merges, std::vector<int32_t>(257, 9)), ErrorKind::Parse,
               {op, "unknown type 9"});
  expect_error(build(v.tokens, v.merges, {}, SpecialTokens{.bos = 0, .eos = 257}), ErrorKind::Parse,
               {op, "eos token id 257", "257"});
  expect_error(build(v.tokens, v.merges, {}, {}, "klingon"), ErrorKind::Unsupported,
               {op, "'klingon'"});
}

TEST(TokenizerUnit, ErrorsOnBadIds) {
  const Tokenizer tok = TinyVocab().build();
  const std::vector<int32_t> bad{1, 256};
  expect_error([&] { tok.decode(bad); }, ErrorKind::OutOfRange, {"Tokenizer::decode", "256"});
  expect_error([&] { tok.decode(std::vector<int32_t>{-1}); }, ErrorKind::OutOfRange, {"-1"});
  expect_error([&] { tok.token(300); }, ErrorKind::OutOfRange, {"Tokenizer::token", "300"});
  expect_error([&] { tok.token_type(-2); }, ErrorKind::OutOfRange, {"Tokenizer::token_type", "-2"});
  TokenStreamer streamer(tok);
  expect_error([&] { streamer.push(999); }, ErrorKind::OutOfRange, {"TokenStreamer::push", "999"});
}

TEST(TokenizerUnit, ErrorsOnBadJson) {
  const char* op = "Tokenizer::from_hf_json";
  const auto load = [](std::string text) { return [=] { Tokenizer::from_hf_json(text); }; };
  const std::string pre = R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false})";
  const std::string model =
      R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  EXPECT_EQ(Tokenizer::from_hf_json("{" + pre + "," + model + "}").encode("ab"),
            std::vector<int32_t>{2});
  expect_error(load("{not json"), ErrorKind::Parse, {op, "not valid JSON"});
  expect_error(load("[1, 2]"), ErrorKind::Parse, {op, "not a JSON object"});
  expect_error(load("{" + pre + "}"), ErrorKind::Parse, {op, "no 'model'"});
  expect_error(load("{" + model + "}"), ErrorKind::Parse, {op, "no 'pre_tokenizer'"});
  expect_error(load(R"({"normalizer": {"type": "NFC"}, )" + pre + "," + model + "}"),
               ErrorKind::Unsupported, {op, "normalizer", "NFC"});
  expect_error(load(R"({"pre_tokenizer": {"type": "Whitespace"}, )" + model + "}"),
               ErrorKind::Unsupported, {op, "pre_tokenizer", "Whitespace"});
  expect_error(load(R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"},
                        "behavior": "Isolated"}, )" +
                    model + "}"),
               ErrorKind::Parse, {"regex", "'(a'"});
  expect_error(load(R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"},
                        "behavior": "Removed"}, )" +
                    model + "}"),
               ErrorKind::Unsupported, {op, "Removed"});
  expect_error(
      load(R"({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true}, )" + model + "}"),
      ErrorKind::Unsupported, {op, "add_prefix_space"});
  expect_error(load("{" + pre + R"(, "model": {"type": "WordPiece", "vocab": {}}})"),
               ErrorKind::Unsupported, {op, "WordPiece"});
  expect_error(
      load("{" + pre + R"(, "model": {"byte_fallback": true, "vocab": {"a": 0}, "merges": []}})"),
      ErrorKind::Unsupported, {op, "byte_fallback"});
  expect_error(load("{" + pre + R"(, "model": {"vocab": {"a": "zero"}, "merges": []}})"),
               ErrorKind::Parse, {op, "vocab id of 'a'"});
  expect_error(load("{" + pre + R"(, "model": {"vocab": {"a": 0, "b": 0}, "merges": []}})"),
               ErrorKind::Parse, {op, "id 0 is both"});
  // Nesting is bounded before nlohmann::json (whose dump recurses) sees the text.
  expect_error(load(std::string(100000, '[') + std::string(100000, ']')), ErrorKind::Parse,
               {op, "nests arrays and objects 100000 deep, more than 128"});
  // One far id would make a table of billions of empty tokens (found by fuzz_tokenizer_json);
  // a gap in the ids is fine.
  expect_error(
      load("{" + pre + R"(, "model": {"vocab": {"a": 0, "b": 2000000000}, "merges": []}})"),
      ErrorKind::Parse, {op, "'b' has id 2000000000, far past the 2 tokens"});
  EXPECT_EQ(Tokenizer::from_hf_json("{" + pre +
                                    R"(, "model": {"vocab": {"a": 0, "b": 60000}, "merges": []}})")
                .encode("ba"),
            (std::vector<int32_t>{60000, 0}));
  expect_error(load("{" + pre + R"(, "model": {"vocab": {"a": 0}, "merges": [7]}})"),
               ErrorKind::Parse, {op, "merge 0"});
  expect_error(load("{" + pre + R"(, "model": {"vocab": {"a": 0}, "merges": ["a q"]}})"),
               ErrorKind::Parse, {op, "'q'"});
  expect_error(
      load("{" + pre + R"(, "model": {"vocab": {"a": 0}, "merges": []}, "added_tokens": 5})"),
      ErrorKind::Parse, {op, "added_tokens"});
  expect_error(
      load(
          "{" + pre +
          R"(, "model": {"vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1, "content": "<m>", "lstrip": true}]})"),
      ErrorKind::Unsupported, {op, "lstrip"});
  expect_error(load("{" + pre + R"(, "model": {"vocab": 3, "merges": []}})"), ErrorKind::Parse,
               {op, "model.vocab"});
  expect_error(
      load(R"({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [1, 2]}, )" + model + "}"),
      ErrorKind::Parse, {op});
  expect_error(
      [&] { Tokenizer::from_hf_json("{" + pre + "," + model + "}", R"({"eos_token": "zz"})"); },
      ErrorKind::Parse, {op, "eos_token", "'zz'"});
  expect_error([] { Tokenizer::from_hf_json_file("/nonexistent/tokenizer.json"); }, ErrorKind::Io,
               {op, "/nonexistent/tokenizer.json"});
  expect_error([] { ChatTemplate::from_jinja("{% for m in messages %}{{ m.content }"); },
               ErrorKind::Parse, {"ChatTemplate::from_jinja", "does not parse"});
}

// ---------------------------------------------------------------------------------------------
// (2) The real SmolLM2-135M-Instruct tokenizer against HF tokenizers.

class TokenizerSmolLM2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_json_ = new std::string(read_file(data_dir() / "tokenizer.json"));
    config_json_ = new std::string(read_file(data_dir() / "tokenizer_config.json"));
    reference_ = new json(json::parse(read_file(data_dir() / "reference.json")));
    tokenizer_ = new Tokenizer(Tokenizer::from_hf_json(*tokenizer_json_, *config_json_));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete reference_;
    delete config_json_;
    delete tokenizer_json_;
  }
  static const Tokenizer& tok() { return *tokenizer_; }
  static const json& ref() { return *reference_; }
  static std::string* tokenizer_json_;
  static std::string* config_json_;
  static json* reference_;
  static Tokenizer* tokenizer_;
};
std::string* TokenizerSmolLM2::tokenizer_json_ = nullptr;
std::string* TokenizerSmolLM2::config_json_ = nullptr;
json* TokenizerSmolLM2::reference_ = nullptr;
Tokenizer* TokenizerSmolLM2::tokenizer_ = nullptr;

TEST_F(TokenizerSmolLM2, VocabAndSpecialIds) {
  EXPECT_EQ(tok().vocab_size(), ref().at("vocab_size").get<int32_t>());
  EXPECT_EQ(tok().bos_id(), ref().at("bos_id").get<int32_t>());
  EXPECT_EQ(tok().eos_id(), ref().at("eos_id").get<int32_t>());
  EXPECT_EQ(tok().special_tokens().pad, ref().at("pad_id").get<int32_t>());
  EXPECT_EQ(tok().special_tokens().unk, ref().at("unk_id").get<int32_t>());
  EXPECT_EQ(tok().token(tok().eos_id()), "<|im_end|>");
  EXPECT_EQ(tok().token_id("<|im_start|>"), tok().bos_id());
  EXPECT_TRUE(tok().is_control(tok().eos_id()));
  EXPECT_EQ(tok().token_type(100), TokenType::Normal);
}

TEST_F(TokenizerSmolLM2, EncodesLikeHf) {
  const auto& cases = ref().at("encode");
  ASSERT_GE(cases.size(), 30u);
  for (const json& c : cases) {
    const std::string text = c.at("text");
    SCOPED_TRACE(text);
    const auto ids = tok().encode(text, /*allow_special=*/true);
    ASSERT_EQ(ids, c.at("ids").get<std::vector<int32_t>>());
    ASSERT_EQ(tok().encode(text, false), c.at("ids_no_special").get<std::vector<int32_t>>());
    ASSERT_EQ(tok().decode(ids), c.at("decoded").get<std::string>());
    ASSERT_EQ(tok().decode(ids, /*skip_special=*/true),
              c.at("decoded_skip_special").get<std::string>());
  }
}

// The GGUF path: token strings by id, merges as "a b", GGUF type numbers, a llama.cpp pre-tokenizer
// name.
struct GgufShapedVocab {
  std::vector<std::string> tokens;
  std::vector<std::string> merges;
  std::vector<int32_t> types;
};

GgufShapedVocab gguf_shaped(const Tokenizer& tok, const std::string& tokenizer_json) {
  GgufShapedVocab v;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    v.tokens.push_back(tok.token(id));
    v.types.push_back(int32_t(tok.token_type(id)));
  }
  // Parse only the merges array (the file keeps it last in "model"): a tenth of the whole file's
  // cost.
  const size_t begin = tokenizer_json.find('[', tokenizer_json.find("\"merges\":"));
  const size_t end = tokenizer_json.find("\n]", begin);
  v.merges =
      json::parse(tokenizer_json.substr(begin, end + 2 - begin)).get<std::vector<std::string>>();
  EXPECT_EQ(v.merges.size(), 48900u);
  return v;
}

TEST_F(TokenizerSmolLM2, FromVocabMatchesFromHfJson) {
  const GgufShapedVocab v = gguf_shaped(tok(), *tokenizer_json_);
  const Tokenizer gguf =
      Tokenizer::from_vocab(v.tokens, v.merges, v.types, tok().special_tokens(), "smollm");
  for (const json& c : ref().at("encode")) {
    ASSERT_EQ(gguf.encode(c.at("text").get<std::string>(), true),
              c.at("ids").get<std::vector<int32_t>>());
    ASSERT_EQ(gguf.encode(c.at("text").get<std::string>(), false),
              c.at("ids_no_special").get<std::vector<int32_t>>());
  }
}

TEST_F(TokenizerSmolLM2, PlainGpt2SplitLikeHf) {
  // The same vocabulary under the plain GPT-2 split (llama.cpp "gpt2"): digits stay together.
  const GgufShapedVocab v = gguf_shaped(tok(), *tokenizer_json_);
  const Tokenizer gpt2 = Tokenizer::from_vocab(v.tokens, v.merges, v.types, {}, "gpt2");
  for (const json& c : ref().at("encode_gpt2")) {
    ASSERT_EQ(gpt2.encode(c.at("text").get<std::string>(), true),
              c.at("ids").get<std::vector<int32_t>>())
        << c.at("text");
  }
}

TEST_F(TokenizerSmolLM2, InvalidUtf8LikeHfOnLossyText) {
  for (const json& c : ref().at("invalid_utf8")) {
    const std::string bytes = from_hex(c.at("bytes_hex"));
    SCOPED_TRACE(c.at("bytes_hex").get<std::string>());
    ASSERT_EQ(td::utf8_make_valid(bytes), from_hex(c.at("lossy_hex")));
    const auto ids = tok().encode(bytes);
    ASSERT_EQ(ids, c.at("ids").get<std::vector<int32_t>>());
    ASSERT_EQ(tok().decode(ids), from_hex(c.at("lossy_hex")));
  }
}

TEST_F(TokenizerSmolLM2, DecodesLikeHf) {
  for (const json& c : ref().at("decode")) {
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    SCOPED_TRACE(c.at("ids").dump());
    ASSERT_EQ(tok().decode(ids), c.at("decoded").get<std::string>());
    ASSERT_EQ(tok().decode(ids, true), c.at("decoded_skip_special").get<std::string>());
  }
}

TEST_F(TokenizerSmolLM2, ChatTemplateLikeJinja) {
  const json config = json::parse(*config_json_);
  const ChatTemplate chat = ChatTemplate::from_jinja(config.at("chat_template").get<std::string>(),
                                                     config.at("bos_token").get<std::string>(),
                                                     config.at("eos_token").get<std::string>());
  for (const json& c : ref().at("chat")) {
    std::vector<ChatMessage> messages;
    for (const json& m : c.at("messages")) messages.push_back({m.at("role"), m.at("content")});
    const std::string text = chat.apply(messages, c.at("add_generation_prompt").get<bool>());
    ASSERT_EQ(text, c.at("text").get<std::string>());
    ASSERT_EQ(tok().encode(text, true), c.at("ids").get<std::vector<int32_t>>());
  }
}

TEST_F(TokenizerSmolLM2, RandomTextRoundTrips) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (int i = 0; i < 200; ++i) {
    // The pool avoids the few control bytes this vocabulary lacks (HF drops those).
    const std::string text = random_utf8(rng, 40, false);
    ASSERT_EQ(tok().decode(tok().encode(text)), text);
  }
}

// ---------------------------------------------------------------------------------------------
// (3) Streaming decode.

// Feeds ids one by one; every chunk must be whole UTF-8 and all chunks together the full decoding.
std::vector<std::string> stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
  TokenStreamer streamer(tok, skip);
  std::vector<std::string> chunks;
  for (int32_t id : ids) chunks.push_back(streamer.push(id));
  chunks.push_back(streamer.finish());
  std::string all;
  for (const auto& c : chunks) {
    EXPECT_TRUE(td::utf8_is_valid(c));
    all += c;
  }
  EXPECT_EQ(all, tok.decode(ids, skip));
  return chunks;
}

TEST_F(TokenizerSmolLM2, StreamingSplitsNoCharacter) {
  const std::string text =
      "Family: 👨‍👩‍👧‍👦, flag 🇺🇸, thumbs 👍🏽 and 中文 done";
  const auto ids = tok().encode(text);
  // The test means something only if some token holds part of a character.
  bool some_token_is_partial = false;
  for (int32_t id : ids) some_token_is_partial |= !td::utf8_is_valid(tok().decode_bytes({&id, 1}));
  ASSERT_TRUE(some_token_is_partial);
  const auto chunks = stream(tok(), ids, false);
  size_t empty = 0;
  for (const auto& c : chunks) empty += c.empty();
  EXPECT_GT(empty, 1u);  // tokens that completed no character held their bytes back
  EXPECT_EQ(chunks.back(), "");
}

TEST_F(TokenizerSmolLM2, StreamingMatchesDecodeOnArbitraryIds) {
  for (const json& c : ref().at("decode")) {
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    SCOPED_TRACE(c.at("ids").dump());
    stream(tok(), ids, false);
    stream(tok(), ids, true);
  }
  // A character cut off at the end comes out as U+FFFD from finish().
  auto ids = tok().encode("ok 😀");
  ids.pop_back();
  ASSERT_FALSE(td::utf8_is_valid(tok().decode_bytes(ids)));  // the emoji is cut
  TokenStreamer streamer(tok());
  std::string out;
  for (int32_t id : ids) out += streamer.push(id);
  EXPECT_EQ(out, "ok ");
  EXPECT_EQ(streamer.finish(), "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace wick::testing
