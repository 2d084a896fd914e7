// qmatvec on the tensor cores (GpuOptions::qmatvec_mma_rows, WICK_QMATVEC_MMA: qmatvec.cu's MMA
// variant) on each GPU device with 8-bit MMA: every 32-element format of 8-bit x, 2 to 8 x rows
// (11 too: the tiled kernel's on GPUs), output rows that leave a partial tile, k of fewer units
// than the warps and of many, one to eight warps, x read in place and staged; within the float64
// bound of the CPU's integer path and near the one-row kernel's sums; the residual's one rounding;
// taken from qmatvec_mma_rows x rows and for 32-element formats only; the knob on every GPU device.
#include <limits>

#include "gpu_test_util.h"
#include "quantized/kernels.h"
#include "quantized_ref.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

// CudaOptions::from_knobs's qmatvec_mma_rows and _threads where the device has 8-bit MMA.
constexpr int64_t kCudaDefaultRows = 8;
constexpr uint32_t kCudaDefaultThreads = 512;

std::vector<float> f32_values(const Ref& r) {
  std::vector<float> out(r.v.size());
  for (size_t i = 0; i < out.size(); i++) out[i] = static_cast<float>(r.v[i]);
  return out;
}

// The formats MMA multiplies: 32-element blocks whose x the GPU quantizes to 8 bits.
std::vector<QuantType> mma_types() {
  std::vector<QuantType> types;
  for (QuantType t : quantized_matmul_types())
    if (quantized::dot_kernel_scalar(t) != nullptr && quant_type_info(t)->block_elems == 32)
      types.push_back(t);
  return types;
}

class GpuQMatVecMma : public GpuDeviceTest {
 protected:
  Rng rng;
  bool has_mma() { return gpu(device()).device_caps().int8_mma; }
  // A device that multiplies on the tensor cores from `rows` x rows (0: never), `threads` a
  // workgroup, and stages qact's rows from `stage_rows` (0: never); x never quantized inline.
  Device with(int64_t rows, uint32_t threads, int64_t stage_rows) const {
    return private_device([&](gpu::GpuOptions& o) {
      o.queue.ops_per_buffer = 1000;
      o.qmatvec_fuse_rows = 0;
      o.qmatvec_stage_rows = stage_rows;
      o.qmatvec_mma_rows = rows;
      o.qmatvec_mma_threads = threads;
    });
  }
};

