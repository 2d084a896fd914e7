#include "gpu/buffer_pool.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "wick/error.h"

namespace wick::gpu {

// Shared with the references handed out, so a late release finds a valid (maybe closed) pool.
struct BufferPool::State {
  std::mutex mu;
  Driver* driver;
  MemoryKind kind;
  bool closed = false;
  uint64_t clock = 0;
  uint64_t limit = 0;                   // the budget of unused bytes
  uint64_t trimmed_at = ~uint64_t{0};   // completed() when release() last trimmed
  std::multimap<size_t, Buffer*> free;  // by capacity
  std::vector<Buffer*> retiring;        // adopted, released, last use not finished yet
  Stats stats;

  void release(Buffer* b) {
    if (b->owner) {
      release_adopted(b);
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    stats.in_use_bytes -= b->capacity;
    if (closed) {
      delete b;  // the driver is gone; its allocations went with it
      return;
    }
    b->released_at = ++clock;
    free.emplace(b->capacity, b);
    stats.free_bytes += b->capacity;
    // The budget holds between synchronisations too: over it, give back what no queued work
    // uses, when this buffer is free to go or more work finished since the last try (else
    // nothing new could be freed).
    if (stats.free_bytes > limit) {
      const uint64_t done = driver->completed();
      if (b->last_use.load() <= done || done != trimmed_at) {
        trimmed_at = done;
        trim_locked(limit);
      }
    }
  }

  // An adopted buffer goes back to its owner once no submission uses it. The owner is dropped
  // outside the lock: its deleter is other code's (it may take the Python GIL).
  void release_adopted(Buffer* b) {
    std::shared_ptr<void> owner;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!closed && b->last_use.load() > driver->completed()) {
        retiring.push_back(b);
        return;
      }
      owner = forget_locked(b);
    }
  }
  std::shared_ptr<void> forget_locked(Buffer* b) {
    std::shared_ptr<void> owner = std::move(b->owner);
    if (!closed) driver->free(b->alloc);  // closed: the driver is gone with its bookkeeping
    delete b;
    return owner;
  }
  // The owners of retiring buffers whose last use finished (all of them when `all`).
  std::vector<std::shared_ptr<void>> retire_locked(bool all) {
    std::vector<std::shared_ptr<void>> owners;
    if (retiring.empty()) return owners;
    const uint64_t done = all ? std::numeric_limits<uint64_t>::max() : driver->completed();
    std::erase_if(retiring, [&](Buffer* b) {
      if (b->last_use.load() > done) return false;
      owners.push_back(forget_locked(b));
      return true;
    });
    return owners;
  }

  // Frees free buffers, oldest first, whose last use finished, until free_bytes <= keep.
  void trim_locked(uint64_t keep) {
    if (stats.free_bytes <= keep) return;
    const uint64_t done = driver->completed();
    std::vector<std::multimap<size_t, Buffer*>::iterator> candidates;
    for (auto it = free.begin(); it != free.end(); ++it)
      if (it->second->last_use.load() <= done) candidates.push_back(it);
    std::sort(candidates.begin(), candidates.end(),
              [](auto a, auto b) { return a->second->released_at < b->second->released_at; });
    for (auto it : candidates) {
      if (stats.free_bytes <= keep) break;
      Buffer* b = it->second;
      free.erase(it);
      stats.free_bytes -= b->capacity;
      stats.frees++;
      driver->free(b->alloc);
      delete b;
    }
  }
};

namespace {
std::atomic<uint64_t> g_generation{1};
}

uint64_t next_buffer_generation() {
  return g_generation.load(std::memory_order_relaxed);
}

BufferPool::BufferPool(Driver& driver, PoolConfig config)
    : driver_(driver), config_(config), state_(std::make_shared<State>()) {
  state_->driver = &driver;
  state_->kind = config.kind;
  state_->limit = config.limit;
}

BufferPool::~BufferPool() {
  std::vector<std::shared_ptr<void>> owners;
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto& [cap, b] : state_->free) {
    driver_.free(b->alloc);
    delete b;
  }
  state_->free.clear();
  // The device is idle now (its owner synchronized it): adopted memory goes back to its owners.
  owners = state_->retire_locked(true);
  state_->closed = true;
}

size_t BufferPool::capacity_for(size_t bytes) const {
  if (config_.rounding == PoolRounding::PowerOfTwo)
    return std::bit_ceil(std::max<size_t>(bytes, 1));
  const size_t a = config_.alignment;
  return std::max<size_t>((bytes + a - 1) / a * a, a);
}

BufferRef BufferPool::acquire(size_t bytes) {
  const size_t cap = capacity_for(bytes);
  const size_t max_cap =
      config_.rounding == PoolRounding::PowerOfTwo ? cap : cap + std::min(cap, config_.max_waste);
  // Host-visible buffers are written by the host at once: only those no submission still uses.
  const uint64_t done = config_.kind == MemoryKind::HostVisible
                            ? driver_.completed()
                            : std::numeric_limits<uint64_t>::max();
  State& s = *state_;
  auto wrap = [this](Buffer* b) {
    BufferRef ref(b, [state = state_](Buffer* p) { state->release(p); });
    b->self = ref;
    b->generation = g_generation.fetch_add(1, std::memory_order_relaxed);
    return ref;
  };
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto it = s.free.lower_bound(cap); it != s.free.end() && it->first <= max_cap; ++it) {
      Buffer* b = it->second;
      if (b->last_use.load() > done) continue;
      s.free.erase(it);
      s.stats.free_bytes -= b->capacity;
      s.stats.in_use_bytes += b->capacity;
      s.stats.reuses++;
      return wrap(b);
    }
    // Over budget: give unused memory back before taking more.
    s.trim_locked(config_.limit);
  }
  Allocation a;
  try {
    a = driver_.allocate(cap, config_.kind);
  } catch (const Error&) {
    trim(0);  // out of memory: free everything unused and try once more
    a = driver_.allocate(cap, config_.kind);
  }
  auto* b = new Buffer;
  b->alloc = a;
  b->capacity = cap;
  std::lock_guard<std::mutex> lock(s.mu);
  s.stats.allocations++;
  s.stats.in_use_bytes += cap;
  s.stats.peak_bytes = std::max(s.stats.peak_bytes, s.stats.in_use_bytes + s.stats.free_bytes);
  return wrap(b);
}

BufferRef BufferPool::adopt(const Allocation& a, std::shared_ptr<void> owner) {
  auto* b = new Buffer;
  b->alloc = a;
  b->capacity = a.size;
  // A non-null owner marks the buffer as adopted, also when the caller gave none.
  b->owner = owner ? std::move(owner) : std::make_shared<int>(0);
  BufferRef ref(b, [state = state_](Buffer* p) { state->release(p); });
  b->self = ref;
  b->generation = g_generation.fetch_add(1, std::memory_order_relaxed);
  return ref;
}

void BufferPool::trim(uint64_t keep) {
  std::vector<std::shared_ptr<void>> owners;
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->trim_locked(keep);
  owners = state_->retire_locked(false);
}

BufferPool::Stats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

}  // namespace wick::gpu
