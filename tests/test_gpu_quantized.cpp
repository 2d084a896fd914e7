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
  // qact then the product (qmatvec quantizing its own x: test_qmatvec_fuse.cpp).
  Device d = private_device([](gpu::GpuOptions& o) {
    o.queue.ops_per_buffer = 1000;
    o.qmatvec_fuse_rows = 0;
  });
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

TEST_P(GpuQMatMul, LongXOnTheF16PathIsDequantCastGemmCast) {
  // Forced on (lavapipe has no tensor cores: its SIMT GEMM takes the f16 product): W decoded to
  // f16, x cast to f16, one matmul, the product cast to f32; the residual after, as an add. All
  // recorded, nothing waited for.
  SCOPED_TRACE(rng.seed());
  const Device f16 = private_device([](gpu::GpuOptions& o) {
    o.queue.ops_per_buffer = 1000;
    o.dequant_rows = 16;
    o.qmatvec_fuse_rows = 0;
  });
  EXPECT_FALSE(gpu(f16).qmatmul_dequantizes(15));
  EXPECT_TRUE(gpu(f16).qmatmul_dequantizes(16));
  const QTensor w = random_weight(rng, 40, 256, QuantType::Q4_K);
  const QMatMul mm(w, f16);
  const Tensor x = make_tensor(random_ref(rng, {20, 256}), DType::F32, f16);
  const Tensor r = make_tensor(random_ref(rng, {20, 40}), DType::F32, f16);
  const Tensor x16 = x.to_dtype(DType::F16);
  f16.synchronize();
  auto dispatches = [&] { return gpu(f16).stats().queue.dispatches; };
  const uint64_t d0 = dispatches(), c0 = gpu(f16).stats().queue.commits;
  const Tensor y = mm.forward(x);
  const uint64_t d1 = dispatches();
  EXPECT_EQ(d1 - d0, 4u) << "dequantize W, cast x, matmul, cast y";
  const Tensor yr = mm.forward(x, r);
  const uint64_t d2 = dispatches();
  EXPECT_EQ(d2 - d1, 5u) << "and the residual's add";
  mm.forward(x16);
  EXPECT_EQ(dispatches() - d2, 3u) << "f16 x is multiplied as it is";
  EXPECT_EQ(gpu(f16).stats().queue.commits - c0, 0u) << "nothing was read back or waited for";
  EXPECT_EQ(yr.to_vec<float>(), (r + y).to_vec<float>()) << "residual + forward(x), bit for bit";
  // Below the rows, and by default on a device without tensor cores: the kernels of before.
  const uint64_t d3 = dispatches();
  mm.forward(x.narrow(0, 0, 15));
  EXPECT_EQ(dispatches() - d3, 2u) << "quantize x, then qmatvec or the tiled kernel";
  EXPECT_EQ(gpu(d).qmatmul_dequantizes(512), gpu(d).f16_tensor_gemm());
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

TEST_P(GpuQMatMulShapes, DecodeAndMidWorkgroupsByRowsOfXAndOfW) {
  // The tiers made to apply to small matrices: for up to 2 x rows (decode) 64 x 2 below 48 rows
  // and the mid 64 x 4 from 48 (67 rows: 16 full groups and one of 3); for 3 x rows 32 x 2; 32 x 8
  // from 96 rows for any x. x quantized by qact and by the product (with the rms_norm prologue),
  // with a residual.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (bool fuse : {false, true}) {
    const Device tiers = private_device([&](gpu::GpuOptions& o) {
      o.qmatvec = {32, 2, 8};
      o.qmatvec.mid_min_out = 48;
      o.qmatvec.mid_threads = 64;
      o.qmatvec.mid_rows = 4;
      o.qmatvec.few_x_rows = 2;
      o.qmatvec.few_threads = 64;
      o.qmatvec.few_rows = 2;
      o.qmatvec.wide_min_out = 96;
      o.qmatvec.wide_threads = 32;
      o.qmatvec.wide_rows = 8;
      o.qmatvec_fuse_rows = fuse ? 8 : 0;
    });
    for (QuantType t : {QuantType::Q4_1, QuantType::Q4_K}) {
      const int64_t k = quant_type_info(t)->block_elems == 32 ? 96 : 256;
      for (int64_t n : {40, 67, 100}) {
        SCOPED_TRACE(std::string(quant_type_info(t)->name) + " n=" + std::to_string(n) +
                     (fuse ? " fused" : " qact"));
        const QTensor w = random_weight(rng, n, k, t);
        const QMatMul mm(w, tiers);
        for (int64_t m : {2, 3}) {
          const Tensor x = make_tensor(random_ref(rng, {m, k}), DType::F32, tiers);
          const Tensor r = make_tensor(random_ref(rng, {m, n}), DType::F32, tiers);
          EXPECT_LT(cpu_gap(mm.forward(x, r) - r, w, x), 1e-5) << "m=" << m << " residual";
          if (!fuse) continue;
          const Tensor a = make_tensor(random_ref(rng, {k}), DType::F32, tiers);
          const Tensor xn = x.rms_norm(a, 1e-5);
          EXPECT_LT(cpu_gap(mm.forward_rms_norm(x, a, 1e-5), w, xn), 1e-5) << "m=" << m << " norm";
        }
      }
    }
  }
}

