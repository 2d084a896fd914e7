// Pooled device memory: buffers are reused once no tensor holds them.
//
// acquire() hands out a shared reference; when the last holder drops it, the buffer returns to
// the pool's free list (the seed's "only the pool holds it" rule, without scanning). A buffer can
// go back out while queued GPU work still reads it: for device-local memory the hazard tracker
// orders the new writes after those reads (the buffer keeps its driver handle). Host-visible
// buffers are written by the host directly, so they go back out only once every submission that
// used them finished; and no buffer is freed before that.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "gpu/driver.h"

namespace wick::gpu {

struct Buffer {
  Allocation alloc;
  size_t capacity = 0;                // bytes the pool may hand out (>= every request it serves)
  std::atomic<uint64_t> last_use{0};  // the submission that last used it (0: none)
  uint64_t released_at = 0;           // pool clock when it last became free (oldest freed first)
  // The reference the pool handed out while one is held (a capture takes one more: pinning).
  std::weak_ptr<Buffer> self;
  uint64_t generation = 0;  // process-wide count of hand-outs when this one was handed out
  // Memory other code allocated (BufferPool::adopt): what keeps it alive; null for the pool's.
  std::shared_ptr<void> owner;
};
// The generation the next hand-out gets (tells buffers made after a point in time).
uint64_t next_buffer_generation();
using BufferRef = std::shared_ptr<Buffer>;

enum class PoolRounding {
  PowerOfTwo,  // the seed: size rounded up to a power of two, reuse within the same size class
  BestFit,     // MLX: exact-size buffers, reuse the smallest free one that wastes little
};

struct PoolConfig {
  MemoryKind kind = MemoryKind::DeviceLocal;
  // Measured (docs/architecture.md): power-of-two reuses far better when sizes grow step by step.
  PoolRounding rounding = PoolRounding::PowerOfTwo;
  uint64_t limit = 256ull << 20;  // bytes of unused memory kept before trimming
  size_t alignment = 256;         // BestFit sizes are rounded up to this
  size_t max_waste = 1 << 20;     // BestFit reuses a buffer at most min(request, this) too big
};

class BufferPool {
 public:
  BufferPool(Driver& driver, PoolConfig config);
  // Frees every free buffer. Buffers still held are released to the driver never (callers make
  // sure the device is idle and no storage outlives it).
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` bytes (0 is allowed).
  BufferRef acquire(size_t bytes);
  // A buffer over memory other code allocated (Driver::adopt), kept alive by `owner`. It never
  // enters the free list: when the last holder drops it, the driver forgets it and `owner` is
  // dropped once no submission uses it any more (at once, or at a later trim()). Not counted in
  // the stats.
  BufferRef adopt(const Allocation& a, std::shared_ptr<void> owner);
  // Frees unused buffers, oldest freed first, until at most `keep` bytes of unused memory remain.
  // Buffers whose last use has not finished stay. Also lets go of adopted buffers whose last use
  // finished.
  void trim(uint64_t keep);
  void trim() { trim(config_.limit); }

  // The capacity a request of `bytes` gets (the seed's 2-byte case: 2 -> 2, never 1).
  size_t capacity_for(size_t bytes) const;
  const PoolConfig& config() const { return config_; }

  struct Stats {
    uint64_t in_use_bytes = 0;  // held by tensors
    uint64_t free_bytes = 0;    // kept for reuse
    uint64_t peak_bytes = 0;    // max of in_use + free
    uint64_t allocations = 0;   // driver allocations made
    uint64_t reuses = 0;
    uint64_t frees = 0;  // driver frees
  };
  Stats stats() const;

 private:
  struct State;
  Driver& driver_;
  PoolConfig config_;
  std::shared_ptr<State> state_;
};

}  // namespace wick::gpu
