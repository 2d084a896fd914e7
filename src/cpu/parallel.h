// A thin wrapper over OpenMP so kernels say what they split, not how.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace wick::cpu {

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  const int64_t want = std::min<int64_t>(max_threads(), std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
  if (want <= 1) {
    f(int64_t{0}, n);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for num_threads(static_cast<int>(want)) schedule(static, 1)
  for (int64_t t = 0; t < want; t++) {
    const int64_t b = n * t / want, e = n * (t + 1) / want;
    f(b, e);
  }
#else
  f(int64_t{0}, n);
#endif
}

}  // namespace wick::cpu
