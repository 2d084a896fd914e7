// The gpu/ runtime (HazardTracker, CommandQueue, BufferPool, KernelCache, DiskCache) against a
// scripted fake driver: the mechanisms are checked without a GPU, event by event.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "gpu/buffer_pool.h"
#include "gpu/command_queue.h"
#include "gpu/disk_cache.h"
#include "gpu/hazard_tracker.h"
#include "gpu/kernel_cache.h"
#include "gpu_fake_driver.h"

namespace wick::testing {
namespace {

using gpu::Access;
using gpu::BufferRef;
using gpu::MemoryKind;

// ---- hazard rules -----------------------------------------------------------------------------

TEST(GpuHazardTracker, BarrierOnlyOnConflict) {
  gpu::HazardTracker h;
  const uint64_t a = 1, b = 2, c = 3, d = 4, x = 5, y = 6;
  auto check = [&](std::vector<uint64_t> r, std::vector<uint64_t> w) {
    const bool need = h.needs_barrier(r, w);
    if (need) h.barrier();
    h.record(r, w);
    return need;
  };
  EXPECT_FALSE(check({a, b}, {x}));  // x = a + b
  EXPECT_FALSE(check({c, d}, {y}));  // y = c + d: independent
  EXPECT_FALSE(check({a, c}, {}));   // reading what others read: fine
  EXPECT_EQ(h.barrier_count(), 0u);
  EXPECT_TRUE(check({x}, {a}));  // RAW on x (and WAR on a)
  EXPECT_EQ(h.barrier_count(), 1u);
  // After the barrier only the new access counts: y was written before it.
  EXPECT_FALSE(check({y}, {b}));
  EXPECT_TRUE(check({}, {y}));  // WAR: y was just read
  EXPECT_TRUE(check({}, {y}));  // WAW
  EXPECT_EQ(h.barrier_count(), 3u);
  h.reset();
  EXPECT_FALSE(h.needs_barrier(std::vector<uint64_t>{y}, std::vector<uint64_t>{y}));
}

// ---- command queue ----------------------------------------------------------------------------

struct QueueFixture : ::testing::Test {
  FakeDriver driver;
  gpu::BufferPool pool{driver, {MemoryKind::DeviceLocal, gpu::PoolRounding::BestFit}};
  FakeDriver::FakePipeline pipeline;

