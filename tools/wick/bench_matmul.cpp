// Matmul speed: wick's n x n matmul in f32, f64, bf16 and f16 against OpenBLAS sgemm / dgemm
// called directly in the same process on the same values. bf16 and f16 have no BLAS routine, so
// their anchor is sgemm on the same (f32) values.
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "bench.h"
#include "report.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

double gflops(int64_t n, double ms) {
  return 2.0 * n * n * n / (ms * 1e6);
}

// max |got - want| / max |want|.
template <typename T>
double rel_error(const std::vector<T>& got, const std::vector<T>& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); i++) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// A right answer's max rel err stays well under these (bf16/f16 results are rounded to the dtype).
double error_bound(DType dt) {
  switch (dt) {
    case DType::F64:
      return 1e-10;
    case DType::F32:
      return 1e-4;
    case DType::F16:
      return 1e-2;
    default:
      return 4e-2;
  }
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

// A GPU idles while the host runs the BLAS anchor and clocks down (the H200: 345 MHz idle, 1980
// busy); without warming up, n = 4096 was timed at 4.1 TFLOP/s instead of 18 (2026-11-30).
constexpr double kGpuWarmMs = 300;

// One table row: wick's n x n matmul in dt against BLAS on the same values; ok &= right answer.
std::vector<std::string> matmul_row(const Device& dev, DType dt, int64_t n, double budget_ms,
                                    bool quick, bool& ok) {
  const size_t nn = static_cast<size_t>(n * n);
  const std::vector<float> a = random_floats(nn, 10 + n), b = random_floats(nn, 20 + n);
  const Tensor ta = Tensor::from_vec(a, {n, n}, dev).to_dtype(dt);
  const Tensor tb = Tensor::from_vec(b, {n, n}, dev).to_dtype(dt);
  dev.synchronize();
  Tensor tc;
  const Timing w = measure(
      [&] {
        tc = ta.matmul(tb);
        dev.synchronize();
      },
      1, 5, budget_ms, dev.is_cpu() || quick ? 0.0 : kGpuWarmMs);

  // The anchor: BLAS on the values the wick operands hold (rounded to bf16/f16 where so).
  Timing blas;
  double err;
  const char* routine;
  if (dt == DType::F64) {
    routine = "dgemm";
    const std::vector<double> da = ta.to_vec<double>(), db = tb.to_vec<double>();
    std::vector<double> dc(nn);
    blas = measure(
        [&] {
          cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, da.data(), n,
                      db.data(), n, 0.0, dc.data(), n);
        },
        1, 5, budget_ms);
    err = rel_error(tc.to_vec<double>(), dc);
  } else {
    routine = dt == DType::F32 ? "sgemm" : "sgemm (f32)";
    const std::vector<float> fa = ta.to_vec<float>(), fb = tb.to_vec<float>();
    std::vector<float> fc(nn);
    blas = measure(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, fa.data(), n,
                      fb.data(), n, 0.0f, fc.data(), n);
        },
        1, 5, budget_ms);
    err = rel_error(tc.to_vec<float>(), fc);
  }
  ok &= err <= error_bound(dt);
  return {dtype_name(dt),
          std::to_string(n),
          fixed(gflops(n, w.median_ms), 1),
          fixed(w.first_ms, 2) + " ms",
          routine,
          fixed(gflops(n, blas.median_ms), 1),
          fixed(blas.median_ms / w.median_ms, 2) + "x",
          std::to_string(w.later_runs) + " / " + std::to_string(blas.later_runs),
          sci(err) + (err <= error_bound(dt) ? "" : " WRONG")};
}

}  // namespace

bool bench_matmul(const BenchContext& ctx) {
  print_title(ctx, "matmul");
  const Device dev = ctx.device();
  std::ostream& os = ctx.os();
  std::vector<int64_t> sizes =
      ctx.quick ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{64, 256, 1024, 2048};
  if (!ctx.quick && (!dev.is_cpu() || ctx.full)) sizes.push_back(4096);
  const double budget_ms = ctx.quick ? 10 : 1500;

  os << "BLAS: " << describe_blas() << "\n\n";
  Table table({"dtype", "n", "wick GFLOP/s", "wick first run", "BLAS", "BLAS GFLOP/s",
               "wick / BLAS", "runs", "max rel err"});
  bool ok = true;
  std::vector<std::string> notes;
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    for (int64_t n : sizes) {
      std::vector<std::string> row;
      const std::string why =
          unsupported_reason([&] { row = matmul_row(dev, dt, n, budget_ms, ctx.quick, ok); });
      if (!why.empty()) {
        row = {dtype_name(dt), std::to_string(n), "unsupported"};
        add_note(notes, std::string(dtype_name(dt)) + " matmul: " + why);
      }
      table.add_row(row);
    }
  }
  table.print(os);
  os << "\nGFLOP/s = 2n³ / median time of the runs after the first (runs: wick / BLAS); the first "
        "(cold) wick run is shown apart; on a GPU the timed runs follow "
     << (ctx.quick ? 0 : kGpuWarmMs)
     << " ms of untimed ones (clocks up). wick / BLAS > 1 means wick is faster. Max rel err = "
        "max |wick - BLAS| / max |BLAS| (bf16/f16 results are rounded to their dtype).";
  if (dev.is_cpu() && !ctx.full && !ctx.quick) os << " n = 4096 runs with --full.";
  os << "\n";
  print_notes(os, notes);
  return ok;
}

}  // namespace wick::cli
