// BPE merging over token ids: a piece starts as one symbol per byte (byte-level BPE) or per
// character (SentencePiece-style BPE) and the adjacent pair whose merge has the lowest rank
// (leftmost on ties) is merged until none applies, as HF's BPE model does. Symbols form a linked
// list and candidate pairs a min-heap, so a piece of n bytes costs O(n log n).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace wick::tokenizer_detail {

// (left id, right id) -> (rank, merged id); open addressing, read-only once built.
class MergeTable {
 public:
  struct Entry {
    uint64_t key;
    int32_t rank;
    int32_t merged;
  };
  void reserve(size_t count);
  // False if the pair is already present (the earlier, lower rank stays).
  bool insert(int32_t left, int32_t right, int32_t rank, int32_t merged);
  const Entry* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t k = key(left, right);
    for (size_t i = slot(k);; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.key == k) return &e;
      if (e.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return count_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static uint64_t key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  size_t slot(uint64_t k) const { return size_t((k * 0x9E3779B97F4A7C15ull) >> shift_) & mask_; }
  std::vector<Entry> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t count_ = 0;
};

// Reusable scratch for merging one piece after another.
class BpeMerger {
 public:
  // Merges the symbols `initial` (token ids) and appends the result to out.
  void merge(std::span<const int32_t> initial, const MergeTable& merges, std::vector<int32_t>& out);

 private:
  struct Symbol {
    int32_t id;  // -1 once merged into its left neighbour
    int32_t prev, next;
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index; also the tie-break
    int32_t left_id, right_id, merged;
  };
  // std heap functions build a max-heap: "after" puts the lowest rank, then leftmost, on top.
  struct CandidateAfter {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
    }
  };
  void push_candidate(int32_t left, const MergeTable& merges);

  std::vector<Symbol> symbols_;
  std::vector<Candidate> heap_;
};

}  // namespace wick::tokenizer_detail
