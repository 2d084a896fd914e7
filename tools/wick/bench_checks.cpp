// The seed's two correctness repros: batch_mm (matmul of a narrowed 4-D tensor, which candle's
// Metal GEMM got wrong) and storage (copy() then an in-place write, which candle's Metal copy
// shared with the original).
#include <cmath>
#include <cstdio>
#include <ostream>

#include "bench.h"
#include "report.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

// out[b, i, j] = sum_p x[b, i, p] * y[b, p, j] in float64, all row-major.
std::vector<double> reference_bmm(const std::vector<double>& x, const std::vector<double>& y,
                                  int64_t batch, int64_t m, int64_t k, int64_t n) {
  std::vector<double> out(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++) s += x[(b * m + i) * k + p] * y[(b * k + p) * n + j];
        out[(b * m + i) * n + j] = s;
      }
  return out;
}

std::string dims_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Largest |got - want| over batch b of m*n elements.
double batch_diff(const std::vector<double>& got, const std::vector<double>& want, int64_t b,
                  int64_t mn) {
  double d = 0;
  for (int64_t i = b * mn; i < (b + 1) * mn; i++) d = std::max(d, std::abs(got[i] - want[i]));
  return d;
}

std::string values_text(const Tensor& t) {
  std::string s = "[";
  const auto v = t.to_vec<float>();
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + fixed(v[i], 1);
  return s + "]";
}

}  // namespace

bool bench_batch_mm(const BenchContext& ctx) {
  print_title(ctx, "batch_mm");
  const Device dev = ctx.device();
  std::ostream& os = ctx.os();
  const Tensor x = Tensor::randn(0, 1, {2, 4, 3, 5}, DType::F32, dev);
  const Tensor y = Tensor::randn(0, 1, {2, 2, 5, 6}, DType::F32, dev);
  const Tensor xn = x.narrow(1, 0, 2);  // shape (2, 2, 3, 5), strides (60, 15, 5, 1)
  os << "xn dims " << dims_text(xn.dims()) << " stride " << dims_text(xn.layout().strides) << "\n";

  const std::vector<double> want =
      reference_bmm(xn.to_vec<double>(), y.to_vec<double>(), 4, 3, 5, 6);
  const std::vector<double> strided = xn.matmul(y).to_vec<double>();
  const std::vector<double> contiguous = xn.contiguous().matmul(y).to_vec<double>();
  // f32 products of 5 terms of N(0, 1) values: a right answer is within ~1e-6.
  const double tol = 1e-4;
  bool ok = true;
  char line[160];
  for (int64_t b = 0; b < 4; b++) {
    const double d = batch_diff(strided, want, b, 18);
    ok &= d <= tol;
    std::snprintf(line, sizeof line, "%s batch (%lld,%lld) max |diff| = %.14f\n",
                  dev.name().c_str(), static_cast<long long>(b / 2), static_cast<long long>(b % 2),
                  d);
    os << line;
  }
  double dc = 0;
  for (int64_t b = 0; b < 4; b++) dc = std::max(dc, batch_diff(contiguous, want, b, 18));
  ok &= dc <= tol;
  std::snprintf(line, sizeof line, "%s after contiguous(): max |diff| = %.14f\n",
                dev.name().c_str(), dc);
  os << line;
  os << "(|diff| against a float64 reference; tolerance " << tol << ")\n";
  os << "batch_mm: " << (ok ? "OK" : "WRONG") << "\n\n";
  return ok;
}

bool bench_storage(const BenchContext& ctx) {
  print_title(ctx, "storage");
  const Device dev = ctx.device();
  std::ostream& os = ctx.os();
  const Tensor orig = Tensor::zeros({4}, DType::F32, dev);
  const Tensor copied = orig.copy();
  const Tensor src = Tensor::ones({2}, DType::F32, dev);
  orig.slice_set(src, 0, 0);
  const std::vector<float> o = orig.to_vec<float>(), c = copied.to_vec<float>();
  os << dev.name() << ": orig=" << values_text(orig) << " copy=" << values_text(copied) << "\n";
  const bool wrote = o == std::vector<float>{1, 1, 0, 0};
  const bool independent = c == std::vector<float>{0, 0, 0, 0};
  if (!wrote)
    os << "storage: WRONG (slice_set did not write [1, 1] into the original)\n\n";
  else if (!independent)
    os << "storage: WRONG (the copy shares memory with the original)\n\n";
  else
    os << "storage: OK (the copy stayed independent)\n\n";
  return wrote && independent;
}

}  // namespace wick::cli