  // One op: out = f(ins...), as a single dispatch.
  void op(gpu::CommandQueue& q, std::vector<BufferRef> ins, const BufferRef& out) {
    q.record([&](gpu::CommandQueue::Recorder& r) {
      std::vector<gpu::BufferAccess> args;
      for (auto& b : ins) args.push_back({b.get(), Access::Read});
      args.push_back({out.get(), Access::Write});
      r.dispatch(pipeline, args, {}, {1, 1, 1});
    });
  }
  // Kinds of the recorded events, e.g. "dispatch barrier dispatch commit".
  std::string trace() const {
    std::string s;
    for (const auto& e : driver.events()) s += (s.empty() ? "" : " ") + e.kind;
    return s;
  }
};

TEST_F(QueueFixture, IndependentDispatchesGetNoBarrier) {
  gpu::CommandQueue q(driver, {.ops_per_buffer = 100});
  auto a = pool.acquire(64), b = pool.acquire(64), c = pool.acquire(64), d = pool.acquire(64);
  auto x = pool.acquire(64), y = pool.acquire(64);
  op(q, {a, b}, x);
  op(q, {c, d}, y);
  EXPECT_EQ(q.stats().barriers, 0u);
  EXPECT_EQ(trace(), "dispatch dispatch");
}

TEST_F(QueueFixture, DependentDispatchGetsOneBarrier) {
  gpu::CommandQueue q(driver, {.ops_per_buffer = 100});
  auto a = pool.acquire(64), b = pool.acquire(64), c = pool.acquire(64);
  auto x = pool.acquire(64), y = pool.acquire(64);
  op(q, {a, b}, x);  // x = a + b
  op(q, {x, c}, y);  // y = x * c
  EXPECT_EQ(q.stats().barriers, 1u);
  EXPECT_EQ(trace(), "dispatch barrier dispatch");
  q.synchronize();
  EXPECT_EQ(trace(), "dispatch barrier dispatch commit");
}

TEST_F(QueueFixture, ReusedBufferGetsWriteAfterReadBarrier) {
  // A tensor dropped while queued work still reads it: the pool hands its buffer to the next op,
  // and the hazard tracker orders the new write after the queued read.
  gpu::CommandQueue q(driver, {.ops_per_buffer = 100});
  auto a = pool.acquire(64), y = pool.acquire(64);
  auto t = pool.acquire(64);
  const uint64_t t_handle = t->alloc.handle;
  op(q, {t}, y);  // reads t
  t.reset();      // dropped; only queued work refers to it now
  auto z = pool.acquire(64);
  ASSERT_EQ(z->alloc.handle, t_handle) << "the pool should reuse the dropped buffer";
  op(q, {a}, z);  // writes the same buffer
  EXPECT_EQ(q.stats().barriers, 1u);
  EXPECT_EQ(trace(), "dispatch barrier dispatch");
}

TEST_F(QueueFixture, CopiesAndFillsAreTrackedToo) {
  gpu::CommandQueue q(driver, {.ops_per_buffer = 100});
  auto a = pool.acquire(64), b = pool.acquire(64), c = pool.acquire(64);
  q.record([&](auto& r) { r.fill(*a, 0, 64, 0); });
  q.record([&](auto& r) { r.fill(*c, 0, 64, 0); });      // independent
  q.record([&](auto& r) { r.copy(*a, 0, *b, 0, 64); });  // reads a: RAW
  EXPECT_EQ(trace(), "fill fill barrier copy");
}

TEST_F(QueueFixture, OrderAcrossCommandListsNeedsNoBarrier) {
  // Committing between x = a + b and y = x * c: the second list starts after the first finished
  // (driver contract), so the tracker starts clean and no barrier is recorded.
  gpu::CommandQueue q(driver, {.ops_per_buffer = 1});
  auto a = pool.acquire(64), b = pool.acquire(64), c = pool.acquire(64);
  auto x = pool.acquire(64), y = pool.acquire(64);
  op(q, {a, b}, x);
  op(q, {x, c}, y);
  EXPECT_EQ(q.stats().barriers, 0u);
  EXPECT_EQ(trace(), "dispatch commit dispatch commit");
  EXPECT_EQ(driver.bad_ids(), 0);
}

TEST_F(QueueFixture, CommitsEveryNOps) {
  for (int64_t n : {0, 1, 3, 50}) {
    SCOPED_TRACE(n);
    FakeDriver drv;
    gpu::BufferPool p(drv, {});
    gpu::CommandQueue q(drv, {.ops_per_buffer = n});
    auto a = p.acquire(64), x = p.acquire(64);
    for (int i = 0; i < 100; i++)
      q.record([&](auto& r) {
        r.dispatch(pipeline, {{a.get(), Access::Read}, {x.get(), Access::Write}}, {}, {1, 1, 1});
      });
    const uint64_t per = n <= 0 ? 1 : static_cast<uint64_t>(n);
    EXPECT_EQ(q.stats().commits, 100 / per);
    // Each commit closes exactly `per` dispatches.
    int since = 0;
    for (const auto& e : drv.events()) {
      if (e.kind == "dispatch") since++;
      if (e.kind == "commit") {
        EXPECT_EQ(since, static_cast<int>(per));
        since = 0;
      }
    }
  }
}

TEST_F(QueueFixture, CommitsOnBytesWritten) {
  gpu::CommandQueue q(driver, {.ops_per_buffer = 1000, .bytes_per_buffer = 4096});
  auto a = pool.acquire(1024), x = pool.acquire(1024);
  for (int i = 0; i < 8; i++) op(q, {a}, x);  // 1 KiB written per op
  EXPECT_EQ(q.stats().commits, 2u);
}

TEST_F(QueueFixture, InFlightListIsBounded) {
  driver.auto_complete = false;  // the "GPU" finishes nothing unless waited on
  gpu::CommandQueue q(driver, {.ops_per_buffer = 1, .max_in_flight = 4});
  auto a = pool.acquire(64), x = pool.acquire(64);
  for (int i = 0; i < 100; i++) {
    op(q, {a}, x);
    EXPECT_LE(q.stats().in_flight, 4u);
  }
  const auto s = q.stats();
  EXPECT_EQ(s.commits, 100u);
  EXPECT_EQ(s.in_flight_waits, 96u);
  // Back-pressure waits on the oldest submission, in order.
  const auto waited = driver.waited();
  ASSERT_EQ(waited.size(), 96u);
  for (size_t i = 0; i < waited.size(); i++) EXPECT_EQ(waited[i], i + 1);
}

TEST_F(QueueFixture, SubmitReturnsTheListHoldingTheOp) {
  // Read-back protocol: the id returned is the one whose commit follows the op's copy, so waiting
  // for it cannot return before the copy ran, whatever other threads commit meanwhile.
  driver.auto_complete = false;
  gpu::CommandQueue q(driver, {.ops_per_buffer = 3});
  constexpr int kThreads = 4, kIters = 50;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::map<uint64_t, uint64_t> staging_to_id;  // staging handle -> id returned
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIters; i++) {
        auto src = pool.acquire(64), staging = pool.acquire(64);
        op(q, {src}, src);
        const uint64_t id = q.record_and_submit([&](auto& r) { r.copy(*src, 0, *staging, 0, 64); });
        q.wait(id);
        EXPECT_GE(driver.completed(), id);
        std::lock_guard<std::mutex> lock(mu);
        staging_to_id[staging->alloc.handle] = std::max(staging_to_id[staging->alloc.handle], id);
      }
    });
  }
  for (auto& t : threads) t.join();
  // Every copy was committed in a submission <= the id its thread waited for.
  uint64_t current = 1;
  std::map<uint64_t, uint64_t> copy_list;  // staging handle -> last list its copy was in
  for (const auto& e : driver.events()) {
    if (e.kind == "copy") copy_list[e.handles[1]] = current;
    if (e.kind == "commit") current = e.handles[0] + 1;
  }
  for (const auto& [h, list] : copy_list) EXPECT_LE(list, staging_to_id[h]);
  EXPECT_EQ(driver.bad_ids(), 0);
}

