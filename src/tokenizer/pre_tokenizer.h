// Splits text into the pieces BPE runs on, exactly as HF's ByteLevel pre-tokenizer does with its
// GPT-2 regex  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// optionally after HF's Digits(individual_digits) step, which isolates every numeric character and
// makes the regex run on each stretch between them separately (lookahead stops at a stretch's end).
// Written by hand: std::regex knows no \p{L}, and a direct scanner is many times faster.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/unicode.h"

namespace wick::tokenizer_detail {

enum class PreTokenizerKind {
  Gpt2,           // the regex alone (llama.cpp "gpt2")
  DigitsThenGpt2  // digits one by one, then the regex (llama.cpp "smollm", "starcoder", ...)
};

// llama.cpp's tokenizer.ggml.pre name -> kind; nullopt when unknown.
std::optional<PreTokenizerKind> pre_tokenizer_from_name(std::string_view name);

// Byte ranges [begin, end) of the pieces of `text`, which must be valid UTF-8.
class PreTokenizer {
 public:
  explicit PreTokenizer(PreTokenizerKind kind) : kind_(kind) {}
  void split(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces);

 private:
  struct Codepoint {
    size_t offset;  // byte offset in the text
    char32_t cp;
    CodepointClass cls;
  };
  // Splits codepoints_[begin, end) by the GPT-2 regex.
  void split_gpt2(size_t begin, size_t end, std::vector<std::pair<size_t, size_t>>& pieces) const;
  size_t match_gpt2(size_t i, size_t end) const;

  PreTokenizerKind kind_;
  std::vector<Codepoint> codepoints_;  // scratch, plus an end sentinel
};

}  // namespace wick::tokenizer_detail