TEST_P(GpuQMatVecMma, EveryFormatWithinTheFloat64BoundAndNearTheOneRowKernel) {
  if (!has_mma()) GTEST_SKIP() << device().name() << " has no 8-bit MMA";
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  struct Config {
    uint32_t threads;
    int64_t stage_rows;
  };
  for (const Config& cfg : {Config{512, 2}, Config{32, 2}, Config{256, 0}}) {
    const Device on = with(2, cfg.threads, cfg.stage_rows), off = with(0, 128, cfg.stage_rows);
    for (QuantType t : mma_types()) {
      // 3 units (fewer than most workgroups' warps) and 18 (SmolLM2's hidden size).
      for (int64_t k : {int64_t{96}, int64_t{576}}) {
        const int64_t n = 37;  // two whole tiles of 16 rows and a partial one with a lone row
        const QTensor qw = quantize(Tensor::from_vec(block_test_data(rng, n, k, 32), {n, k}), t);
        const std::vector<float> w = dequantize(qw).to_vec<float>();
        const QMatMul mm_on(qw, on), mm_off(qw, off);
        for (int64_t m : {int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, int64_t{11}}) {
          const std::string what = std::string(quant_type_info(t)->name) +
                                   " k=" + std::to_string(k) + " m=" + std::to_string(m) + " " +
                                   std::to_string(cfg.threads) + " threads" +
                                   (cfg.stage_rows ? ", staged" : "");
          const Ref xr = random_ref(rng, {m, k}, -3, 3), rr = random_ref(rng, {m, n}, -10, 10);
          const std::vector<float> xf = f32_values(round_ref(xr, DType::F32));
          const uint64_t before = gpu(on).stats().mma_qmatvecs;
          const Tensor y = mm_on.forward(make_tensor(xr, DType::F32, on));
          // Past qmatvec's rows (8 on GPUs) the tiled kernel takes x.
          const int64_t groups = m <= gpu(on).gpu_options().qmatvec.max_rows ? (m + 7) / 8 : 0;
          EXPECT_EQ(gpu(on).stats().mma_qmatvecs - before, static_cast<uint64_t>(groups)) << what;
          check_qmatmul(y, expected_qmatmul(w, round_ref(xr, DType::F32).v, m, n, k, 32), what);
          // The same integer products as the one-row kernel, summed in another order.
          const Tensor z = mm_off.forward(make_tensor(xr, DType::F32, off));
          EXPECT_EQ(gpu(off).stats().mma_qmatvecs, 0u);
          EXPECT_LE(gap_over_term_sum(y.to_vec<float>(), z.to_vec<float>(), w, 32, xf, m, n, k),
                    1e-5)
              << what;
          // The residual joins the stores: residual + the same sums, one rounding.
          const Tensor yr = mm_on.forward(make_tensor(xr, DType::F32, on),
                                          make_tensor(rr, DType::F32, on, Variant::Offset));
          const std::vector<float> yv = y.to_vec<float>(),
                                   rv = f32_values(round_ref(rr, DType::F32));
          std::vector<float> sum(yv.size());
          for (size_t i = 0; i < yv.size(); i++) sum[i] = rv[i] + yv[i];
          expect_same_bits(yr, Tensor::from_vec(sum, {m, n}), what + " +residual");
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(GpuQMatVecMma, WideMatrixOfManyTiles) {
  // An lm_head's shape scaled down: thousands of workgroups, q8_0 (34-byte blocks: 2-byte
  // aligned loads) and q4_0.
  if (!has_mma()) GTEST_SKIP() << device().name() << " has no 8-bit MMA";
  SCOPED_TRACE(rng.seed());
  const Device on = with(2, 128, 2);
  for (QuantType t : {QuantType::Q8_0, QuantType::Q4_0}) {
    const int64_t n = 4099, k = 64, m = 8;
    const QTensor qw = quantize(Tensor::from_vec(block_test_data(rng, n, k, 32), {n, k}), t);
    const std::vector<float> w = dequantize(qw).to_vec<float>();
    const Ref xr = random_ref(rng, {m, k}, -3, 3);
    const Tensor y = QMatMul(qw, on).forward(make_tensor(xr, DType::F32, on));
    check_qmatmul(y, expected_qmatmul(w, round_ref(xr, DType::F32).v, m, n, k, 32),
                  quant_type_info(t)->name);
  }
  EXPECT_EQ(gpu(on).stats().mma_qmatvecs, 2u);
}

TEST_P(GpuQMatVecMma, TakesFromMmaRowsAndOnly32ElementFormats) {
  SCOPED_TRACE(rng.seed());
  const Device on = with(3, 128, 0);
  const int64_t n = 20, k = 256;
  for (QuantType t : {QuantType::Q4_1, QuantType::Q4_K}) {
    const QTensor qw = quantize(Tensor::from_vec(block_test_data(rng, n, k, 32), {n, k}), t);
    const QMatMul mm(qw, on);
    for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{8}}) {
      const uint64_t before = gpu(on).stats().mma_qmatvecs;
      mm.forward(make_tensor(random_ref(rng, {m, k}), DType::F32, on)).to_vec<float>();
      const bool want = has_mma() && t == QuantType::Q4_1 && m >= 3;
      EXPECT_EQ(gpu(on).stats().mma_qmatvecs - before, want ? 1u : 0u)
          << quant_type_info(t)->name << " m=" << m;
    }
  }
}

TEST_P(GpuQMatVecMma, KnobIsParsed) {
  const std::string exe = self_exe();
  const auto mma = [&](const std::string& env) {
    auto kv = run_gpu_child(exe, spec(), env, "GpuChild.DISABLED_ReportOptions");
    return kv["qmatvec_mma_rows"] + " " + kv["qmatvec_mma_threads"];
  };
  // Devices without 8-bit MMA never take it, whatever the knob says.
  const bool on = has_mma();
  const bool cuda = device().kind() == DeviceKind::Cuda && on;
  const std::string threads = " " + std::to_string(cuda ? kCudaDefaultThreads : 128u);
  const std::string def = mma("-u WICK_QMATVEC_MMA");
  EXPECT_EQ(def, std::to_string(cuda ? kCudaDefaultRows : 0) + threads);
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=off"), "0" + threads);
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=0"), "0" + threads);
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=on"), (on ? "2" : "0") + threads);
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=5"), (on ? "5" : "0") + threads);
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=3,64"), on ? "3 64" : "0 128");
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=3,512"), on ? "3 512" : "0 128");
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=3,100"), def) << "threads outside 32..512: the default";
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=3,1024"), def);
  EXPECT_EQ(mma("WICK_QMATVEC_MMA=abc"), def) << "unparsable falls back to the default";
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQMatVecMma);

}  // namespace
}  // namespace wick::testing
