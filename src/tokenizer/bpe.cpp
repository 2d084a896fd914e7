#include "tokenizer/bpe.h"

#include <algorithm>

namespace wick::tokenizer_detail {

void MergeTable::reserve(size_t count) {
  size_t capacity = 16;
  while (capacity < count * 2) capacity *= 2;  // load factor <= 0.5 keeps probe chains short
  slots_.assign(capacity, Entry{kEmpty, 0, 0});
  mask_ = capacity - 1;
  shift_ = 64 - __builtin_ctzll(capacity);
  count_ = 0;
}

bool MergeTable::insert(int32_t left, int32_t right, int32_t rank, int32_t merged) {
  if ((count_ + 1) * 2 > slots_.size()) {
    std::vector<Entry> old = std::move(slots_);
    reserve(std::max<size_t>(count_ + 1, old.size()));
    for (const Entry& e : old)
      if (e.key != kEmpty) insert(int32_t(e.key >> 32), int32_t(uint32_t(e.key)), e.rank, e.merged);
  }
  const uint64_t k = key(left, right);
  for (size_t i = slot(k);; i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (e.key == k) return false;
    if (e.key == kEmpty) {
      e = Entry{k, rank, merged};
      ++count_;
      return true;
    }
  }
}

void BpeMerger::push_candidate(int32_t left, const MergeTable& merges) {
  const int32_t right = symbols_[left].next;
  if (right < 0) return;
  const int32_t left_id = symbols_[left].id, right_id = symbols_[right].id;
  const MergeTable::Entry* e = merges.find(left_id, right_id);
  if (!e) return;
  heap_.push_back({e->rank, left, left_id, right_id, e->merged});
  std::push_heap(heap_.begin(), heap_.end(), CandidateAfter{});
}

void BpeMerger::merge(std::span<const int32_t> initial, const MergeTable& merges,
                      std::vector<int32_t>& out) {
  symbols_.clear();
  heap_.clear();
  for (const int32_t id : initial) {
    const int32_t index = int32_t(symbols_.size());
    symbols_.push_back({id, index - 1, -1});
    if (index > 0) symbols_[index - 1].next = index;
  }
  for (int32_t i = 0; i + 1 < int32_t(symbols_.size()); ++i) push_candidate(i, merges);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), CandidateAfter{});
    const Candidate c = heap_.back();
    heap_.pop_back();
    Symbol& left = symbols_[c.left];
    // A candidate is stale once either side took part in another merge.
    if (left.id != c.left_id || left.next < 0) continue;
    const int32_t right_index = left.next;
    Symbol& right = symbols_[right_index];
    if (right.id != c.right_id) continue;
    left.id = c.merged;
    left.next = right.next;
    if (right.next >= 0) symbols_[right.next].prev = c.left;
    right.id = -1;
    if (left.prev >= 0) push_candidate(left.prev, merges);
    push_candidate(c.left, merges);
  }
  for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = symbols_[i].next)
    out.push_back(symbols_[i].id);
}

}  // namespace wick::tokenizer_detail