TEST_F(QueueFixture, RecordedBuffersAreTaggedWithTheirSubmission) {
  gpu::CommandQueue q(driver, {.ops_per_buffer = 2});
  auto a = pool.acquire(64), x = pool.acquire(64), y = pool.acquire(64);
  op(q, {a}, x);
  EXPECT_EQ(x->last_use.load(), 1u);
  op(q, {a}, y);  // second op: commits list 1
  op(q, {y}, x);  // lands in list 2
  EXPECT_EQ(a->last_use.load(), 1u);
  EXPECT_EQ(x->last_use.load(), 2u);
  EXPECT_EQ(y->last_use.load(), 2u);
}

TEST_F(QueueFixture, SynchronizeWaitsForTheLatestOnly) {
  driver.auto_complete = false;
  gpu::CommandQueue q(driver, {.ops_per_buffer = 1});
  auto a = pool.acquire(64), x = pool.acquire(64);
  for (int i = 0; i < 5; i++) op(q, {a}, x);
  q.synchronize();
  EXPECT_EQ(driver.completed(), 5u);
  EXPECT_EQ(driver.waited(), (std::vector<uint64_t>{5}));
  EXPECT_EQ(q.stats().in_flight, 0u);
}

// ---- buffer pool ------------------------------------------------------------------------------

TEST(GpuBufferPool, TwoByteRequestIsNotRoundedDown) {
  // The seed's PR #3394: (size - 1).next_power_of_two() gave a 2-byte request 1 byte.
  for (auto rounding : {gpu::PoolRounding::PowerOfTwo, gpu::PoolRounding::BestFit}) {
    FakeDriver drv;
    gpu::BufferPool pool(drv, {.rounding = rounding});
    EXPECT_GE(pool.capacity_for(2), 2u);
    EXPECT_GE(pool.capacity_for(1), 1u);
    auto b = pool.acquire(2);
    EXPECT_GE(b->capacity, 2u);
    EXPECT_GE(b->alloc.size, 2u);
  }
  FakeDriver drv;
  gpu::BufferPool pow2(drv, {.rounding = gpu::PoolRounding::PowerOfTwo});
  EXPECT_EQ(pow2.capacity_for(2), 2u);
  EXPECT_EQ(pow2.capacity_for(3), 4u);
  EXPECT_EQ(pow2.capacity_for(1025), 2048u);
  EXPECT_EQ(pow2.capacity_for(4096), 4096u);
}

