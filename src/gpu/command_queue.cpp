#include "gpu/command_queue.h"

#include <array>

#include "wick/error.h"

namespace wick::gpu {

CommandQueue::CommandQueue(Driver& driver, QueueConfig config) : driver_(driver), config_(config) {
  if (config_.max_in_flight < 1) config_.max_in_flight = 1;
}

CommandQueue::~CommandQueue() = default;

void CommandQueue::Recorder::access(std::span<const BufferAccess> args) {
  std::array<uint64_t, kMaxBindings> reads{}, writes{};
  size_t nr = 0, nw = 0;
  for (const BufferAccess& a : args) {
    if (a.access == Access::Read || a.access == Access::ReadWrite)
      reads[nr++] = a.buffer->alloc.handle;
    if (a.access == Access::Write || a.access == Access::ReadWrite) {
      writes[nw++] = a.buffer->alloc.handle;
      q_.bytes_in_list_ += a.buffer->capacity;
    }
    // The next commit submits this list: the buffer is in use until that submission finishes.
    a.buffer->last_use.store(q_.submitted_ + 1);
    if (q_.capture_) q_.capture_use(a.buffer, a.access);
  }
  const std::span<const uint64_t> r(reads.data(), nr), w(writes.data(), nw);
  if (q_.hazards_.needs_barrier(r, w)) {
    q_.driver_.record_barrier();
    q_.hazards_.barrier();
    q_.stats_.barriers++;
  }
  q_.hazards_.record(r, w);
  q_.recorded_ = true;
}

void CommandQueue::Recorder::dispatch(const Pipeline& pipeline, std::span<const BufferAccess> args,
                                      std::span<const uint32_t> push_constants,
                                      std::array<uint32_t, 3> groups) {
  WICK_ASSERT(args.size() <= kMaxBindings);
  WICK_ASSERT(push_constants.size_bytes() <= kMaxPushConstantBytes);
  access(args);
  std::array<Binding, kMaxBindings> bindings{};
  for (size_t i = 0; i < args.size(); i++) bindings[i] = {args[i].buffer->alloc.handle};
  q_.driver_.record_dispatch(
      {&pipeline, std::span<const Binding>(bindings.data(), args.size()), push_constants, groups});
  q_.stats_.dispatches++;
  if (q_.capture_) q_.capture_->dispatches_++;
}

void CommandQueue::Recorder::copy(Buffer& src, uint64_t src_offset, Buffer& dst,
                                  uint64_t dst_offset, uint64_t bytes) {
  const BufferAccess args[] = {{&src, Access::Read}, {&dst, Access::Write}};
  access(args);
  q_.driver_.record_copy(src.alloc.handle, src_offset, dst.alloc.handle, dst_offset, bytes);
}

void CommandQueue::Recorder::fill(Buffer& dst, uint64_t offset, uint64_t bytes, uint32_t pattern) {
  const BufferAccess args[] = {{&dst, Access::Write}};
  access(args);
  q_.driver_.record_fill(dst.alloc.handle, offset, bytes, pattern);
}

void CommandQueue::end_op(bool force_commit) {
  stats_.ops++;
  if (capture_) {  // one recording: nothing is committed until the capture ends
    capture_->ops_++;
    return;
  }
  if (!recorded_) return;
  ops_in_list_++;
  const bool full = config_.ops_per_buffer <= 0 || ops_in_list_ >= config_.ops_per_buffer ||
                    (config_.bytes_per_buffer > 0 && bytes_in_list_ >= config_.bytes_per_buffer);
  if (force_commit || full) commit_locked();
}

void CommandQueue::commit_locked() {
  driver_.commit(submitted_ + 1);
  submitted_++;
  stats_.commits++;
  reset_list_locked();  // the next list starts after this one finished
  track_in_flight_locked();
}

void CommandQueue::reset_list_locked() {
  hazards_.reset();
  ops_in_list_ = 0;
  bytes_in_list_ = 0;
  recorded_ = false;
}

void CommandQueue::track_in_flight_locked() {
  in_flight_.push_back(submitted_);
  prune_locked();
  while (in_flight_.size() > config_.max_in_flight) {
    driver_.wait(in_flight_.front());
    in_flight_.pop_front();
    stats_.in_flight_waits++;
  }
}

void CommandQueue::prune_locked() {
  const uint64_t done = driver_.completed();
  while (!in_flight_.empty() && in_flight_.front() <= done) in_flight_.pop_front();
}

uint64_t CommandQueue::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  wait_for_capture(lock);
  if (capturing_self()) refuse_in_capture("a wait or read-back");
  if (recorded_) commit_locked();
  return submitted_;
}

