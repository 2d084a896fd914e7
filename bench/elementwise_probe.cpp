// Timing probe for the CPU element-wise kernels (not built by default). Build from the repo root
// after building libwick:
//   g++ -O2 -std=c++20 -Iinclude -Isrc bench/elementwise_probe.cpp build/libwick.a \
//       -fopenmp -lopenblas -o /tmp/elementwise_probe && /tmp/elementwise_probe
// Prints add bandwidth against memcpy's in the same process, the per-op overhead on 1-element
// tensors, and ns per element of every op on 1M elements per dtype. Arguments: bw | overhead |
// ops [numel]; PROBE_KEEP_HEAP=1 stops glibc from unmapping freed blocks.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor_impl.h"
#include "cpu/cpu_device.h"
#include "cpu/parallel.h"
#include "wick/wick.h"

using namespace wick;
using Clock = std::chrono::steady_clock;

namespace {

// Best of `reps` runs of f, in seconds.
double best_of(int reps, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

void bandwidth() {
  const int64_t n = 16 << 20;
  const size_t bytes = static_cast<size_t>(n) * 4;
  Tensor a = Tensor::rand(-1, 1, {n}, DType::F32), b = Tensor::rand(-1, 1, {n}, DType::F32);
  Tensor out = Tensor::zeros({n}, DType::F32);
  auto ptr = [](const Tensor& t) { return static_cast<cpu::CpuStorage&>(*t.storage()).data(); };
  const double t_memcpy = best_of(10, [&] { std::memcpy(ptr(out), ptr(a), bytes); });
  const double t_memcpy2 = best_of(10, [&] {
    cpu::parallel_for(n, 1 << 15, [&](int64_t s, int64_t e) {
      std::memcpy(ptr(out) + s * 4, ptr(a) + s * 4, static_cast<size_t>(e - s) * 4);
    });
  });
  auto& dev = Device::cpu().backend();
  const double t_kernel = best_of(10, [&] {
    dev.binary(backend::BinaryOp::Add, core::view(a), core::view(b), *out.storage());
  });
  const double t_op = best_of(10, [&] { Tensor c = a.add(b); });
  const double gb = 1e-9;
  const double bw_memcpy = 2 * bytes / t_memcpy * gb, bw_memcpy2 = 2 * bytes / t_memcpy2 * gb;
  const double bw_kernel = 3 * bytes / t_kernel * gb, bw_op = 3 * bytes / t_op * gb;
  std::printf("16M f32 (GB/s, reads + writes): memcpy %.1f | memcpy 2 threads %.1f\n", bw_memcpy,
              bw_memcpy2);
  std::printf(
      "  add kernel into touched output %.1f (%.2fx memcpy) | a.add(b) with fresh output %.1f "
      "(%.2fx memcpy)\n",
      bw_kernel, bw_kernel / bw_memcpy, bw_op, bw_op / bw_memcpy);
}

// CPU time of the calling thread: on a shared machine, wall time also counts waiting for a core.
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void overhead() {
  Tensor a = Tensor::full(1.5, {1}, DType::F32), b = Tensor::full(2.5, {1}, DType::F32);
  const int iters = 200000;
  // Best of 5: wall ns/op, thread-CPU ns/op.
  auto per_op = [&](const std::function<void()>& f) {
    double wall = 1e30, cpu = 1e30;
    for (int r = 0; r < 5; r++) {
      const double c0 = thread_cpu_seconds();
      const auto t0 = Clock::now();
      for (int i = 0; i < iters; i++) f();
      wall = std::min(wall, std::chrono::duration<double>(Clock::now() - t0).count() / iters * 1e9);
      cpu = std::min(cpu, (thread_cpu_seconds() - c0) / iters * 1e9);
    }
    return std::pair{wall, cpu};
  };
  const std::pair<const char*, std::function<void()>> ops[] = {
      {"a.add(b)", [&] { Tensor c = a.add(b); }},
      {"a + b", [&] { Tensor c = a + b; }},
      {"a.add(2.5)", [&] { Tensor c = a.add(2.5); }},
      {"a.exp()", [&] { Tensor c = a.exp(); }},
      {"a.lt(b)", [&] { Tensor c = a.lt(b); }},
      {"Tensor::zeros({1})", [&] { Tensor c = Tensor::zeros({1}, DType::F32); }},
  };
  std::printf("1-element tensors, ns per op (wall | thread CPU):\n");
  for (const auto& [name, f] : ops) {
    const auto [wall, cpu] = per_op(f);
    std::printf("  %-20s %6.0f | %6.0f\n", name, wall, cpu);
  }
}

void op_table(int64_t n) {
  struct Row {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> f;
  };
  const std::vector<Row> rows = {
      {"add", [](const Tensor& a, const Tensor& b) { return a.add(b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return a.div(b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }},
      {"add scalar", [](const Tensor& a, const Tensor&) { return a.add(2.5); }},
      {"add row bcast",
       [](const Tensor& a, const Tensor& b) {
         return a.reshape({-1, 1024}).add(b.narrow(0, 0, 1024));
       }},
      {"add transposed",
       [](const Tensor& a, const Tensor& b) {
         return a.reshape({-1, 1024}).t().add(b.reshape({-1, 1024}).t());
       }},
      {"lt", [](const Tensor& a, const Tensor& b) { return a.lt(b); }},
      {"where", [](const Tensor& a, const Tensor& b) { return a.gt(0.0).where_cond(a, b); }},
      {"neg", [](const Tensor& a, const Tensor&) { return a.neg(); }},
      {"abs", [](const Tensor& a, const Tensor&) { return a.abs(); }},
      {"sqr", [](const Tensor& a, const Tensor&) { return a.sqr(); }},
      {"sqrt", [](const Tensor& a, const Tensor&) { return a.abs().sqrt(); }},
      {"recip", [](const Tensor& a, const Tensor&) { return a.recip(); }},
      {"relu", [](const Tensor& a, const Tensor&) { return a.relu(); }},
      {"exp", [](const Tensor& a, const Tensor&) { return a.exp(); }},
      {"log", [](const Tensor& a, const Tensor&) { return a.log(); }},
      {"tanh", [](const Tensor& a, const Tensor&) { return a.tanh(); }},
      {"sigmoid", [](const Tensor& a, const Tensor&) { return a.sigmoid(); }},
      {"silu", [](const Tensor& a, const Tensor&) { return a.silu(); }},
      {"gelu", [](const Tensor& a, const Tensor&) { return a.gelu(); }},
      {"gelu_erf", [](const Tensor& a, const Tensor&) { return a.gelu_erf(); }},
      {"erf", [](const Tensor& a, const Tensor&) { return a.erf(); }},
      {"sin", [](const Tensor& a, const Tensor&) { return a.sin(); }},
      {"elu", [](const Tensor& a, const Tensor&) { return a.elu(1.0); }},
      {"floor", [](const Tensor& a, const Tensor&) { return a.floor(); }},
      {"round", [](const Tensor& a, const Tensor&) { return a.round(); }},
      {"sign", [](const Tensor& a, const Tensor&) { return a.sign(); }},
      {"affine", [](const Tensor& a, const Tensor&) { return a.affine(2.0, 1.0); }},
      {"clamp", [](const Tensor& a, const Tensor&) { return a.clamp(-0.5, 0.5); }},
      {"powf", [](const Tensor& a, const Tensor&) { return a.abs().powf(1.7); }},
  };
  const DType dts[] = {DType::F32, DType::F16, DType::BF16, DType::F64};
  std::printf("\nns per element, %lld elements (%d threads; includes output allocation)\n%-16s",
              static_cast<long long>(n), cpu::max_threads(), "op");
  for (DType dt : dts) std::printf("%8s", dtype_name(dt));
  std::printf("\n");
  std::vector<Tensor> as, bs;
  for (DType dt : dts) {
    as.push_back(Tensor::rand(0.1, 2, {n}, dt));
    bs.push_back(Tensor::rand(0.1, 2, {n}, dt));
  }
  for (const Row& r : rows) {
    std::printf("%-16s", r.name);
    for (size_t i = 0; i < as.size(); i++) {
      const double t = best_of(15, [&] { Tensor c = r.f(as[i], bs[i]); });
      std::printf("%8.2f", t / n * 1e9);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  // "keep-heap": glibc keeps freed blocks of any size in its heap instead of unmapping them, so
  // a fresh output reuses pages that are already mapped (shows what page faults cost).
  if (std::getenv("PROBE_KEEP_HEAP")) {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  if (what == "all" || what == "bw") bandwidth();
  if (what == "all" || what == "overhead") overhead();
  if (what == "all" || what == "ops") op_table(argc > 2 ? std::atoll(argv[2]) : 1 << 20);
}