TEST(GpuBufferPool, ReusesOnlyWhenNoTensorHoldsIt) {
  FakeDriver drv;
  gpu::BufferPool pool(drv, {});
  auto a = pool.acquire(1000);
  auto b = pool.acquire(1000);
  EXPECT_NE(a->alloc.handle, b->alloc.handle);
  const uint64_t ha = a->alloc.handle;
  auto a2 = a;  // a view of the same storage
  a.reset();
  auto c = pool.acquire(1000);
  EXPECT_NE(c->alloc.handle, ha) << "still held by a view";
  a2.reset();
  auto d = pool.acquire(1000);
  EXPECT_EQ(d->alloc.handle, ha);
  EXPECT_EQ(pool.stats().reuses, 1u);
  EXPECT_EQ(drv.allocations(), 3u);
}

TEST(GpuBufferPool, BestFitBoundsWaste) {
  FakeDriver drv;
  gpu::BufferPool pool(
      drv, {.rounding = gpu::PoolRounding::BestFit, .alignment = 256, .max_waste = 4096});
  pool.acquire(100000).reset();     // one free buffer of 100096 bytes
  auto small = pool.acquire(1000);  // would waste 99 KB: not reused
  EXPECT_EQ(pool.stats().reuses, 0u);
  auto near = pool.acquire(99000);  // wastes 1 KB < max_waste: reused
  EXPECT_EQ(pool.stats().reuses, 1u);
  EXPECT_GE(near->capacity, 99000u);
}

TEST(GpuBufferPool, HostVisibleWaitsForTheGpu) {
  FakeDriver drv;
  drv.auto_complete = false;
  gpu::BufferPool pool(drv, {.kind = MemoryKind::HostVisible});
  auto a = pool.acquire(512);
  const uint64_t ha = a->alloc.handle;
  a->last_use = 1;  // submission 1 reads it and has not finished
  a.reset();
  auto b = pool.acquire(512);
  EXPECT_NE(b->alloc.handle, ha) << "the host would overwrite memory the GPU still reads";
  drv.finish(1);
  auto c = pool.acquire(512);
  EXPECT_EQ(c->alloc.handle, ha);
}

TEST(GpuBufferPool, TrimFreesOnlyFinishedUnusedBuffersOldestFirst) {
  FakeDriver drv;
  drv.auto_complete = false;
  gpu::BufferPool pool(drv, {.rounding = gpu::PoolRounding::BestFit, .limit = 1ull << 30});
  auto a = pool.acquire(1024), b = pool.acquire(1024), c = pool.acquire(1024),
       d = pool.acquire(1024);
  const uint64_t hb = b->alloc.handle, hc = c->alloc.handle;
  c->last_use = 7;  // still in flight
  a.reset();        // freed first
  b.reset();
  c.reset();
  pool.trim(2048);  // keep two buffers' worth
  EXPECT_EQ(pool.stats().frees, 1u) << "a, the oldest free buffer, goes first";
  EXPECT_EQ(pool.stats().free_bytes, 2048u);
  EXPECT_EQ(drv.live_buffers(), 3u);  // b, c, d
  pool.trim(0);
  EXPECT_EQ(drv.live_buffers(), 2u) << "c is still in flight, d is held";
  drv.finish(7);
  pool.trim(0);
  EXPECT_EQ(drv.live_buffers(), 1u);
  auto again = pool.acquire(1024);
  EXPECT_NE(again->alloc.handle, hb);
  EXPECT_NE(again->alloc.handle, hc);
  EXPECT_EQ(drv.double_frees(), 0);
}