TEST_P(GpuQMatMulShapes, QMatMulF16KnobIsParsed) {
  const std::string exe = self_exe();
  const auto rows = [&](const std::string& env) {
    return run_gpu_child(exe, spec(), env, "GpuChild.DISABLED_ReportOptions")["dequant_rows"];
  };
  EXPECT_EQ(rows("-u WICK_QMATMUL_F16"), "-1") << "the device's default";
  EXPECT_EQ(rows("WICK_QMATMUL_F16=off"), "0");
  EXPECT_EQ(rows("WICK_QMATMUL_F16=0"), "0");
  EXPECT_EQ(rows("WICK_QMATMUL_F16=on"), std::to_string(gpu::default_dequant_rows()));
  EXPECT_EQ(rows("WICK_QMATMUL_F16=100"), "100");
  EXPECT_EQ(rows("WICK_QMATMUL_F16=abc"), "-1");
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

TEST_P(GpuQMatMulSweeps, TheF16PathForEveryFormatWithAndWithoutResidual) {
  // Every format through dequant and the float GEMM (forced from 2 rows: tensor cores where the
  // device has them, else its SIMT GEMM on f16), m on and off the GEMM's tiles, against the
  // float64 product within f16's rounding of x, w and y (expected_for), plus the residual's f32
  // add; f16 x read in place.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  const Device dev = private_device([](gpu::GpuOptions& o) { o.dequant_rows = 2; });
  check_every_format(dev, {{2, 67}, {33, 131}, {70, 64}, {129, 131}});
  if (::testing::Test::HasFatalFailure()) return;
  check_layouts_and_dtypes(dev);
  if (::testing::Test::HasFatalFailure()) return;
  for (QuantType t : quantized_matmul_types()) {
    const int64_t block = quant_type_info(t)->block_elems, n = 75, m = 67;
    const int64_t k = block == 32 ? 160 : 512;
    const QTensor qw = quantize(Tensor::from_vec(block_test_data(rng, n, k, block), {n, k}), t);
    const std::vector<float> w = dequantize(qw).to_vec<float>();
    const Ref xr = random_ref(rng, {m, k}, -3, 3), rr = random_ref(rng, {m, n}, -100, 100);
    const Tensor y = QMatMul(qw, dev).forward(make_tensor(xr, DType::F32, dev),
                                              make_tensor(rr, DType::F32, dev));
    Expected e = expected_for(t, w, round_ref(xr, DType::F32).v, m, n, k, true);
    const Ref rf = round_ref(rr, DType::F32);
    for (size_t i = 0; i < e.y.size(); i++) {
      e.y[i] += rf.v[i];
      e.tol[i] += 0x1p-24 * (std::fabs(e.y[i]) + e.tol[i]);  // the add's rounding
    }
    check_qmatmul(y, e, std::string(quant_type_info(t)->name) + " with residual on " + dev.name());
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

TEST_P(GpuQMatMulSweeps, PackedDotProductsGiveTheSameBitsForEveryFormat) {
  // qmatvec's integer sums four bytes at a time (WICK_INT_DOT: decode8_packed's words, OpSDot)
  // against one product per element: the same integers, so the same bits, for every format,
  // at decode's and a batch's x rows, x quantized by qact and (up to 2 rows) by the product
  // itself after the rms_norm prologue.
  if (!gpu(device()).device_caps().int_dot) GTEST_SKIP() << "no packed 8-bit dot products";
  Rng rng;
  SCOPED_TRACE(rng.seed());
  auto make = [&](bool int_dot) {
    return private_device([&](gpu::GpuOptions& o) {
      o.qmatvec = {32, 2, 8};
      o.qmatvec_fuse_rows = 2;
      o.qmatvec_fuse_max_k = 512;
      o.int_dot = int_dot;
    });
  };
  const Device on = make(true), off = make(false);
  for (QuantType t : quantized_matmul_types()) {
    const int64_t block = quant_type_info(t)->block_elems, n = 37;
    const int64_t k = block == 32 ? 160 : 512;
    const QTensor w = quantize(Tensor::from_vec(block_test_data(rng, n, k, block), {n, k}), t);
    const QMatMul mm_on(w, on), mm_off(w, off);
    for (int64_t m : {1, 2, 5, 8}) {
      const std::string what = std::string(quant_type_info(t)->name) + " m=" + std::to_string(m);
      SCOPED_TRACE(what);
      const Ref xr = random_ref(rng, {m, k}, -3, 3), ar = random_ref(rng, {k}, -2, 2);
      const Tensor x_on = make_tensor(xr, DType::F32, on), x_off = make_tensor(xr, DType::F32, off);
      const Tensor a_on = make_tensor(ar, DType::F32, on), a_off = make_tensor(ar, DType::F32, off);
      const Tensor y_on = mm_on.forward(x_on);
      expect_same_bits(y_on, mm_off.forward(x_off), what);
      expect_same_bits(mm_on.forward_rms_norm(x_on, a_on, 1e-5),
                       mm_off.forward_rms_norm(x_off, a_off, 1e-5), what + " rms_norm");
      EXPECT_LT(cpu_gap(y_on, w, x_on), 1e-5);
    }
  }
}

WICK_INSTANTIATE_GPU_SWEEPS(GpuQMatMulSweeps);

}  // namespace
}  // namespace wick::testing
