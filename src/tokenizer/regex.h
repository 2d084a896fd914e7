// A compiled PCRE2 pattern in UTF mode with Unicode properties (\p{L}, and \s, \d by Unicode
// rules), JIT-compiled where the platform allows. What the pre-tokenizers split text with.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace wick::tokenizer_detail {

class Regex {
 public:
  // Error(Parse) naming the pattern and the offset PCRE2 reports on a malformed pattern.
  explicit Regex(std::string pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // The first match in subject[from, end) — the subject's end is the pattern's end of text, so
  // (?!\S) and $ see it. False when there is none; throws Error(Internal) if PCRE2 gives up.
  // subject must be valid UTF-8 and `from` at a character boundary (not checked again).
  bool find(std::string_view subject, size_t from, size_t& begin, size_t& end) const;
  const std::string& pattern() const { return pattern_; }
  bool jit() const { return jit_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

}  // namespace wick::tokenizer_detail
