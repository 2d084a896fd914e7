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
  hazards_.reset();  // the next list starts after this one finished
  ops_in_list_ = 0;
  bytes_in_list_ = 0;
  recorded_ = false;
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
  std::lock_guard<std::mutex> lock(mu_);
  if (recorded_) commit_locked();
  return submitted_;
}

void CommandQueue::wait(uint64_t id) {
  if (id > 0) driver_.wait(id);
  std::lock_guard<std::mutex> lock(mu_);
  prune_locked();
}

void CommandQueue::synchronize() {
  wait(flush());
}

CommandQueue::Stats CommandQueue::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.in_flight = in_flight_.size();
  return s;
}

}  // namespace wick::gpu
