#include "tokenizer/spm.h"

#include <algorithm>

#include "tokenizer/model.h"
#include "tokenizer/unicode.h"
#include "wick/error.h"

namespace wick::tokenizer_detail {

void SpmMerger::push_candidate(std::string_view text, int32_t left, const Model& m) {
  if (left < 0) return;
  const int32_t right = symbols_[left].next;
  if (right < 0) return;
  const uint32_t size = symbols_[left].size + symbols_[right].size;
  const auto it = m.text_to_id.find(text.substr(symbols_[left].offset, size));
  if (it == m.text_to_id.end()) return;
  heap_.push_back({m.scores[it->second], left, right, size});
  std::push_heap(heap_.begin(), heap_.end(), CandidateBefore{});
}

void SpmMerger::encode(std::string_view text, const Model& m, std::vector<int32_t>& out) {
  symbols_.clear();
  heap_.clear();
  size_t subpart;
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_sequence_length(text, i, &subpart);
    WICK_ASSERT(len != 0);  // the caller made the text valid
    const int32_t index = int32_t(symbols_.size());
    symbols_.push_back({uint32_t(i), uint32_t(len), index - 1, -1});
    if (index > 0) symbols_[index - 1].next = index;
    i += len;
  }
  for (int32_t i = 0; i + 1 < int32_t(symbols_.size()); ++i) push_candidate(text, i, m);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), CandidateBefore{});
    const Candidate c = heap_.back();
    heap_.pop_back();
    Symbol& left = symbols_[c.left];
    Symbol& right = symbols_[c.right];
    if (left.size == 0 || right.size == 0 || left.size + right.size != c.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols_[right.next].prev = c.left;
    push_candidate(text, left.prev, m);
    push_candidate(text, c.left, m);
  }
  for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = symbols_[i].next) {
    const Symbol& s = symbols_[i];
    const std::string_view piece = text.substr(s.offset, s.size);
    if (const auto it = m.text_to_id.find(piece); it != m.text_to_id.end()) {
      out.push_back(it->second);
      continue;
    }
    // Only single characters are left unmatched: every merge made a token.
    append_unknown_character(piece, m, out);
  }
}

}  // namespace wick::tokenizer_detail
