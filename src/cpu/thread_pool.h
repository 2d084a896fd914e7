// The CPU backend's worker threads. parallel_for (parallel.h) splits a range into chunks that the
// caller and the workers claim one at a time from a shared counter; the caller then waits only for
// chunks another thread has claimed. A worker that is slow to wake — on a machine with more
// runnable threads than cores it may not run for milliseconds — claims nothing and costs nothing,
// where a fork/join barrier (OpenMP's) would stall every op until it ran.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace wick::cpu {

class ThreadPool {
 public:
  // Runs fn(ctx, c) for every chunk c in [0, n_chunks) on the calling thread and up to
  // `helpers` workers; returns when every chunk has run. Calls from several threads at once are
  // serialised; a call made from inside a chunk runs inline.
  using ChunkFn = void (*)(void* ctx, int64_t chunk);
  void run(int64_t n_chunks, int helpers, ChunkFn fn, void* ctx);

  // Threads that run chunks: workers plus the caller. The pool has OMP_NUM_THREADS (else the
  // hardware's) threads; set_threads lowers or restores the number used (tests, benchmarks).
  int threads() const { return std::min(limit_.load(std::memory_order_relaxed), pool_threads()); }
  int pool_threads() const { return static_cast<int>(workers_.size()) + 1; }
  void set_threads(int n) { limit_.store(n < 1 ? 1 : n, std::memory_order_relaxed); }

  static ThreadPool& instance();
  ~ThreadPool();

 private:
  explicit ThreadPool(int threads);
  void worker_loop(int index);
  bool claim_and_run(uint64_t generation);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time
  // The job: (generation << 32) | (chunks << 16) | next unclaimed chunk. A claim is a
  // compare-exchange on all three, so a worker holding a stale ticket can never claim a chunk of
  // a later job, and one that succeeds holds a chunk of a job whose caller still waits.
  static constexpr uint64_t kChunkMask = 0xffff;  // the most chunks a ticket holds
  std::atomic<uint64_t> ticket_{0};
  std::atomic<ChunkFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<int> helpers_{0};  // workers with index < helpers_ take part in this job
  std::atomic<int64_t> done_{0};
  // Sleeping workers are woken through these after a job is published.
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> limit_{1 << 20};
  std::mutex error_mutex_;
  std::exception_ptr error_;  // the first exception a chunk threw in the current job
};

}  // namespace wick::cpu
