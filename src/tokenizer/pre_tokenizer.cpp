#include "tokenizer/pre_tokenizer.h"

#include "wick/error.h"

namespace wick::tokenizer_detail {

std::optional<PreTokenizerKind> pre_tokenizer_from_name(std::string_view name) {
  // llama.cpp gives these names the same regex lists.
  for (std::string_view n : {"gpt2", "default", "mpt", "olmo", "jais"})
    if (name == n) return PreTokenizerKind::Gpt2;
  for (std::string_view n : {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone"})
    if (name == n) return PreTokenizerKind::DigitsThenGpt2;
  return std::nullopt;
}

void PreTokenizer::split(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces) {
  codepoints_.clear();
  size_t subpart;
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_sequence_length(text, i, &subpart);
    WICK_ASSERT(len != 0);  // the caller made the text valid
    const char32_t cp = utf8_decode(text, i, len);
    codepoints_.push_back({i, cp, codepoint_class(cp)});
    i += len;
  }
  const size_t n = codepoints_.size();
  codepoints_.push_back({text.size(), 0, kOther});  // sentinel: offset of the end
  if (kind_ == PreTokenizerKind::Gpt2) {
    split_gpt2(0, n, pieces);
    return;
  }
  size_t stretch = 0;
  for (size_t k = 0; k < n; ++k) {
    if (!is_digits_numeric(codepoints_[k].cp, codepoints_[k].cls)) continue;
    split_gpt2(stretch, k, pieces);
    pieces.emplace_back(codepoints_[k].offset, codepoints_[k + 1].offset);
    stretch = k + 1;
  }
  split_gpt2(stretch, n, pieces);
}

void PreTokenizer::split_gpt2(size_t begin, size_t end,
                              std::vector<std::pair<size_t, size_t>>& pieces) const {
  for (size_t i = begin; i < end;) {
    const size_t j = match_gpt2(i, end);
    pieces.emplace_back(codepoints_[i].offset, codepoints_[j].offset);
    i = j;
  }
}

// End (exclusive, in code points) of the regex match that starts at i; the first alternative that
// matches wins, each one greedy.
size_t PreTokenizer::match_gpt2(size_t i, size_t end) const {
  const auto cp_at = [&](size_t k) { return k < end ? codepoints_[k].cp : char32_t(0); };
  const char32_t c = codepoints_[i].cp;
  if (c == '\'') {  // 's|'t|'re|'ve|'m|'ll|'d  (case-sensitive)
    const char32_t c1 = cp_at(i + 1), c2 = cp_at(i + 2);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return i + 2;
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l'))
      return i + 3;
  }
  size_t start = i;
  // " ?X+": a single U+0020 joins the letter / number / other run that follows it.
  if (c == ' ' && i + 1 < end && codepoints_[i + 1].cls != kSpace) start = i + 1;
  const CodepointClass cls = codepoints_[start].cls;
  size_t j = start + 1;
  if (cls != kSpace) {
    while (j < end && codepoints_[j].cls == cls) ++j;
    return j;
  }
  while (j < end && codepoints_[j].cls == kSpace) ++j;
  // \s+(?!\S): a run that reaches the end is taken whole; one followed by a non-space gives its
  // last character to the next piece (" ?\p{L}+" etc.), unless that would leave it empty (then
  // \s+).
  if (j == end || j - i == 1) return j;
  return j - 1;
}

}  // namespace wick::tokenizer_detail
