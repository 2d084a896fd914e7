// The GPU quantized matmul's mechanisms on each GPU device under test (its numbers are checked on
// every device by the QMatMulOnDevices suite in test_quantized.cpp): x quantized to 8 bits as on
// the CPU, then one matmul dispatch, with no host round trip; inputs and outputs declared to the
// hazard tracker, one module per format (the row count a specialization constant: a pipeline per
// count, and on CUDA, which compiles constants in, a module too), and the GPUs' kernel choices
// (tiled kernel, reduction across subgroups or without them), which lavapipe's own defaults do not
// take. And the point of the 8-bit x: the GPU kernels give the CPU's numbers up to summation
// order, for every format, on either rounding of the CPU's activation quantizer.
#include <cmath>

#include "gpu_test_util.h"
#include "quantized/kernels.h"
#include "quantized_ref.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

QTensor random_weight(Rng& rng, int64_t n, int64_t k, QuantType t) {
  return quantize(make_tensor(random_ref(rng, {n, k}), DType::F32, Device::cpu()), t);
}

// What separates y (computed on a device) from the CPU's QMatMul of the same weight and x, over
// the sum of the terms' magnitudes (gap_over_term_sum): f32 rounding only, < 1e-5, where f32 x
// would leave the CPU's 8-bit activation error (~4e-3).
double cpu_gap(const Tensor& y, const QTensor& w, const Tensor& x) {
  const int64_t n = w.shape()[0], k = w.shape()[1], m = x.numel() / k;
  const Tensor x_cpu = x.to_device(Device::cpu());
  const std::vector<float> want = QMatMul(w).forward(x_cpu.reshape(Shape{m, k})).to_vec<float>();
  return gap_over_term_sum(y.to_vec<float>(), want, dequantize(w).to_vec<float>(),
                           quant_type_info(w.type())->block_elems, x_cpu.to_vec<float>(), m, n, k);
}

class GpuQMatMul : public GpuDeviceTest {
 protected:
  PoisonOff quiet;  // exact dispatch and barrier counts
  Device d = private_device([](gpu::GpuOptions& o) { o.queue.ops_per_buffer = 1000; });
  Rng rng;
  gpu::GpuDevice::Stats stats() const { return gpu(d).stats(); }
};

TEST_P(GpuQMatMul, ForwardIsTwoDispatchesWithNoHostRoundTrip) {
  SCOPED_TRACE(rng.seed());
  const QTensor w = random_weight(rng, 96, 256, QuantType::Q4_K);
  const QMatMul mm(w, d);
  const Tensor x = make_tensor(random_ref(rng, {3, 256}), DType::F32, d);
  d.synchronize();
  const auto before = stats().queue;
  const Tensor y = mm.forward(x);
  const auto after = stats().queue;
  EXPECT_EQ(after.dispatches - before.dispatches, 2u) << "quantize x, then the matmul";
  EXPECT_EQ(after.commits - before.commits, 0u) << "nothing was read back or waited for";
  EXPECT_EQ(y.device(), d);
  EXPECT_LT(cpu_gap(y, w, x), 1e-5);
}

TEST_P(GpuQMatMul, DeclaresItsInputsAndOutputToTheHazardTracker) {
  SCOPED_TRACE(rng.seed());
  const QTensor w = random_weight(rng, 40, 64, QuantType::Q8_0);
  const QMatMul mm(w, d);
  const Tensor a = make_tensor(random_ref(rng, {2, 64}), DType::F32, d);
  const Tensor b = make_tensor(random_ref(rng, {2, 64}), DType::F32, d);
  const Tensor c = Tensor::ones({2, 40}, DType::F32, d);
  d.synchronize();  // the uploads are done; the next list starts clean
  const uint64_t before = stats().queue.barriers;
  const Tensor x = a + b;
  // Reads x (one barrier), then its matmul reads the quantized x (another).
  const Tensor y = mm.forward(x);
  EXPECT_EQ(stats().queue.barriers - before, 2u);
  const Tensor z = y + c;  // reads y: another
  EXPECT_EQ(stats().queue.barriers - before, 3u);
  // Reads only what no queued op writes: none but the one between its own two dispatches.
  const Tensor unrelated = mm.forward(a);
  EXPECT_EQ(stats().queue.barriers - before, 4u);
  EXPECT_LT(cpu_gap(z - c, w, x), 1e-5);
  EXPECT_LT(cpu_gap(unrelated, w, a), 1e-5);
}

