// The CPU thread pool behind parallel_for: every index exactly once, nested calls, concurrent
// callers, exceptions, and the thread limit.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>

#include "cpu/parallel.h"

namespace wick::cpu {
namespace {

void expect_each_index_once(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int> ranges{0};
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    ASSERT_LT(b, e);
    ranges++;
    for (int64_t i = b; i < e; i++) hits[static_cast<size_t>(i)]++;
  });
  for (int64_t i = 0; i < n; i++)
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " index " << i;
  EXPECT_GE(ranges.load(), n > 0 ? 1 : 0);
}

TEST(ThreadPool, EveryIndexExactlyOnce) {
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 100003})
    for (int64_t grain : {1, 3, 64, 5000}) expect_each_index_once(n, grain);
}

TEST(ThreadPool, UsesSeveralThreadsWhenAllowed) {
  ThreadPool& pool = ThreadPool::instance();
  if (pool.pool_threads() < 2) GTEST_SKIP() << "one hardware thread";
  // Chunks that wait for each other can only finish when two threads run them at once.
  std::atomic<int> arrived{0};
  std::set<std::thread::id> ids;
  std::mutex m;
  parallel_for(2, 1, [&](int64_t, int64_t) {
    arrived++;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(arrived.load(), 2);
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPool, ThreadLimitOfOneRunsOnTheCaller) {
  ThreadPool& pool = ThreadPool::instance();
  const int saved = pool.threads();
  pool.set_threads(1);
  EXPECT_EQ(max_threads(), 1);
  const auto me = std::this_thread::get_id();
  bool all_here = true;
  parallel_for(1000, 1,
               [&](int64_t, int64_t) { all_here = all_here && std::this_thread::get_id() == me; });
  pool.set_threads(saved);
  EXPECT_TRUE(all_here);
}

TEST(ThreadPool, NestedAndConcurrentCalls) {
  std::atomic<int64_t> total{0};
  auto work = [&] {
    for (int rep = 0; rep < 50; rep++)
      parallel_for(16, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; i++)
          parallel_for(10, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
      });
  };
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; t++) callers.emplace_back(work);
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * 16 * 10);
}

TEST(ThreadPool, AnExceptionReachesTheCallerAfterEveryChunkRan) {
  std::atomic<int64_t> covered{0};
  EXPECT_THROW(parallel_for(1000, 1,
                            [&](int64_t b, int64_t e) {
                              covered += e - b;
                              if (b == 0) throw std::runtime_error("chunk failed");
                            }),
               std::runtime_error);
  EXPECT_EQ(covered.load(), 1000);
  expect_each_index_once(100, 1);  // the pool still works
}

TEST(ThreadPool, MoreChunksThanATicketCountsRunInParts) {
  ThreadPool& pool = ThreadPool::instance();
  constexpr int64_t n = 70001;  // above the 65535 chunks a job's ticket holds
  std::vector<std::atomic<int>> hits(n);
  struct Ctx {
    std::vector<std::atomic<int>>* hits;
  } ctx{&hits};
  pool.run(
      n, pool.threads() - 1,
      [](void* p, int64_t c) { (*static_cast<Ctx*>(p)->hits)[static_cast<size_t>(c)]++; }, &ctx);
  for (int64_t c = 0; c < n; c++) ASSERT_EQ(hits[static_cast<size_t>(c)].load(), 1) << c;
  // An error in one part still lets the others run before it reaches the caller.
  std::atomic<int64_t> ran{0};
  struct Failing {
    std::atomic<int64_t>* ran;
  } failing{&ran};
  EXPECT_THROW(pool.run(
                   n, pool.threads() - 1,
                   [](void* p, int64_t c) {
                     (*static_cast<Failing*>(p)->ran)++;
                     if (c == 3) throw std::runtime_error("chunk 3 failed");
                   },
                   &failing),
               std::runtime_error);
  EXPECT_EQ(ran.load(), n);
}

// Back-to-back jobs of different sizes while other threads compete for the cores, so that workers
// are preempted anywhere, including between reading a finished job's ticket and its chunk count
// while the next job is being published (a stale worker once claimed a chunk of the next job
// that way: that chunk ran twice, and its caller could return while it still ran). Every chunk
// must run exactly once, on its own job, while that job's caller waits. (With the chunk count
// outside the ticket, every run of this test on the 2-vCPU build machine found chunks run twice
// among its ~3 million jobs; rivals that only spin preempt too rarely to find it.)
TEST(ThreadPool, BackToBackJobsUnderPreemptionRunEachChunkOnce) {
  ThreadPool& pool = ThreadPool::instance();
  if (pool.pool_threads() < 2) GTEST_SKIP() << "one hardware thread";
  std::atomic<bool> stop{false};
  std::vector<std::thread> rivals;  // more runnable threads than cores, waking up often
  for (unsigned i = 0; i < 2 * std::max(2u, std::thread::hardware_concurrency()); i++)
    rivals.emplace_back([&, i] {
      for (uint32_t k = i; !stop.load(std::memory_order_relaxed); k++) {
        const auto busy = std::chrono::steady_clock::now() + std::chrono::microseconds(k % 50);
        while (std::chrono::steady_clock::now() < busy) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(k % 70));
      }
    });
  constexpr int64_t kMaxChunks = 12;
  std::atomic<int> hits[kMaxChunks];
  std::atomic<int64_t> live_job{-1};
  std::atomic<int64_t> wrong_job{0}, repeats{0}, missing{0};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int64_t job = 0;
  for (; std::chrono::steady_clock::now() < until; job++) {
    const int64_t n = 2 + job * 7 % (kMaxChunks - 1);  // sizes that grow and shrink
    for (int64_t c = 0; c < n; c++) hits[c].store(0, std::memory_order_relaxed);
    live_job.store(job);
    const int64_t mine = job;
    parallel_for(n, 1, [&, mine](int64_t b, int64_t e) {
      if (live_job.load() != mine) wrong_job++;
      for (int64_t c = b; c < e; c++)
        if (hits[c].fetch_add(1) != 0) repeats++;
    });
    live_job.store(-1);
    for (int64_t c = 0; c < n; c++)
      if (hits[c].load() != 1) missing++;
  }
  stop = true;
  for (std::thread& t : rivals) t.join();
  EXPECT_EQ(wrong_job.load(), 0) << "chunks that ran outside their job, of " << job << " jobs";
  EXPECT_EQ(repeats.load(), 0) << "chunks that ran twice, of " << job << " jobs";
  EXPECT_EQ(missing.load(), 0) << "chunks not run once when their job returned";
}

}  // namespace
}  // namespace wick::cpu
