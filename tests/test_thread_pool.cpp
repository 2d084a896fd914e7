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

}  // namespace
}  // namespace wick::cpu
