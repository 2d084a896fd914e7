// Run-time choice of the x86 vector ISA for hot loops. wick is built for baseline x86-64 (never
// -march=native); loops that gain from wider vectors are compiled again for AVX2 and AVX-512
// through target attributes, and the widest build the CPU and OS support runs. Float results
// do not depend on the build: the same IEEE ops in every lane, and no FMA contraction
// (-ffp-contract=off in CMakeLists.txt).
#pragma once

#include <algorithm>
#include <atomic>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace wick::cpu {

enum class Isa : int { Baseline = 0, Avx2 = 1, Avx512 = 2 };

inline const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    default:
      return "baseline";
  }
}

// What this CPU (and OS) runs.
inline Isa detected_isa() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
      return Isa::Avx512;
    return __builtin_cpu_supports("avx2") ? Isa::Avx2 : Isa::Baseline;
  }();
  return isa;
#else
  return Isa::Baseline;
#endif
}

// Upper bound on the ISA used, so that tests and benchmarks can run every build on one machine.
inline std::atomic<int> isa_cap{static_cast<int>(Isa::Avx512)};
inline void set_isa_cap(Isa cap) {
  isa_cap.store(static_cast<int>(cap), std::memory_order_relaxed);
}
inline Isa active_isa() {
  return static_cast<Isa>(
      std::min(static_cast<int>(detected_isa()), isa_cap.load(std::memory_order_relaxed)));
}

#if defined(__x86_64__) && defined(__GNUC__)
// Target of functions that use AVX2 with FMA and F16C (vcvtph2ps) intrinsics.
#define WICK_AVX2_F16C __attribute__((target("avx2,fma,f16c")))

// The active ISA is at least AVX2 and the CPU has FMA and F16C (from cpuid: clang's
// __builtin_cpu_supports does not know "f16c").
inline bool runs_avx2_f16c() {
  static const bool ok = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    return (ecx & bit_FMA) != 0 && (ecx & bit_F16C) != 0;
  }();
  return ok && active_isa() >= Isa::Avx2;
}
#else
inline bool runs_avx2_f16c() {
  return false;
}
#endif

// Marks a lambda for with_best_isa: its body must be inlined to be compiled for each ISA.
#define WICK_ALWAYS_INLINE __attribute__((always_inline))

#if defined(__x86_64__) && defined(__GNUC__)
template <typename F>
__attribute__((target("avx2"))) void call_for_avx2(const F& f) {
  f();
}
template <typename F>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512"))) void
call_for_avx512(const F& f) {
  f();
}
#endif

// Runs f() compiled for the active ISA. f is a WICK_ALWAYS_INLINE lambda calling inline code
// only (what it calls out of line runs as built for baseline x86-64).
template <typename F>
inline void with_best_isa(const F& f) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (active_isa()) {
    case Isa::Avx512:
      return call_for_avx512(f);
    case Isa::Avx2:
      return call_for_avx2(f);
    default:
      break;
  }
#endif
  f();
}

}  // namespace wick::cpu
