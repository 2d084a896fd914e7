// Decides where memory barriers go inside one command list.
//
// Dispatches recorded without a barrier between them may run concurrently on the GPU. A barrier is
// needed only when a dispatch reads a buffer that an earlier un-barriered dispatch wrote (RAW), or
// writes a buffer that one read or wrote (WAR, WAW). Independent dispatches get none. Buffers are
// named by their driver handle, so a buffer the pool hands out again keeps its hazards.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace wick::gpu {

class HazardTracker {
 public:
  // True when an access reading `reads` and writing `writes` conflicts with what was recorded
  // since the last barrier.
  bool needs_barrier(std::span<const uint64_t> reads, std::span<const uint64_t> writes) const;
  // Notes an access recorded after the current point (call after any barrier it needed).
  void record(std::span<const uint64_t> reads, std::span<const uint64_t> writes);
  // A barrier was recorded: nothing before it can conflict with what follows.
  void barrier();
  // Everything recorded so far finished (a new command list that waits on the previous one).
  void reset();

  uint64_t barrier_count() const { return barriers_; }

 private:
  // Small (reset at every barrier and commit): flat vectors beat hashing here.
  std::vector<uint64_t> read_;
  std::vector<uint64_t> written_;
  uint64_t barriers_ = 0;
};

}  // namespace wick::gpu
