#include "quantized_ref.h"

#include <cmath>

#include "gpu/gpu_device.h"
#include "quantized/kernels.h"

namespace wick::testing {

std::vector<float> block_test_data(Rng& rng, int64_t rows, int64_t k, int64_t block) {
  std::vector<float> v(static_cast<size_t>(rows * k));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n_blocks = rows * k / block;
  for (int64_t b = 0; b < n_blocks; b++) {
    float* x = v.data() + b * block;
    const float scale = std::pow(10.0f, static_cast<float>(rng.uniform(-3, 2)));
    const int64_t kind = b % 5;
    for (int64_t j = 0; j < block; j++) x[j] = scale * normal(rng.gen());
    if (kind == 1) std::fill(x, x + block, 0.0f);
    if (kind == 2)
      for (int64_t j = 0; j < block; j++) x[j] = -std::fabs(x[j]) - 0.1f * scale;
    if (kind == 3)
      x[rng.integer(0, block - 1)] = 100.0f * scale * (rng.uniform(0, 1) < 0.5 ? -1 : 1);
  }
  return v;
}

Expected expected_qmatmul(const std::vector<float>& w, const std::vector<double>& x, int64_t m,
                          int64_t n, int64_t k, int64_t act_block) {
  Expected e{std::vector<double>(static_cast<size_t>(m * n)),
             std::vector<double>(static_cast<size_t>(m * n))};
  std::vector<double> half_step(static_cast<size_t>(k));
  for (int64_t r = 0; r < m; r++) {
    const double* xr = x.data() + r * k;
    for (int64_t b = 0; b < k / act_block; b++) {
      double amax = 0;
      for (int64_t j = 0; j < act_block; j++)
        amax = std::max(amax, std::fabs(xr[b * act_block + j]));
      std::fill_n(half_step.begin() + b * act_block, act_block, amax / 127 / 2 * (1 + 1e-6));
    }
    for (int64_t o = 0; o < n; o++) {
      const float* wo = w.data() + o * k;
      double want = 0, mag = 0, act_err = 0;
      for (int64_t i = 0; i < k; i++) {
        want += wo[i] * xr[i];
        mag += std::fabs(wo[i] * xr[i]);
        act_err += std::fabs(wo[i]) * half_step[static_cast<size_t>(i)];
      }
      e.y[static_cast<size_t>(r * n + o)] = want;
      e.tol[static_cast<size_t>(r * n + o)] = act_err + 1e-5 * mag + 1e-30;
    }
  }
  return e;
}

Expected expected_for(QuantType t, const std::vector<float>& w, const std::vector<double>& x,
                      int64_t m, int64_t n, int64_t k, bool f16_gemm) {
  namespace q = wick::quantized;
  Expected e = expected_qmatmul(w, x, m, n, k, q::act_kind(t) == q::ActKind::Block32 ? 32 : 256);
  if (f16_gemm) {
    const double rel = 3 * 0x1p-11 + 0x1p-21 + (static_cast<double>(k) + 3) * 0x1p-24;
    for (int64_t r = 0; r < m; r++)
      for (int64_t o = 0; o < n; o++) {
        double mag = 0, sum = 0;
        for (int64_t i = 0; i < k; i++) {
          const double wi = w[static_cast<size_t>(o * k + i)],
                       xi = x[static_cast<size_t>(r * k + i)];
          mag += std::fabs(wi * xi);
          sum += std::fabs(wi) + std::fabs(xi);
        }
        e.tol[static_cast<size_t>(r * n + o)] = rel * mag + 0x1p-24 * sum + 0x1p-24;
      }
    return e;
  }
  if (q::dot_kernel_scalar(t) && m < q::gemm_min_rows()) return e;
  for (int64_t r = 0; r < m; r++)
    for (int64_t o = 0; o < n; o++) {
      double mag = 0;
      for (int64_t i = 0; i < k; i++)
        mag += std::fabs(static_cast<double>(w[static_cast<size_t>(o * k + i)]) *
                         x[static_cast<size_t>(r * k + i)]);
      e.tol[static_cast<size_t>(r * n + o)] = (static_cast<double>(k) + 3) * 0x1p-24 * mag + 1e-30;
    }
  return e;
}

double gap_over_term_sum(const std::vector<float>& a, const std::vector<float>& b,
                         const std::vector<float>& w, int64_t block, const std::vector<float>& x,
                         int64_t m, int64_t n, int64_t k) {
  std::vector<double> wmag(w.size());
  for (size_t b0 = 0; b0 < w.size(); b0 += static_cast<size_t>(block)) {
    double amax = 0;
    for (size_t i = b0; i < b0 + static_cast<size_t>(block); i++)
      amax = std::max(amax, std::fabs(static_cast<double>(w[i])));
    for (size_t i = b0; i < b0 + static_cast<size_t>(block); i++)
      wmag[i] = std::fabs(static_cast<double>(w[i])) + amax;
  }
  double worst = 0;
  for (int64_t r = 0; r < m; r++)
    for (int64_t o = 0; o < n; o++) {
      double mag = 0;
      for (int64_t i = 0; i < k; i++)
        mag += wmag[static_cast<size_t>(o * k + i)] * std::fabs(x[static_cast<size_t>(r * k + i)]);
      const auto at = static_cast<size_t>(r * n + o);
      const double gap = std::fabs(static_cast<double>(a[at]) - b[at]);
      worst = std::max(worst, mag > 0 ? gap / mag : gap > 0 ? INFINITY : 0.0);
    }
  return worst;
}

void check_qmatmul(const Tensor& y, const Expected& e, const std::string& what) {
  ASSERT_EQ(y.dtype(), DType::F32) << what;
  const std::vector<float> got = y.to_vec<float>();
  ASSERT_EQ(got.size(), e.y.size()) << what;
  for (size_t i = 0; i < got.size(); i++)
    ASSERT_LE(std::fabs(got[i] - e.y[i]), e.tol[i])
        << what << " element " << i << ": got " << got[i] << " want " << e.y[i];
}

bool f16_gemm_for(const Device& dev, int64_t m) {
  const auto* g = dynamic_cast<const gpu::GpuDevice*>(&dev.backend());
  return g && g->qmatmul_dequantizes(m);
}

const std::vector<QuantType>& quantized_matmul_types() {
  static const std::vector<QuantType> types = {
      QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0,   QuantType::Q5_1,  QuantType::Q8_0,
      QuantType::Q8_1, QuantType::Q2_K, QuantType::Q3_K,   QuantType::Q4_K,  QuantType::Q5_K,
      QuantType::Q6_K, QuantType::Q8_K, QuantType::IQ4_NL, QuantType::IQ4_XS};
  return types;
}

void check_every_format(const Device& dev, const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  int64_t n_max = 0;
  for (const auto& s : shapes) n_max = std::max(n_max, s.second);
  for (QuantType t : quantized_matmul_types()) {
    const int64_t block = quant_type_info(t)->block_elems;
    for (int64_t k : {block == 32 ? int64_t{96} : int64_t{512}, int64_t{256}}) {
      const QTensor all =
          quantize(Tensor::from_vec(block_test_data(rng, n_max, k, block), {n_max, k}), t);
      const std::vector<float> w_all = dequantize(all).to_vec<float>();
      for (const auto& [m, n] : shapes) {
        const QTensor qw(t, Shape{n, k},
                         std::vector<uint8_t>(all.data(), all.data() + n * all.row_bytes()));
        const std::vector<float> w(w_all.begin(), w_all.begin() + n * k);
        const QMatMul mm(qw, dev);
        const Ref xr = random_ref(rng, {m, k}, -3, 3);
        const Tensor y = mm.forward(make_tensor(xr, DType::F32, dev));
        const std::string what = std::string(quant_type_info(t)->name) + " m=" + std::to_string(m) +
                                 " n=" + std::to_string(n) + " k=" + std::to_string(k) + " on " +
                                 dev.name();
        ASSERT_EQ(y.shape(), (Shape{m, n})) << what;
        ASSERT_EQ(y.device(), dev) << what;
        check_qmatmul(
            y, expected_for(t, w, round_ref(xr, DType::F32).v, m, n, k, f16_gemm_for(dev, m)),
            what);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

void check_layouts_and_dtypes(const Device& dev) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (QuantType t : {QuantType::Q4_0, QuantType::Q6_K}) {
    const int64_t k = 256, n = 37;
    const QTensor qw = quantize(
        Tensor::from_vec(block_test_data(rng, n, k, quant_type_info(t)->block_elems), {n, k}), t);
    const std::vector<float> w = dequantize(qw).to_vec<float>();
    const QMatMul mm(qw, dev);
    for (const Shape& xs : {Shape{3, k}, Shape{40, k}, Shape{2, 3, k}, Shape{k}}) {
      const Ref xr = random_ref(rng, xs);
      const int64_t m = xr.numel() / k;
      for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        const Expected want =
            expected_for(t, w, round_ref(xr, dt).v, m, n, k, f16_gemm_for(dev, m));
        for (Variant v : kAllVariants) {
          const std::string what = std::string(quant_type_info(t)->name) + " x=" + xs.str() + " " +
                                   dtype_name(dt) + " " + variant_name(v) + " on " + dev.name();
          const Tensor y = mm.forward(make_tensor(xr, dt, dev, v));
          std::vector<int64_t> want_dims = xs.dims();
          want_dims.back() = n;
          ASSERT_EQ(y.shape(), Shape(want_dims)) << what;
          check_qmatmul(y, want, what);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

}  // namespace wick::testing
