// How CPU kernels split work: parallel_for(n, grain, f) calls f(begin, end) on disjoint ranges
// covering [0, n), on the caller and the pool's workers (thread_pool.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cpu/thread_pool.h"

namespace wick::cpu {

inline int max_threads() {
  return ThreadPool::instance().threads();
}

// Ranges of at least `grain` items (except when n < grain), a few per thread so that a thread
// that starts late leaves its share to the others.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  const int threads = max_threads();
  const int64_t most = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int64_t want = std::min<int64_t>(threads, most);
  if (want <= 1) {
    f(int64_t{0}, n);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  struct Ctx {
    Fn* f;
    int64_t n, chunks;
  } ctx{&f, n, std::min<int64_t>(most, 4 * want)};
  ThreadPool::instance().run(
      ctx.chunks, static_cast<int>(want) - 1,
      [](void* p, int64_t c) {
        const Ctx& x = *static_cast<const Ctx*>(p);
        (*x.f)(x.n * c / x.chunks, x.n * (c + 1) / x.chunks);
      },
      &ctx);
}

}  // namespace wick::cpu