// Memory other code allocated (Tensor::from_blob on a GPU) goes back to its owner, never to the
// free list, and only once no submission uses it: else the owner could reuse it under wick's work.
TEST(GpuBufferPool, AdoptedMemoryGoesBackToItsOwnerOnceNoSubmissionUsesIt) {
  FakeDriver drv;
  drv.auto_complete = false;
  int released = 0;
  auto owner = [&] { return std::shared_ptr<void>(&released, [](int* n) { ++*n; }); };
  {
    gpu::BufferPool pool(drv, {});
    auto a = pool.adopt(drv.adopt(0x10000, 4096), owner());
    EXPECT_EQ(a->capacity, 4096u);
    EXPECT_EQ(drv.device_address(a->alloc), 0x10000u);
    a->last_use = 3;  // submission 3 uses it and has not finished
    a.reset();
    EXPECT_EQ(released, 0) << "the owner would take memory back that the GPU still uses";
    pool.trim(0);
    EXPECT_EQ(released, 0);
    auto fresh = pool.acquire(4096);  // never from the free list
    EXPECT_EQ(drv.allocations(), 1u);
    drv.finish(3);
    pool.trim();  // at the next synchronization or read-back
    EXPECT_EQ(released, 1);
    EXPECT_EQ(drv.forgotten(), 1u);
    // Not in flight: back at once. Without an owner, the driver forgets it all the same.
    pool.adopt(drv.adopt(0x20000, 64), owner()).reset();
    EXPECT_EQ(released, 2);
    pool.adopt(drv.adopt(0x30000, 64), nullptr).reset();
    EXPECT_EQ(drv.adopted_buffers(), 0u);
    EXPECT_EQ(pool.stats().in_use_bytes, fresh->capacity) << "adopted memory is not the pool's";
    // One still in flight when the pool closes (its device synchronized first) goes back then.
    auto late = pool.adopt(drv.adopt(0x40000, 64), owner());
    late->last_use = 9;
    late.reset();
    EXPECT_EQ(released, 2);
  }
  EXPECT_EQ(released, 3);
  EXPECT_EQ(drv.double_frees(), 0);
  EXPECT_EQ(drv.adopted_buffers(), 0u);
}

TEST(GpuBufferPool, BudgetTrimsWhenExceeded) {
  FakeDriver drv;
  const uint64_t limit = 64 << 10;
  gpu::BufferPool pool(drv, {.rounding = gpu::PoolRounding::BestFit, .limit = limit});
  // Many distinct sizes: nothing is reusable, so unused memory piles up unless trimmed.
  for (size_t i = 1; i <= 200; i++) {
    pool.acquire(i * 4096).reset();
    EXPECT_LE(pool.stats().free_bytes, limit + i * 4096);
  }
  EXPECT_LE(drv.live_bytes(), limit + 200 * 4096);
}

// The budget holds between synchronisations: a burst of buffers dropped before the next
// read-back is trimmed as they come back (once their last use finished), not at the next sync.
TEST(GpuBufferPool, TheBudgetHoldsAsBuffersComeBack) {
  FakeDriver drv;
  drv.auto_complete = false;
  const uint64_t limit = 64 << 10;
  gpu::BufferPool pool(drv, {.rounding = gpu::PoolRounding::BestFit, .limit = limit});
  gpu::BufferRef last = pool.acquire(1);
  std::vector<gpu::BufferRef> burst;
  for (size_t i = 1; i <= 64; i++) burst.push_back(pool.acquire(i * 4096));
  for (size_t i = 0; i < burst.size(); i++) burst[i]->last_use = i < 32 ? 3 : 0;
  burst.clear();  // all back at once, no sync
  EXPECT_GT(pool.stats().free_bytes, limit) << "the first half is still in flight";
  const uint64_t in_flight = pool.stats().free_bytes;
  EXPECT_LE(in_flight, limit + 32 * 33 / 2 * 4096 + 64 * 4096);
  drv.finish(3);
  last.reset();  // the next buffer to come back trims, once the work finished
  EXPECT_LE(pool.stats().free_bytes, limit);
  EXPECT_LE(drv.live_bytes(), limit + 256);
}

TEST(GpuBufferPool, RetriesAfterTrimWhenOutOfMemory) {
  FakeDriver drv;
  gpu::BufferPool pool(drv, {.limit = 1ull << 30});
  pool.acquire(1 << 20).reset();
  drv.fail_next_allocations(1);
  auto b = pool.acquire(4 << 20);  // first driver allocation fails; the pool frees and retries
  EXPECT_TRUE(b);
  EXPECT_EQ(pool.stats().frees, 1u);
}

// Memory held while looping over varying sizes stays bounded (the 10,000-iteration case).
TEST(GpuBufferPool, MemoryStaysBoundedOverALongLoop) {
  FakeDriver drv;
  gpu::BufferPool pool(drv, {.limit = 8 << 20});
  std::mt19937 gen(7);
  std::vector<BufferRef> live;
  for (int i = 0; i < 10000; i++) {
    live.push_back(pool.acquire(1 + gen() % (256 << 10)));
    if (live.size() > 16) live.erase(live.begin() + static_cast<long>(gen() % live.size()));
    if (i % 100 == 99) pool.trim();
  }
  const auto s = pool.stats();
  EXPECT_LE(s.peak_bytes, 16 * 2 * (256u << 10) + (8u << 20) + (512u << 10));
  EXPECT_GT(s.reuses, 5000u);
}

