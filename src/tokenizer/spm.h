// SentencePiece's BPE as llama.cpp runs it (llm_tokenizer_spm): the text starts as one symbol per
// UTF-8 character; while some adjacent pair spells a token, the pair whose token has the highest
// score (leftmost on ties) is merged. A final symbol that is no token becomes its bytes' fallback
// tokens <0xNN>, or the unknown token. Symbols form a linked list and candidates a max-heap, so n
// characters cost O(n log n).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace wick::tokenizer_detail {

struct Model;

class SpmMerger {
 public:
  // Appends the ids of `text` (spaces already escaped to '▁', valid UTF-8) to out.
  void encode(std::string_view text, const Model& m, std::vector<int32_t>& out);

 private:
  struct Symbol {
    uint32_t offset, size;  // bytes of the text; size 0 once merged into its left neighbour
    int32_t prev, next;
  };
  struct Candidate {
    float score;
    int32_t left, right;
    uint32_t size;  // left.size + right.size when pushed: a later change to either makes it stale
  };
  // std heap functions build a max-heap: "before" puts the highest score, then leftmost, on top.
  struct CandidateBefore {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.score != b.score ? a.score < b.score : a.left > b.left;
    }
  };
  void push_candidate(std::string_view text, int32_t left, const Model& m);

  std::vector<Symbol> symbols_;
  std::vector<Candidate> heap_;
};

}  // namespace wick::tokenizer_detail
