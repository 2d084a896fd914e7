#include "gpu/hazard_tracker.h"

#include <algorithm>

namespace wick::gpu {

namespace {

bool contains(const std::vector<uint64_t>& set, uint64_t b) {
  return std::find(set.begin(), set.end(), b) != set.end();
}

void insert(std::vector<uint64_t>& set, std::span<const uint64_t> bs) {
  for (uint64_t b : bs)
    if (!contains(set, b)) set.push_back(b);
}

}  // namespace

bool HazardTracker::needs_barrier(std::span<const uint64_t> reads,
                                  std::span<const uint64_t> writes) const {
  for (uint64_t b : reads)
    if (contains(written_, b)) return true;
  for (uint64_t b : writes)
    if (contains(written_, b) || contains(read_, b)) return true;
  return false;
}

void HazardTracker::record(std::span<const uint64_t> reads, std::span<const uint64_t> writes) {
  insert(read_, reads);
  insert(written_, writes);
}

void HazardTracker::barrier() {
  reset();
  barriers_++;
}

void HazardTracker::reset() {
  read_.clear();
  written_.clear();
}

}  // namespace wick::gpu