void CommandQueue::wait(uint64_t id) {
  if (capturing_self() && id > submitted_) refuse_in_capture("a wait for a captured op");
  if (id > 0) driver_.wait(id);
  std::lock_guard<std::mutex> lock(mu_);
  prune_locked();
}

void CommandQueue::synchronize() {
  wait(flush());
}

// ---- capture and replay ------------------------------------------------------------------------

Capture::~Capture() {
  // The driver's recording may be pending still: it goes once its last replay finished.
  try {
    if (last_submission_ > 0 && !driver_.shutting_down()) driver_.wait(last_submission_);
  } catch (const Error&) {
  }
}

void CommandQueue::wait_for_capture(std::unique_lock<std::mutex>& lock) {
  capture_done_.wait(lock, [&] { return !capture_ || capturing_self(); });
}

void CommandQueue::refuse_in_capture(const char* what) const {
  fail(ErrorKind::Unsupported, "capture", what, " inside a capture on ", driver_.caps().name,
       ": captured ops do not run until replay(); read results after it");
}

void CommandQueue::capture_use(Buffer* b, Access access) {
  const auto [it, fresh] = capture_index_.try_emplace(b, capture_->buffers_.size());
  if (!fresh) return;
  BufferRef ref = b->self.lock();
  WICK_ASSERT(ref != nullptr);
  capture_->buffers_.push_back(std::move(ref));
  const bool reads = access == Access::Read || access == Access::ReadWrite;
  if (reads && b->generation < capture_generation_) capture_->inputs_.push_back(it->second);
}

void CommandQueue::begin_capture() {
  std::unique_lock<std::mutex> lock(mu_);
  wait_for_capture(lock);
  if (capture_)
    fail(ErrorKind::Unsupported, "capture", "a capture is running on this thread already");
  if (!driver_.can_capture())
    fail(ErrorKind::Unsupported, "capture", driver_.caps().name, " cannot record work for replay");
  if (recorded_) commit_locked();
  driver_.begin_capture();
  capture_.reset(new Capture(driver_));
  capture_thread_ = std::this_thread::get_id();
  capture_generation_ = next_buffer_generation();
}

std::unique_ptr<Capture> CommandQueue::end_capture() {
  std::unique_lock<std::mutex> lock(mu_);
  WICK_ASSERT(capturing_self());
  std::unique_ptr<Capture> c = std::move(capture_);
  capture_thread_ = std::thread::id();
  capture_index_.clear();
  reset_list_locked();
  capture_done_.notify_all();
  c->recording_ = driver_.end_capture();
  return c;
}

uint64_t CommandQueue::replay(Capture& c) {
  std::unique_lock<std::mutex> lock(mu_);
  wait_for_capture(lock);
  if (capturing_self()) refuse_in_capture("replaying a capture");
  WICK_ASSERT(c.recording_ != nullptr);
  for (size_t i : c.inputs_)
    if (c.buffers_[i].use_count() <= 1)
      fail(ErrorKind::Device, "replay", "a tensor the captured ops read (", c.buffers_[i]->capacity,
           " bytes) was freed after the capture; keep the inputs of a capture alive while it "
           "is replayed");
  if (recorded_) commit_locked();
  const uint64_t id = submitted_ + 1;
  for (const BufferRef& b : c.buffers_) b->last_use.store(id);
  driver_.replay(*c.recording_, id);
  submitted_ = id;
  c.last_submission_ = id;
  stats_.replays++;
  stats_.replayed_dispatches += c.dispatches_;
  track_in_flight_locked();
  return id;
}

CommandQueue::Stats CommandQueue::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.in_flight = in_flight_.size();
  return s;
}

}  // namespace wick::gpu
