// Quantized matmul speed: QMatMul on SmolLM2-135M's weight shapes (q4_1 projections, the q8_0
// tied lm_head) for a decode step (m = 1), batched decode steps (m = 2, 4, 8) and a prompt (m =
// 64), against an f32 matmul of the same shape on the same device (x @ W^T with W dequantized) as
// the anchor.
#include <algorithm>
#include <cmath>

#include "bench.h"
#include "report.h"
#include "wick/quantized.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

struct QShape {
  int64_t k, n_out;
  QuantType type;
};

// SmolLM2-135M: hidden 576, kv dim 192, ffn 1536, vocab 49152.
const QShape kShapes[] = {{576, 576, QuantType::Q4_1},
                          {576, 192, QuantType::Q4_1},
                          {576, 1536, QuantType::Q4_1},
                          {1536, 576, QuantType::Q4_1},
                          {576, 49152, QuantType::Q8_0}};

// Microseconds per call of f (which records work; the device is waited for once per run of
// calls): the median of up to 7 runs of enough calls to fill ~20 ms, within `budget_ms`.
template <typename F>
double us_per_call(const Device& dev, F&& f, double budget_ms) {
  const double one = time_ms([&] {
    f();
    dev.synchronize();
  });  // also the warm-up (kernels compiled)
  const int reps = std::clamp(static_cast<int>(20.0 / std::max(one, 1e-3)), 1, 200);
  const Timing t = measure(
      [&] {
        for (int i = 0; i < reps; i++) f();
        dev.synchronize();
      },
      1, 7, budget_ms);
  return t.median_ms * 1000.0 / reps;
}

// max |got - want| / max |want|.
double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); i++) {
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace

bool bench_qmatmul(const BenchContext& ctx) {
  print_title(ctx, "qmatmul");
  const Device dev = ctx.device();
  std::ostream& os = ctx.os();
  const double budget_ms = ctx.quick ? 20 : 1000;
  // Every device quantizes x to 8 bits per block as the CPU does (these shapes: m < 1024).
  const double bound = 3e-2;
  Table table({"weight (n_out x k)", "type", "m", "qmatmul µs", "f32 matmul µs", "f32 / qmatmul",
               "MB q / f32", "max rel err"});
  bool ok = true;
  std::vector<std::string> notes;
  for (const QShape& s : kShapes) {
    if (ctx.quick && s.n_out > 1536) continue;
    const char* type = quant_type_info(s.type)->name;
    const std::string name = std::to_string(s.n_out) + " x " + std::to_string(s.k);
    const std::string why = unsupported_reason([&] {
      const std::vector<float> wf =
          random_floats(static_cast<size_t>(s.n_out * s.k), static_cast<uint64_t>(s.n_out + s.k));
      const QTensor qw = quantize(Tensor::from_vec(wf, {s.n_out, s.k}), s.type);
      const QMatMul mm(qw, dev);
      // The anchor multiplies by the same (dequantized) values, laid out (k, n_out).
      const Tensor wt = dequantize(qw, DType::F32, dev).t().contiguous();
      // m = 2..8: a batched decode step of `wick serve` (one x row per sequence).
      for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}, int64_t{64}}) {
        const Tensor x = Tensor::from_vec(
            random_floats(static_cast<size_t>(m * s.k), static_cast<uint64_t>(m)), {m, s.k}, dev);
        Tensor y, y_ref;
        const double q_us = us_per_call(
            dev, [&] { y = mm.forward(x); }, budget_ms);
        const double f_us = us_per_call(
            dev, [&] { y_ref = x.matmul(wt); }, budget_ms);
        const double err = rel_error(y.to_vec<float>(), y_ref.to_vec<float>());
        ok &= err <= bound;
        const double mb = 1e-6;
        table.add_row({name, type, std::to_string(m), fixed(q_us, 1), fixed(f_us, 1),
                       fixed(f_us / q_us, 2) + "x",
                       fixed(static_cast<double>(qw.nbytes()) * mb, 2) + " / " +
                           fixed(static_cast<double>(s.n_out * s.k * 4) * mb, 2),
                       fixed(err, 6) + (err <= bound ? "" : " WRONG")});
      }
    });
    if (!why.empty()) {
      table.add_row({name, type, "", "unsupported"});
      add_note(notes, std::string("qmatmul ") + type + ": " + why);
    }
  }
  table.print(os);
  os << "\nµs per call: the median of runs of many calls, each run waiting for the device once. "
        "The anchor is x @ W^T in f32 with W dequantized, on the same device; f32 / qmatmul > 1 "
        "means the quantized matmul is faster. Max rel err = max |qmatmul - f32| / max |f32| "
     << "(x is quantized to 8 bits per block, on every device as on the CPU).";
  if (ctx.quick) os << " --quick skips the 49152-row lm_head.";
  os << "\n";
  print_notes(os, notes);
  return ok;
}

}  // namespace wick::cli