// The rounding choice, measured: a decode loop of a small transformer (SmolLM2-135M shapes, f32)
// whose attention sizes grow every token. Peak memory held by the pool, both policies.
uint64_t decode_loop_peak(gpu::PoolRounding rounding, uint64_t limit, size_t tokens, size_t layers,
                          uint64_t* allocations) {
  FakeDriver drv;
  gpu::BufferPool pool(drv, {.rounding = rounding, .limit = limit});
  const size_t hidden = 576, heads = 9, kv = 3, hd = 64, ffn = 1536, vocab = 49152;
  std::vector<BufferRef> kcache(layers), vcache(layers);
  for (size_t t = 1; t <= tokens; t++) {
    BufferRef x = pool.acquire(hidden * 4);
    for (size_t l = 0; l < layers; l++) {
      BufferRef h = pool.acquire(hidden * 4);
      BufferRef q = pool.acquire(heads * hd * 4), k = pool.acquire(kv * hd * 4),
                v = pool.acquire(kv * hd * 4);
      kcache[l] = pool.acquire(t * kv * hd * 4);  // cat allocates the grown cache
      vcache[l] = pool.acquire(t * kv * hd * 4);
      k.reset();
      v.reset();
      BufferRef s = pool.acquire(heads * t * 4), p = pool.acquire(heads * t * 4);
      s.reset();
      BufferRef o = pool.acquire(heads * hd * 4);
      p.reset();
      q.reset();
      BufferRef proj = pool.acquire(hidden * 4);
      o.reset();
      x = pool.acquire(hidden * 4);
      proj.reset();
      h = pool.acquire(hidden * 4);
      BufferRef g = pool.acquire(ffn * 4), u = pool.acquire(ffn * 4), a = pool.acquire(ffn * 4);
      g.reset();
      u.reset();
      BufferRef dn = pool.acquire(hidden * 4);
      a.reset();
      x = pool.acquire(hidden * 4);
    }
    BufferRef logits = pool.acquire(vocab * 4);
    pool.trim();  // the read-back of the sampled token
  }
  *allocations = pool.stats().allocations;
  return pool.stats().peak_bytes;
}

// docs/architecture.md has the full table (limits 4, 64, 256 MiB; 256 tokens, 30 layers).
TEST(GpuBufferPool, PowerOfTwoHoldsLessThanBestFitInADecodeLoop) {
  const uint64_t limit = 64ull << 20;
  uint64_t alloc_pow2 = 0, alloc_best = 0;
  const uint64_t pow2 = decode_loop_peak(gpu::PoolRounding::PowerOfTwo, limit, 96, 8, &alloc_pow2);
  const uint64_t best = decode_loop_peak(gpu::PoolRounding::BestFit, limit, 96, 8, &alloc_best);
  EXPECT_LT(pow2, best);
  EXPECT_LT(alloc_pow2 * 4, alloc_best);
  EXPECT_EQ(gpu::PoolConfig{}.rounding, gpu::PoolRounding::PowerOfTwo) << "the measured default";
}

// ---- kernel cache -----------------------------------------------------------------------------

