// Pass profile: forward_batch compositions ("A+PxL": A answers of one token, P prompts of L
// tokens), each run `reps` times on fresh sequences; prints wall ms and the GPU stats' deltas.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_device.h"
#include "wick/device.h"
#include "wick/llama.h"
using namespace wick;
int main(int argc, char** argv) {
  Device dev = Device::parse(argv[2]);
  const int reps = std::atoi(argv[3]);
  LlamaModel m = LlamaModel::load_gguf(argv[1], dev, 512);
  const auto* g = dynamic_cast<const gpu::GpuDevice*>(&dev.backend());
  std::vector<LlamaSequence> seqs;
  for (int i = 0; i < 16; i++) seqs.push_back(m.new_sequence());
  std::mt19937 rng(1);
  for (int a = 4; a < argc; a++) {
    int A = 0, P = 0, L = 0;
    std::sscanf(argv[a], "%d+%dx%d", &A, &P, &L);
    for (int r = 0; r < reps; r++) {
      for (auto& s : seqs) s.reset();
      std::vector<LlamaModel::SequenceStep> steps;
      // answers: a 3-token prompt first (not timed), then one token
      if (A > 0) {
        for (int i = 0; i < A; i++) steps.push_back({&seqs[i], {1, 2, 3}});
        m.forward_batch(steps).argmax(1).to_vec<uint32_t>();
        steps.clear();
      }
      for (int i = 0; i < A; i++) steps.push_back({&seqs[i], {5}});
      for (int i = 0; i < P; i++) {
        std::vector<uint32_t> p(L);
        for (auto& t : p) t = rng() % 40000 + 100;
        steps.push_back({&seqs[A + i], p});
      }
      gpu::GpuDevice::Stats s0{};
      if (g) s0 = g->stats();
      const auto t0 = std::chrono::steady_clock::now();
      m.forward_batch(steps).argmax(1).to_vec<uint32_t>();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%-10s rep %d: %8.3f ms", argv[a], r, ms);
      if (g) {
        const auto s1 = g->stats();
        std::printf(
            "  dispatches %llu compiles %llu disk %llu pipelines %llu compile_ms %.2f "
            "pipeline_ms %.2f allocs %llu coop %llu mma %llu",
            (unsigned long long)(s1.queue.dispatches - s0.queue.dispatches),
            (unsigned long long)(s1.kernels.compiles - s0.kernels.compiles),
            (unsigned long long)(s1.kernels.disk_hits - s0.kernels.disk_hits),
            (unsigned long long)(s1.kernels.pipelines - s0.kernels.pipelines),
            s1.kernels.compile_ms - s0.kernels.compile_ms,
            s1.kernels.pipeline_ms - s0.kernels.pipeline_ms,
            (unsigned long long)(s1.device_pool.allocations - s0.device_pool.allocations),
            (unsigned long long)(s1.coop_matmuls - s0.coop_matmuls),
            (unsigned long long)(s1.mma_qmatvecs - s0.mma_qmatvecs));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}
