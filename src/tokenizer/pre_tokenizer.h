// Splits text into the pieces BPE runs on. A pre-tokenizer is a list of steps applied in turn, each
// to every piece the previous steps made: a regex step keeps its matches and the text between them
// as pieces (HF's Split with behavior "Isolated"; llama.cpp's unicode_regex_split), each piece
// being the regex's whole subject, so lookaheads stop at its end. The regexes are llama.cpp's
// (llama-vocab.cpp) or a tokenizer.json's, run by PCRE2.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/regex.h"

namespace wick::tokenizer_detail {

// GPT-2's split regex, as HF's ByteLevel pre-tokenizer runs it (use_regex).
inline constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct PreTokenizerStep {
  enum class Kind {
    Regex,
    IndividualDigits,  // HF Digits(individual_digits): every Rust char::is_numeric alone
  };
  Kind kind = Kind::Regex;
  std::shared_ptr<const Regex> regex;
};

class PreTokenizer {
 public:
  PreTokenizer() = default;
  explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}
  // Appends the byte ranges [begin, end) of the pieces of `text` (valid UTF-8) to `pieces`.
  // `scratch` is reused between calls.
  void split(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces,
             std::vector<std::pair<size_t, size_t>>& scratch) const;
  const std::vector<PreTokenizerStep>& steps() const { return steps_; }

 private:
  std::vector<PreTokenizerStep> steps_;  // none: the text is one piece
};

// What llama.cpp does for a tokenizer.ggml.pre name (its llm_tokenizer_bpe regex lists and flags).
struct LlamaCppPreTokenizer {
  std::vector<std::string_view> regexes;
  bool ignore_merges = false;  // a piece that is a whole token is that token, merges or not
};
// nullopt for a name llama.cpp does not know or wick does not implement.
std::optional<LlamaCppPreTokenizer> llama_cpp_pre_tokenizer(std::string_view name);
// The names llama_cpp_pre_tokenizer knows, for error messages.
std::string llama_cpp_pre_tokenizer_names();

// Compiles each regex into a step.
PreTokenizer make_regex_pre_tokenizer(const std::vector<std::string_view>& regexes);

}  // namespace wick::tokenizer_detail