struct CacheFixture : ::testing::Test {
  std::filesystem::path dir;
  gpu::SourceTable sources;
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("wick_kc_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    sources.add("include/helper.glsl", "float helper(float x) { return x; }\n");
    sources.add("k.comp", "#include \"include/helper.glsl\"\nvoid main() {}\n");
    sources.add("other.comp", "void main() { /* other */ }\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  gpu::KernelKey key(std::string src, std::vector<uint32_t> constants = {},
                     gpu::Defines defs = {}) {
    gpu::KernelKey k;
    k.source = std::move(src);
    k.constants = std::move(constants);
    k.defines = std::move(defs);
    k.block = 256;
    return k;
  }
};

TEST_F(CacheFixture, TwoLevelsInMemory) {
  FakeDriver drv;
  gpu::KernelCache cache(drv, sources, gpu::DiskCache(""), true);
  const gpu::Pipeline& p1 = cache.pipeline(key("k.comp", {1}));
  EXPECT_EQ(&cache.pipeline(key("k.comp", {1})), &p1);
  const gpu::Pipeline& p2 = cache.pipeline(key("k.comp", {2}));  // same module, new constants
  EXPECT_NE(&p2, &p1);
  EXPECT_EQ(drv.compiles(), 1);
  EXPECT_EQ(drv.pipelines(), 2);
  cache.pipeline(key("k.comp", {1}, {{"X_DT", "f16"}}));  // new options: new module
  EXPECT_EQ(drv.compiles(), 2);
  const auto& fp = static_cast<const FakeDriver::FakePipeline&>(p2);
  EXPECT_NE(fp.module.find("helper"), std::string::npos)
      << "sources are passed with their includes";
  EXPECT_EQ(fp.constants, (std::vector<uint32_t>{2}));
}

// Ops look pipelines up by a compact id and build the key only the first time: a known id must
// not build its key again, and ids that differ in any value (a dtype, an op) get their own key.
TEST_F(CacheFixture, KernelIdsBuildTheirKeyOnceAndKeepValuesApart) {
  FakeDriver drv;
  gpu::KernelCache cache(drv, sources, gpu::DiskCache(""), true);
  int built = 0;
  auto make = [&](const char* dt) {
    return [&, dt] {
      built++;
      return key("k.comp", {7}, {{"DT", dt}});
    };
  };
  gpu::KernelId f32_id{1, {7, 0}}, f16_id{1, {7, 1}}, other_family{2, {7, 0}};
  const gpu::Pipeline& p32 = cache.pipeline(f32_id, make("f32"));
  EXPECT_EQ(&cache.pipeline(f32_id, make("f32")), &p32);
  EXPECT_EQ(built, 1) << "a known id builds no key";
  const gpu::Pipeline& p16 = cache.pipeline(f16_id, make("f16"));
  EXPECT_NE(&p16, &p32) << "another dtype is another pipeline";
  EXPECT_EQ(drv.compiles(), 2) << "compiled with its own defines";
  EXPECT_EQ(&cache.pipeline(other_family, make("f32")), &p32)
      << "another id for the same key shares the key's pipeline";
  EXPECT_EQ(built, 3);
  EXPECT_EQ(&cache.pipeline(f16_id, make("f16")), &p16);
  EXPECT_EQ(built, 3);
}
TEST_F(CacheFixture, DiskCacheHitsInANewCache) {
  {
    FakeDriver drv;
    gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
    cache.pipeline(key("k.comp"));
    EXPECT_EQ(cache.stats().disk_writes, 1u);
  }
  FakeDriver drv;  // a new process
  gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
  const auto& p = static_cast<const FakeDriver::FakePipeline&>(cache.pipeline(key("k.comp")));
  EXPECT_EQ(drv.compiles(), 0);
  EXPECT_EQ(cache.stats().disk_hits, 1u);
  EXPECT_NE(p.module.find("k.comp"), std::string::npos);
  // No temporary files are left behind.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().extension(), ".bin") << e.path();
}

TEST_F(CacheFixture, DiskKeyCoversOptionsDeviceAndSource) {
  {
    FakeDriver drv;
    gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
    cache.pipeline(key("k.comp"));
  }
  auto compiles_with = [&](bool fast_math, std::string identity, const gpu::SourceTable& src) {
    FakeDriver drv;
    drv.identity_text = std::move(identity);
    gpu::KernelCache cache(drv, src, gpu::DiskCache(dir.string()), fast_math);
    cache.pipeline(key("k.comp"));
    return drv.compiles();
  };
  EXPECT_EQ(compiles_with(true, "fake-device/1", sources), 0);
  EXPECT_EQ(compiles_with(false, "fake-device/1", sources), 1) << "fast math is part of the key";
  EXPECT_EQ(compiles_with(true, "fake-device/2", sources), 1) << "the device is part of the key";
  gpu::SourceTable changed;
  changed.add("include/helper.glsl", "float helper(float x) { return 2 * x; }\n");
  changed.add("k.comp", "#include \"include/helper.glsl\"\nvoid main() {}\n");
  EXPECT_EQ(compiles_with(true, "fake-device/1", changed), 1) << "an include change is a miss";
}

TEST_F(CacheFixture, CorruptEntryIsAMiss) {
  std::string path;
  {
    FakeDriver drv;
    gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
    cache.pipeline(key("k.comp"));
  }
  for (const auto& e : std::filesystem::directory_iterator(dir)) path = e.path().string();
  ASSERT_FALSE(path.empty());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  FakeDriver drv;
  gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
  cache.pipeline(key("k.comp"));
  EXPECT_EQ(drv.compiles(), 1);
  EXPECT_EQ(cache.stats().disk_hits, 0u);
}

// A disk entry the driver cannot use (it does not validate, or its pipeline fails) is compiled
// again from source and replaced, so the next process hits a good entry; the in-memory module is
// replaced too.
TEST_F(CacheFixture, InvalidDiskModuleIsCompiledAgainAndReplaced) {
  {
    FakeDriver drv;
    gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
    cache.pipeline(key("k.comp"));
  }
  FakeDriver drv;
  drv.reject_modules = true;
  gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
  cache.pipeline(key("k.comp"));
  EXPECT_EQ(drv.compiles(), 1) << "an invalid entry must not be used";
  EXPECT_EQ(cache.stats().disk_rejects, 1u);
  EXPECT_EQ(cache.stats().disk_writes, 1u) << "the entry is replaced";
  FakeDriver next;
  gpu::KernelCache again(next, sources, gpu::DiskCache(dir.string()), true);
  again.pipeline(key("k.comp"));
  EXPECT_EQ(next.compiles(), 0);
  EXPECT_EQ(again.stats().disk_hits, 1u);
}

TEST_F(CacheFixture, DiskModuleWhosePipelineFailsIsCompiledAgain) {
  {  // a module that validates but that the driver refuses when it makes the pipeline
    FakeDriver drv;
    drv.compile_tag = "|broken";
    gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
    cache.pipeline(key("k.comp"));
  }
  FakeDriver drv;
  drv.fail_pipeline_marker = "|broken";
  gpu::KernelCache cache(drv, sources, gpu::DiskCache(dir.string()), true);
  const auto& p = static_cast<const FakeDriver::FakePipeline&>(cache.pipeline(key("k.comp")));
  EXPECT_EQ(p.module.find("|broken"), std::string::npos) << "the pipeline is the fresh module's";
  EXPECT_EQ(drv.compiles(), 1);
  EXPECT_EQ(cache.stats().disk_rejects, 1u);
  // Other pipelines of the same module use the fresh one, and the next process hits it.
  cache.pipeline(key("k.comp", {5}));
  EXPECT_EQ(drv.compiles(), 1);
  FakeDriver next;
  next.fail_pipeline_marker = "|broken";
  gpu::KernelCache again(next, sources, gpu::DiskCache(dir.string()), true);
  again.pipeline(key("k.comp"));
  EXPECT_EQ(next.compiles(), 0);
  EXPECT_EQ(again.stats().disk_rejects, 0u);
}

TEST_F(CacheFixture, DiskCacheVerifiesTheFullKey) {
  gpu::DiskCache disk(dir.string());
  const std::vector<uint8_t> data{1, 2, 3};
  ASSERT_TRUE(disk.store("key-a", data));
  // Pretend "key-b" hashed to the same file: the stored key does not match, so it misses.
  std::filesystem::copy_file(disk.path_for("key-a"), disk.path_for("key-b"));
  EXPECT_FALSE(disk.load("key-b").has_value());
  EXPECT_EQ(disk.load("key-a").value(), data);
  EXPECT_EQ(gpu::DiskCache::folder_for("off"), "");
  EXPECT_EQ(gpu::DiskCache::folder_for("/x/y"), "/x/y");
  EXPECT_EQ(gpu::DiskCache::folder_for(""), gpu::DiskCache::default_folder());
  gpu::DiskCache off("");
  EXPECT_FALSE(off.store("k", data));
  EXPECT_FALSE(off.load("k").has_value());
}

TEST_F(CacheFixture, SlowCompileDoesNotBlockOtherKernels) {
  FakeDriver drv;
  drv.slow_marker = "/* other */";
  drv.slow_for = std::chrono::milliseconds(400);
  gpu::KernelCache cache(drv, sources, gpu::DiskCache(""), true);
  std::thread slow([&] { cache.pipeline(key("other.comp")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto t0 = std::chrono::steady_clock::now();
  cache.pipeline(key("k.comp"));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, 200) << "an unrelated kernel waited for another's compile";
  // A second caller of the slow kernel waits for the one compile instead of starting another.
  std::thread again([&] { cache.pipeline(key("other.comp")); });
  slow.join();
  again.join();
  EXPECT_EQ(drv.compiles(), 2);
}

}  // namespace
}  // namespace wick::testing
