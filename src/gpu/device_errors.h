// Errors a kernel finds while it runs (an out-of-range id, an integer division by zero) belong to
// the op that recorded the kernel, and to the thread that recorded the op.
//
// Each op that can fail gets its own error record: a small host-visible buffer its kernel writes
// ({code, a low, a high, b}, kernels/shared/params.h). The record remembers the submission that
// holds the op and the thread that recorded it. A wait on the device by that thread (read-back,
// synchronize, or the op's own wait) raises the first error among its records whose submission
// finished, naming the op; no other thread ever sees it, and records that came back clean are
// dropped by whichever thread finds them finished first.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/buffer_pool.h"

namespace wick::gpu {

class DeviceErrors {
 public:
  explicit DeviceErrors(BufferPool& host_pool) : pool_(host_pool) {}

  // A zeroed record for one op, to bind to its kernel (Access::Unordered).
  BufferRef acquire();
  // The op (named `op`, e.g. "index_select"; `context` is added to a division error's message:
  // the shape, and to a cache position error's: the token count) recorded its kernel with
  // `record` into submission `submission` on this thread.
  void add(BufferRef record, uint64_t submission, const char* op, std::string context = {});
  // Raises Error(OutOfRange) for the first error among this thread's records of submissions up
  // to `done` (finished), after forgetting them all.
  void raise_finished(uint64_t done);
  size_t pending() const;

  // A record of a captured op: at every replay the capture adds it again under the replay's
  // submission. Records are not cleared between replays: once a replay found an error, every
  // later replay of that capture raises it again.
  struct CapturedRecord {
    BufferRef record;
    const char* op;
    std::string context;
  };
  // While a capture runs, add() from the capturing thread goes to `sink`; nullptr stops it.
  void divert(std::vector<CapturedRecord>* sink);

 private:
  struct Pending {
    BufferRef record;
    uint64_t submission;
    std::thread::id thread;
    const char* op;
    std::string context;
  };
  [[noreturn]] static void raise(const Pending& p, const uint32_t words[4]);

  BufferPool& pool_;
  mutable std::mutex mu_;
  std::vector<Pending> pending_;
  std::vector<CapturedRecord>* sink_ = nullptr;
  std::thread::id sink_thread_;
};

}  // namespace wick::gpu