TEST_P(GpuQMatMul, OneModulePerFormatAndDtypeOnePipelinePerRowCount) {
  const QTensor w4 = random_weight(rng, 16, 64, QuantType::Q4_0);
  const QTensor w8 = random_weight(rng, 16, 64, QuantType::Q8_0);
  const QMatMul m4(w4, d), m8(w8, d);
  auto x = [&](int64_t m) { return Tensor::ones({m, 64}, DType::F32, d); };
  const auto k0 = stats().kernels;
  m4.forward(x(1));
  const auto k1 = stats().kernels;
  m4.forward(x(2));  // same source and options (qmatvec, q4_0, f32), another specialization
  const auto k2 = stats().kernels;
  m4.forward(x(1));  // cached
  m8.forward(x(1));  // another format: another module
  const auto k3 = stats().kernels;
  // The first forward also builds the quantizer of x (one per block size and dtype), which
  // every 32-element format shares.
  EXPECT_EQ(modules(k1) - modules(k0), 2u);
  EXPECT_EQ(modules(k2) - modules(k1), constants_in_module(d) ? 1u : 0u);
  EXPECT_EQ(k2.pipelines - k1.pipelines, 1u);
  EXPECT_EQ(modules(k3) - modules(k2), 1u);
  EXPECT_EQ(k3.pipelines - k2.pipelines, 1u);
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQMatMul);

class GpuQMatMulShapes : public GpuDeviceTest {};

TEST_P(GpuQMatMulShapes, QMatVecRowsKnobIsParsed) {
  const std::string exe = self_exe();
  const auto rows = [&](const std::string& env) {
    return run_gpu_child(exe, spec(), env, "GpuChild.DISABLED_ReportOptions")["qmatvec_rows"];
  };
  const std::string def = rows("-u WICK_QMATVEC_ROWS");
  EXPECT_EQ(def, std::to_string(gpu::default_qmatvec_shape(gpu(device()).device_caps()).max_rows));
  EXPECT_EQ(rows("WICK_QMATVEC_ROWS=3"), "3");
  EXPECT_EQ(rows("WICK_QMATVEC_ROWS=0"), "0");
  EXPECT_EQ(rows("WICK_QMATVEC_ROWS=-2"), def) << "negative falls back to the default";
  EXPECT_EQ(rows("WICK_QMATVEC_ROWS=abc"), def);
}

TEST_P(GpuQMatMulShapes, OneRowOnTheTiledKernel) {
  // max_rows = 0 sends every x to the tiled kernel: one row of a 32-row tile.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device tiled = private_device([](gpu::GpuOptions& o) { o.qmatvec.max_rows = 0; });
  const QTensor w = random_weight(rng, 50, 256, QuantType::Q5_K);
  const Tensor x = make_tensor(random_ref(rng, {1, 256}), DType::F32, tiled);
  EXPECT_LT(cpu_gap(QMatMul(w, tiled).forward(x), w, x), 1e-5);
}

TEST_P(GpuQMatMulShapes, WideWorkgroupsForMatricesWithManyRows) {
  // The GPUs' lm_head shape (wide_threads x wide_rows from wide_min_out rows) made to apply to
  // 67 rows: 8 full groups and a group of 3, each of 4 warps.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device wide = private_device([](gpu::GpuOptions& o) {
    o.qmatvec = {32, 2, 8};
    o.qmatvec.wide_min_out = 64;
  });
  for (QuantType t : {QuantType::Q4_1, QuantType::Q8_0, QuantType::Q4_K}) {
    SCOPED_TRACE(quant_type_info(t)->name);
    const int64_t k = quant_type_info(t)->block_elems == 32 ? 96 : 512;
    const QTensor w = random_weight(rng, 67, k, t);
    for (int64_t m : {1, 3}) {
      const Tensor x = make_tensor(random_ref(rng, {m, k}), DType::F32, wide);
      EXPECT_LT(cpu_gap(QMatMul(w, wide).forward(x), w, x), 1e-5) << "m=" << m;
    }
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQMatMulShapes);

// Sweeps of every format through the kernels: the kernels' numbers, not host code (minutes under
// ASan on lavapipe, so that pass leaves them out).
class GpuQMatMulSweeps : public GpuDeviceTest {};

