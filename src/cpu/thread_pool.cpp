#include "cpu/thread_pool.h"

#include <chrono>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WICK_CPU_RELAX() _mm_pause()
#else
#define WICK_CPU_RELAX() std::this_thread::yield()
#endif

namespace wick::cpu {

namespace {

thread_local bool t_in_chunk = false;

// How long an idle worker polls for the next job before it sleeps: ops in a model come back to back
// a few microseconds apart, and a wake-up through the kernel costs about as much as a small op.
constexpr auto kSpin = std::chrono::microseconds(200);

int configured_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env && *env) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && n >= 1) return static_cast<int>(std::min<long>(n, 1024));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool(configured_threads());
  return pool;
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 0; i + 1 < threads; i++) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool ThreadPool::claim_and_run(uint64_t generation) {
  bool ran = false;
  uint64_t t = ticket_.load(std::memory_order_acquire);
  while ((t >> 32) == generation) {
    // The chunk count is the ticket's own: a worker that read a finished job's ticket and then
    // stalled can never claim a chunk of the next one (when the count was a field of its own,
    // a worker that read it while the next job was being published took a chunk of that job
    // against the old ticket: the chunk ran twice and its caller could return while it ran).
    const auto chunk = static_cast<int64_t>(t & kChunkMask);
    if (chunk >= static_cast<int64_t>((t >> 16) & kChunkMask)) break;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;
    // The chunk is ours: the job cannot finish (and its fields cannot change) before we count it.
    t_in_chunk = true;
    try {
      fn_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), chunk);
    } catch (...) {  // kept for the caller; the other chunks still run (they share its stack)
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_in_chunk = false;
    done_.fetch_add(1, std::memory_order_acq_rel);
    ran = true;
    t = ticket_.load(std::memory_order_acquire);
  }
  return ran;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;  // generation of the last job this worker looked at
  while (true) {
    uint64_t gen = ticket_.load(std::memory_order_acquire) >> 32;
    if (gen == seen) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      // The clock is read every 64 pauses: read at every one, clock_gettime was 9% of a
      // 2-thread decode's samples, in the core a waiting worker shares with other threads.
      uint32_t spins = 0;
      while ((gen = ticket_.load(std::memory_order_acquire) >> 32) == seen &&
             !stop_.load(std::memory_order_relaxed)) {
        if (++spins % 64 == 0 && std::chrono::steady_clock::now() > until) {
          std::unique_lock<std::mutex> lock(sleep_mutex_);
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          wake_.wait(lock, [&] {
            return stop_.load() || (ticket_.load(std::memory_order_seq_cst) >> 32) != seen;
          });
          sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
        WICK_CPU_RELAX();
      }
      if (stop_.load()) return;
    }
    seen = gen;
    if (index < helpers_.load(std::memory_order_acquire)) claim_and_run(gen);
  }
}

void ThreadPool::run(int64_t n_chunks, int helpers, ChunkFn fn, void* ctx) {
  if (n_chunks <= 0) return;
  if (t_in_chunk || workers_.empty() || helpers <= 0 || n_chunks == 1) {
    for (int64_t c = 0; c < n_chunks; c++) fn(ctx, c);
    return;
  }
  if (n_chunks > static_cast<int64_t>(kChunkMask)) {  // beyond what a ticket counts: in parts
    std::exception_ptr first_error;  // every part runs, as every chunk of one job does
    for (int64_t first = 0; first < n_chunks; first += kChunkMask) {
      struct Part {
        ChunkFn fn;
        void* ctx;
        int64_t first;
      } part{fn, ctx, first};
      try {
        run(
            std::min<int64_t>(kChunkMask, n_chunks - first), helpers,
            [](void* p, int64_t c) {
              const Part& x = *static_cast<const Part*>(p);
              x.fn(x.ctx, x.first + c);
            },
            &part);
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
    }
    if (first_error) std::rethrow_exception(first_error);
    return;
  }
  std::lock_guard<std::mutex> job(run_mutex_);
  uint64_t gen = ((ticket_.load(std::memory_order_relaxed) >> 32) + 1) & 0xffffffffu;
  if (gen == 0) gen = 1;  // workers start having seen generation 0
  error_ = nullptr;
  fn_.store(fn, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  helpers_.store(helpers, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  // Publishes the fields above.
  ticket_.store(gen << 32 | static_cast<uint64_t>(n_chunks) << 16, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(sleep_mutex_); }
    wake_.notify_all();
  }
  claim_and_run(gen);
  // Every chunk is claimed; wait for those other threads are still running.
  while (done_.load(std::memory_order_acquire) < n_chunks) WICK_CPU_RELAX();
  if (error_) std::rethrow_exception(error_);
}

}  // namespace wick::cpu
