// GEMM throughput on the device for the cases the PyTorch anchor measures
// (shared/anchors/torch_gemm_decode.py): n x n products a@b, a@b.T and a.T@b (transposed operands
// as views, read in place) at n = 1024 and 4096 per float dtype, and the seed's narrowed 4-D batch
// (8 x 16 x 512 x 512 narrowed to 8 along dim 1, times 8 x 8 x 512 x 512). Medians after warming
// the clocks; the first (cold) run apart. Correctness is `wick bench matmul`'s and the tests' job.
#include <algorithm>

#include "bench.h"
#include "report.h"
#include "wick/wick.h"

namespace wick::cli {

bool bench_gemm(const BenchContext& ctx) {
  print_title(ctx, "gemm");
  const Device dev = ctx.device();
  std::ostream& os = ctx.os();
  const std::vector<int64_t> sizes =
      ctx.quick ? std::vector<int64_t>{64, 128} : std::vector<int64_t>{1024, 4096};
  const double budget_ms = ctx.quick ? 10 : 400;
  const double warm_ms = dev.is_cpu() || ctx.quick ? 0 : 300;
  Table table({"dtype", "case", "TFLOP/s", "median", "first run", "runs"});
  std::vector<std::string> notes;
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    auto run = [&](const std::string& label, double flop, const Tensor& a, const Tensor& b) {
      Timing t;
      int reps = 1;
      const std::string why = unsupported_reason([&] {
        // The cold run and a warm one alone, then samples of enough products back to back to
        // take ~2 ms (a synchronisation per product would time the host's wait, as the anchor's
        // events between 20 products do not).
        const Timing one = measure(
            [&] {
              const Tensor c = a.matmul(b);
              dev.synchronize();
            },
            1, 1, budget_ms, warm_ms);
        reps = static_cast<int>(std::clamp(2.0 / std::max(one.median_ms, 1e-3), 1.0, 50.0));
        t = measure(
            [&] {
              for (int r = 0; r < reps; r++) const Tensor c = a.matmul(b);
              dev.synchronize();
            },
            3, 20, budget_ms);
        t.first_ms = one.first_ms;
        t.median_ms /= reps;
      });
      if (!why.empty()) {
        table.add_row({dtype_name(dt), label, "unsupported"});
        add_note(notes, why);
        return;
      }
      table.add_row({dtype_name(dt), label, fixed(flop / (t.median_ms * 1e9), 1),
                     fixed(t.median_ms, 3) + " ms", fixed(t.first_ms, 2) + " ms",
                     std::to_string(t.later_runs) + " × " + std::to_string(reps)});
    };
    for (int64_t n : sizes) {
      const Tensor a = Tensor::randn(0, 1, {n, n}, dt, dev),
                   b = Tensor::randn(0, 1, {n, n}, dt, dev);
      const double flop = 2.0 * n * n * n;
      const std::string sz = " n=" + std::to_string(n);
      run("a@b" + sz, flop, a, b);
      run("a@bT" + sz, flop, a, b.t());
      run("aT@b" + sz, flop, a.t(), b);
    }
    const int64_t s = ctx.quick ? 64 : 512;
    const Tensor x = Tensor::randn(0, 1, {8, 16, s, s}, dt, dev).narrow(1, 0, 8);
    const Tensor y = Tensor::randn(0, 1, {8, 8, s, s}, dt, dev);
    run("batched narrowed 64x" + std::to_string(s) + "^3", 2.0 * 64 * s * s * s, x, y);
  }
  table.print(os);
  os << "\nTFLOP/s = 2 m n k / median time per product of the runs after the first (runs × "
        "products back to back per run, ~2 ms each); transposed operands are views (no copy); "
     << warm_ms << " ms of untimed runs first (clocks up). Anchor: torch.matmul on the same cases "
     << "in the same call (shared/anchors/torch_gemm_decode.py).\n";
  print_notes(os, notes);
  return true;
}

}  // namespace wick::cli
