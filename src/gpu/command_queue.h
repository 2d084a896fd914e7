// The one recording state of a device: ops record into it under one lock and return at once.
//
// An op holds the lock for its whole recording (record(f) runs f under it), so its dispatches stay
// together and in order. After every op the commit policy runs: the command list is submitted once
// it holds `ops_per_buffer` ops (0: after every op) or its ops wrote `bytes_per_buffer` bytes.
// Each submission starts only after the previous one finished (the driver's contract), so hazards
// are tracked inside one command list only and ordering across lists is guaranteed.
// At most `max_in_flight` submissions are outstanding: a commit beyond that waits for the oldest,
// which bounds the driver's command lists and keeps the host from running arbitrarily far ahead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/driver.h"
#include "gpu/hazard_tracker.h"

namespace wick::gpu {

struct QueueConfig {
  int64_t ops_per_buffer = 50;
  uint64_t bytes_per_buffer = 0;  // 0: no byte limit
  size_t max_in_flight = 8;
};

// Unordered: only atomics whose order does not matter (an error flag): no barriers for it.
enum class Access : uint8_t { Read, Write, ReadWrite, Unordered };

// A buffer bound to a dispatch and how the kernel uses it (inputs Read, outputs Write).
struct BufferAccess {
  Buffer* buffer;
  Access access;
};

// Ops recorded once by CommandQueue::begin_capture() .. end_capture(), submitted again by
// replay(). It pins every buffer its commands use (the pool cannot hand them to other work, and
// its budget counts them) until it is destroyed, which waits for its last replay.
class Capture {
 public:
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  uint64_t ops() const { return ops_; }
  uint64_t dispatches() const { return dispatches_; }

 private:
  friend class CommandQueue;
  explicit Capture(Driver& driver) : driver_(driver) {}
  Driver& driver_;
  std::unique_ptr<Recording> recording_;
  std::vector<BufferRef> buffers_;
  // Buffers the step reads before writing them, made before the capture: a tensor of the
  // caller's must still hold each at replay (else the step would read memory nobody owns).
  std::vector<size_t> inputs_;
  uint64_t ops_ = 0, dispatches_ = 0;
  uint64_t last_submission_ = 0;
};

class CommandQueue {
 public:
  CommandQueue(Driver& driver, QueueConfig config);
  ~CommandQueue();
  CommandQueue(const CommandQueue&) = delete;
  CommandQueue& operator=(const CommandQueue&) = delete;

  // What one op records. Only valid inside record().
  class Recorder {
   public:
    // Binds args[i] at binding i; a barrier goes first when the accesses conflict.
    void dispatch(const Pipeline& pipeline, std::span<const BufferAccess> args,
                  std::span<const uint32_t> push_constants, std::array<uint32_t, 3> groups);
    void dispatch(const Pipeline& pipeline, std::initializer_list<BufferAccess> args,
                  std::span<const uint32_t> push_constants, std::array<uint32_t, 3> groups) {
      dispatch(pipeline, std::span<const BufferAccess>(args.begin(), args.size()), push_constants,
               groups);
    }
    void copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes);
    // Work the backend records itself through its API (a library's GEMM on the driver's
    // stream): `record()` runs in order with the dispatches, after a barrier if `args` conflict.
    template <typename F>
    void external(std::span<const BufferAccess> args, F&& record) {
      access(args);
      record();
      q_.stats_.dispatches++;
    }
    void fill(Buffer& dst, uint64_t offset, uint64_t bytes, uint32_t pattern);

   private:
    friend class CommandQueue;
    explicit Recorder(CommandQueue& q) : q_(q) {}
    void access(std::span<const BufferAccess> args);
    CommandQueue& q_;
  };

  // Runs f(Recorder&) under the lock as one op, then applies the commit policy. Returns the
  // submission that holds the op (committed now or later).
  template <typename F>
  uint64_t record(F&& f) {
    std::unique_lock<std::mutex> lock(mu_);
    wait_for_capture(lock);
    Recorder r(*this);
    f(r);
    const uint64_t holder = submitted_ + 1;
    end_op(false);
    return holder;
  }
  // Like record(), then commits at once and returns the submission that holds the op: waiting
  // for it (and nothing else) is enough to see the op's results (flush_and_wait_current).
  template <typename F>
  uint64_t record_and_submit(F&& f) {
    std::unique_lock<std::mutex> lock(mu_);
    wait_for_capture(lock);
    if (capturing_self()) refuse_in_capture("an op that waits for its own result");
    Recorder r(*this);
    f(r);
    end_op(true);
    return submitted_;
  }

  // ---- capture and replay ---------------------------------------------------------------
  // Commits what is recorded, then records this thread's ops into a capture instead of
  // submissions, until end_capture(). Ops of other threads wait meanwhile; a wait or read-back
  // in this thread is an error (the captured work has not run). Unsupported when the driver
  // cannot capture.
  void begin_capture();
  // The capture (on failure too: then the caller drops it). Its ops have not run.
  std::unique_ptr<Capture> end_capture();
  // Submits the capture again (after what is recorded now) and returns its submission.
  uint64_t replay(Capture& c);

  // Commits what is recorded (if anything) and returns the latest submission id.
  uint64_t flush();
  // Waits until submission `id` (and so every earlier one) finished.
  void wait(uint64_t id);
  // flush() + wait(): everything recorded so far finished.
  void synchronize();

  const QueueConfig& config() const { return config_; }

  struct Stats {
    uint64_t ops = 0;
    uint64_t dispatches = 0;
    uint64_t barriers = 0;
    uint64_t commits = 0;
    uint64_t in_flight_waits = 0;  // commits that had to wait for the oldest submission
    uint64_t replays = 0;
    uint64_t replayed_dispatches = 0;  // dispatches submitted again by replays
    size_t in_flight = 0;
  };
  Stats stats() const;

 private:
  void end_op(bool force_commit);
  void commit_locked();
  // Starts an empty command list: no hazards, nothing counted towards the commit policy.
  void reset_list_locked();
  void prune_locked();
  void track_in_flight_locked();
  // Other threads' ops wait while a capture runs.
  void wait_for_capture(std::unique_lock<std::mutex>& lock);
  bool capturing_self() const { return capture_thread_.load() == std::this_thread::get_id(); }
  [[noreturn]] void refuse_in_capture(const char* what) const;
  // Inside a capture: pins the buffer (first use) and notes whether the step reads it first.
  void capture_use(Buffer* b, Access access);

  Driver& driver_;
  QueueConfig config_;
  mutable std::mutex mu_;
  HazardTracker hazards_;
  uint64_t submitted_ = 0;  // id of the latest submission
  int64_t ops_in_list_ = 0;
  uint64_t bytes_in_list_ = 0;
  bool recorded_ = false;  // anything recorded since the last commit
  std::deque<uint64_t> in_flight_;
  Stats stats_;

  std::unique_ptr<Capture> capture_;
  // The capturing thread (a default id when none): atomic, as wait() reads it without the lock.
  std::atomic<std::thread::id> capture_thread_{};
  uint64_t capture_generation_ = 0;  // buffers handed out from then on were made in the capture
  std::unordered_map<Buffer*, size_t> capture_index_;  // buffer -> its index in capture_->buffers_
  std::condition_variable capture_done_;
};

}  // namespace wick::gpu
