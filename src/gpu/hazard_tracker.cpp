#include "gpu/hazard_tracker.h"

namespace wick::gpu {

bool HazardTracker::needs_barrier(std::span<const uint64_t> reads,
                                  std::span<const uint64_t> writes) const {
  for (uint64_t b : reads)
    if (written_.count(b)) return true;
  for (uint64_t b : writes)
    if (written_.count(b) || read_.count(b)) return true;
  return false;
}

void HazardTracker::record(std::span<const uint64_t> reads, std::span<const uint64_t> writes) {
  read_.insert(reads.begin(), reads.end());
  written_.insert(writes.begin(), writes.end());
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
