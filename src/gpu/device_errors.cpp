#include "gpu/device_errors.h"

#include <cstring>

#include "shared/params.h"
#include "wick/dtype.h"
#include "wick/error.h"

namespace wick::gpu {

BufferRef DeviceErrors::acquire() {
  BufferRef r = pool_.acquire(16);  // host-visible: only buffers no submission still uses
  std::memset(r->alloc.mapped, 0, 16);
  return r;
}

void DeviceErrors::add(BufferRef record, uint64_t submission, const char* op, std::string context) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sink_ && sink_thread_ == std::this_thread::get_id()) {
    sink_->push_back({std::move(record), op, std::move(context)});
    return;
  }
  pending_.push_back(
      {std::move(record), submission, std::this_thread::get_id(), op, std::move(context)});
}

void DeviceErrors::divert(std::vector<CapturedRecord>* sink) {
  std::lock_guard<std::mutex> lock(mu_);
  sink_ = sink;
  sink_thread_ = std::this_thread::get_id();
}

size_t DeviceErrors::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

void DeviceErrors::raise_finished(uint64_t done) {
  const std::thread::id me = std::this_thread::get_id();
  bool failed = false;
  Pending first;
  uint32_t words[4] = {};
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t kept = 0;
    for (size_t i = 0; i < pending_.size(); i++) {
      Pending& p = pending_[i];
      bool keep = p.submission > done;
      if (!keep) {
        uint32_t w[4];
        std::memcpy(w, p.record->alloc.mapped, sizeof w);
        if (w[0] != 0 && p.thread != me) {
          keep = true;  // another thread's error: it raises it at its own wait
        } else if (w[0] != 0 && !failed) {
          failed = true;
          first = std::move(p);
          std::memcpy(words, w, sizeof w);
        }
      }
      if (keep) {
        if (kept != i) pending_[kept] = std::move(p);
        kept++;
      }
    }
    pending_.resize(kept);
  }
  if (failed) raise(first, words);
}

void DeviceErrors::raise(const Pending& p, const uint32_t w[4]) {
  const uint64_t a = static_cast<uint64_t>(w[1]) | static_cast<uint64_t>(w[2]) << 32;
  if (w[0] == WICK_ERROR_INT_DIV_BY_ZERO)
    fail(ErrorKind::OutOfRange, p.op, "integer division by zero in ", p.context,
         p.context.empty() ? "" : " ", dtype_name(static_cast<DType>(w[1])));
  if (w[0] == WICK_ERROR_CACHE_POSITION)  // the context names the token count
    fail(ErrorKind::OutOfRange, p.op, "position ", a, " + ", p.context, " exceeds the cache of ",
         w[3], " positions");
  if (w[0] == WICK_ERROR_KEY_LIMIT)
    fail(ErrorKind::OutOfRange, p.op, "a query attends to ", a,
         " cache rows, more than options.max_keys = ", w[3]);
  if (w[0] == WICK_ERROR_CACHE_SLOT)
    fail(ErrorKind::OutOfRange, p.op, "cache slot ", a, " is beyond the caches' ", w[3], " slots");
  // Index errors: a is the index as the kernel read it (a negative i64 in two's complement).
  fail(ErrorKind::OutOfRange, p.op, "index ", static_cast<int64_t>(a),
       " out of range for a dim of size ", w[3]);
}

}  // namespace wick::gpu
