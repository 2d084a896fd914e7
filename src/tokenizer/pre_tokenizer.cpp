#include "tokenizer/pre_tokenizer.h"

#include "tokenizer/unicode.h"
#include "wick/error.h"

namespace wick::tokenizer_detail {
namespace {

// llama.cpp's regex lists (src/llama-vocab.cpp, llm_tokenizer_bpe), transcribed unchanged: where
// llama.cpp rewrote a tokenizer.json's (?i:'s|...) as '[sS]|..., this is its rewrite.
const std::vector<std::string_view> kDefault = {
    R"re([\p{P}\$\+<=>\^~\|]+)re",
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
    R"re(\p{N}+)re",
    R"re([0-9][0-9][0-9])re",
};
const std::vector<std::string_view> kGpt2 = {
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
};
const std::vector<std::string_view> kLlama3 = {
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
};
const std::vector<std::string_view> kDeepseekLlm = {
    R"re([\r\n])re",
    R"re(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)re",
    R"re(\s?[!-/:-~！-／：-～‘-‟　-。]+)re",
    R"re(\s+$)re",
    R"re([一-龥ࠀ-一가-퟿]+)re",
    R"re(\p{N}+)re",
};
const std::vector<std::string_view> kDeepseek3 = {
    R"re(\p{N}{1,3})re",
    R"re([一-龥぀-ゟ゠-ヿ]+)re",
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
};
const std::vector<std::string_view> kDeepseekCoder = {
    R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", R"re([一-龥ࠀ-一가-퟿]+)re",
    R"re(\p{N})re",
};
const std::vector<std::string_view> kFalcon = {
    R"re([\p{P}\$\+<=>\^~\|`]+)re",
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
    R"re([0-9][0-9][0-9])re",
};
const std::vector<std::string_view> kStarcoder = {
    R"re(\p{N})re",
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
};
const std::vector<std::string_view> kQwen2 = {
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
};
const std::vector<std::string_view> kQwen35 = {
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
};
const std::vector<std::string_view> kPoro = {
    R"re( ?[^(\s|.,!?…。，、।۔،)]+)re",
};
const std::vector<std::string_view> kViking = {
    R"re( ?[^(\s|.,!?…。，、।۔،)]+)re",
    R"re(\p{N})re",
};
const std::vector<std::string_view> kTekken = {
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
};
const std::vector<std::string_view> kGpt4o = {
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
};
const std::vector<std::string_view> kBailingMoe = {
    R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re",
};
const std::vector<std::string_view> kSeedCoder = {
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re",
};

struct NamedPreTokenizer {
  std::string_view name;
  const std::vector<std::string_view>* regexes;
  bool ignore_merges;
};

// llama.cpp's tokenizer.ggml.pre names (llama_vocab::impl::load), plus wick's "gpt2".
const NamedPreTokenizer kNamed[] = {
    {"default", &kDefault, false},
    {"gpt2", &kGpt2, false},
    {"gpt-2", &kGpt2, false},
    {"phi-2", &kGpt2, false},
    {"mpt", &kGpt2, false},
    {"olmo", &kGpt2, false},
    {"jais", &kGpt2, false},
    {"exaone4", &kGpt2, false},
    {"trillion", &kGpt2, false},
    {"granite-docling", &kGpt2, false},
    {"llama3", &kLlama3, true},
    {"llama-v3", &kLlama3, true},
    {"llama-bpe", &kLlama3, true},
    {"falcon3", &kLlama3, true},
    {"falcon-h1", &kLlama3, true},
    {"pixtral", &kLlama3, true},
    {"dbrx", &kLlama3, false},
    {"smaug-bpe", &kLlama3, false},
    {"chatglm-bpe", &kLlama3, false},  // llama.cpp's CHATGLM4 list is the llama3 regex
    {"glm4", &kLlama3, true},
    {"deepseek-llm", &kDeepseekLlm, false},
    {"deepseek-v3", &kDeepseek3, false},
    {"deepseek-coder", &kDeepseekCoder, false},
    {"falcon", &kFalcon, false},
    {"starcoder", &kStarcoder, false},
    {"refact", &kStarcoder, false},
    {"command-r", &kStarcoder, false},
    {"smollm", &kStarcoder, false},
    {"codeshell", &kStarcoder, false},
    {"exaone", &kStarcoder, false},
    {"minerva-7b", &kStarcoder, false},
    {"qwen2", &kQwen2, false},
    {"deepseek-r1-qwen", &kQwen2, false},
    {"stablelm2", &kQwen2, false},
    {"megrez", &kQwen2, false},
    {"hunyuan", &kQwen2, false},
    {"qwen35", &kQwen35, false},
    {"poro-chat", &kPoro, false},
    {"bloom", &kPoro, false},
    {"gpt3-finnish", &kPoro, false},
    {"viking", &kViking, false},
    {"tekken", &kTekken, true},
    {"gpt-4o", &kGpt4o, false},
    {"llama4", &kGpt4o, false},
    {"minimax-m2", &kGpt4o, false},
    {"bailingmoe", &kBailingMoe, false},
    {"bailingmoe2", &kBailingMoe, false},
    {"seed-coder", &kSeedCoder, false},
};

// Appends the pieces of text[begin, end) under one step.
void split_step(const PreTokenizerStep& step, std::string_view text, size_t begin, size_t end,
                std::vector<std::pair<size_t, size_t>>& out) {
  const std::string_view subject = text.substr(begin, end - begin);
  size_t gap = 0;  // start of the text not yet emitted, relative to subject
  const auto emit = [&](size_t b, size_t e) {
    if (b > gap) out.emplace_back(begin + gap, begin + b);
    out.emplace_back(begin + b, begin + e);
    gap = e;
  };
  if (step.kind == PreTokenizerStep::Kind::IndividualDigits) {
    size_t subpart;
    for (size_t i = 0; i < subject.size();) {
      const size_t len = utf8_sequence_length(subject, i, &subpart);
      WICK_ASSERT(len != 0);  // the caller made the text valid
      const char32_t cp = utf8_decode(subject, i, len);
      if (is_digits_numeric(cp, codepoint_class(cp))) emit(i, i + len);
      i += len;
    }
  } else {
    size_t from = 0, b = 0, e = 0;
    while (from <= subject.size() && step.regex->find(subject, from, b, e)) {
      if (e > b) {
        emit(b, e);
        from = e;
      } else {  // an empty match splits nothing; search on from the next character
        if (b >= subject.size()) break;
        size_t subpart;
        from = b + std::max<size_t>(1, utf8_sequence_length(subject, b, &subpart));
      }
    }
  }
  if (gap < subject.size()) out.emplace_back(begin + gap, end);
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces,
                         std::vector<std::pair<size_t, size_t>>& scratch) const {
  if (text.empty()) return;
  if (steps_.empty()) {
    pieces.emplace_back(0, text.size());
    return;
  }
  // Every step but the last writes scratch from the pieces of the step before it.
  std::vector<std::pair<size_t, size_t>> current{{0, text.size()}};
  for (size_t s = 0; s < steps_.size(); ++s) {
    std::vector<std::pair<size_t, size_t>>& out = s + 1 == steps_.size() ? pieces : scratch;
    if (&out == &scratch) scratch.clear();
    for (const auto& [b, e] : current) split_step(steps_[s], text, b, e, out);
    if (&out == &scratch) current.swap(scratch);
  }
}

std::optional<LlamaCppPreTokenizer> llama_cpp_pre_tokenizer(std::string_view name) {
  for (const NamedPreTokenizer& n : kNamed)
    if (n.name == name) return LlamaCppPreTokenizer{*n.regexes, n.ignore_merges};
  return std::nullopt;
}

std::string llama_cpp_pre_tokenizer_names() {
  std::string s;
  for (const NamedPreTokenizer& n : kNamed) {
    if (!s.empty()) s += ", ";
    s += n.name;
  }
  return s;
}

PreTokenizer make_regex_pre_tokenizer(const std::vector<std::string_view>& regexes) {
  std::vector<PreTokenizerStep> steps;
  for (std::string_view r : regexes) {
    // llama.cpp's \p{N} step stands for HF's Digits(individual_digits), whose Unicode tables
    // (Rust's char::is_numeric) are newer than PCRE2's; the step follows HF, as the models do.
    if (r == R"(\p{N})")
      steps.push_back({PreTokenizerStep::Kind::IndividualDigits, nullptr});
    else
      steps.push_back({PreTokenizerStep::Kind::Regex, std::make_shared<Regex>(std::string(r))});
  }
  return PreTokenizer(std::move(steps));
}

}  // namespace wick::tokenizer_detail