TEST_P(GpuQMatMulSweeps, TheGpuChoicesWithAndWithoutSubgroupArithmetic) {
  // lavapipe's defaults (8 threads = one of its subgroups, 8 rows, qmatvec for every m) are not a
  // GPU's: run every format with the GPU's (32 threads = 4 lavapipe subgroups, 2 rows, the tiled
  // kernel beyond 8 x rows) on every device, with subgroup arithmetic and with the shared-memory
  // reduction of devices that lack it.
  for (bool subgroups : {true, false}) {
    SCOPED_TRACE(subgroups ? "subgroups" : "shared memory");
    const Device gpu_like = private_device([&](gpu::GpuOptions& o) {
      o.qmatvec = {32, 2, 8};
      o.subgroups = subgroups;
    });
    check_every_format(gpu_like, {{1, 67}, {5, 67}, {9, 67}, {33, 131}, {128, 131}});
    if (::testing::Test::HasFatalFailure()) return;
    check_layouts_and_dtypes(gpu_like);  // 40 rows: the tiled kernel's strided and f16 x
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// x of m rows (k a multiple of 32) for the agreement test: odd rows random, even rows (from the
// second) halves between integers with 127 at the start of every 32 values, so that x / d_x hits
// ties everywhere (d_x = 1, or -1/127 * -127 for Q8_K): the CPU's two roundings differ there.
std::vector<float> agreement_x(Rng& rng, int64_t m, int64_t k) {
  const Ref random = random_ref(rng, {m, k}, -3, 3);
  std::vector<float> x(random.v.begin(), random.v.end());
  for (int64_t r = 1; r < m; r += 2)
    for (int64_t i = 0; i < k; i++)
      x[static_cast<size_t>(r * k + i)] =
          i % 32 == 0 ? 127.0f : static_cast<float>((i * 37 + r) % 201 - 100) + 0.5f;
  return x;
}

TEST_P(GpuQMatMulSweeps, CpuAndGpuAgreeUpToSummationOrderForEveryFormat) {
  // The same products as the CPU's (8-bit x, integer sums) leave only f32 rounding in the sums
  // between the two: 1e-5 of the terms' magnitudes (gap_over_term_sum; f32 x would leave the
  // 8-bit activation error, ~4e-3). On the CPU's detected quantizer and on its scalar one (the
  // other rounding of halves), with the device's own kernel choices and the GPUs' (tiled kernel
  // from 9 rows).
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  struct LevelGuard {
    ~LevelGuard() { quantized::set_simd_level(quantized::detected_simd_level()); }
  } level_guard;
  const Device gpu_like = private_device([](gpu::GpuOptions& o) { o.qmatvec = {32, 2, 8}; });
  for (const Device& dev : {device(), gpu_like}) {
    for (quantized::SimdLevel level :
         {quantized::detected_simd_level(), quantized::SimdLevel::Scalar}) {
      quantized::set_simd_level(level);
      for (QuantType t : quantized_matmul_types()) {
        const int64_t block = quant_type_info(t)->block_elems, n = 67;
        for (int64_t k : {block == 32 ? int64_t{96} : int64_t{512}, int64_t{256}}) {
          const QTensor w =
              quantize(Tensor::from_vec(block_test_data(rng, n, k, block), {n, k}), t);
          const QMatMul on_cpu(w), on_dev(w, dev);
          const std::vector<float> wf = dequantize(w).to_vec<float>();
          for (int64_t m : {1, 3, 8, 33}) {
            const std::vector<float> x = agreement_x(rng, m, k);
            const Tensor xc = Tensor::from_vec(x, {m, k});
            const double gap =
                gap_over_term_sum(on_dev.forward(xc.to_device(dev)).to_vec<float>(),
                                  on_cpu.forward(xc).to_vec<float>(), wf, block, x, m, n, k);
            EXPECT_LT(gap, 1e-5) << quant_type_info(t)->name << " k=" << k << " m=" << m << " on "
                                 << dev.name() << ", CPU quantizer "
                                 << quantized::simd_level_name(level);
          }
        }
      }
    }
  }
}

WICK_INSTANTIATE_GPU_SWEEPS(GpuQMatMulSweeps);

}  // namespace
}  // namespace wick::testing
