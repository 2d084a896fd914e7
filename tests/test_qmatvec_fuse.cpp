// qmatvec quantizing its own x (GpuOptions::qmatvec_fuse, WICK_QMATVEC_FUSE) on each GPU device
// under test: one dispatch where qact and qmatvec took two, and the same bits as those two, for
// every format whose x is quantized to 8 bits, without and with each prologue (rms_norm, swiglu),
// with and without the residual, x strided and in f16/bf16, on the device's qmatvec shape and
// on a GPU's (32 threads, and the wide one of an lm_head); and the fallback to two dispatches
// where the rows do not fit in shared memory.
#include <cstring>
#include <limits>

#include "gpu_test_util.h"
#include "quantized/kernels.h"
#include "quantized_ref.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

constexpr double kEps = 1e-5;

// The formats whose x a GPU quantizes (QMatMul's integer dot products): 32- and 256-element
// blocks of 8-bit x.
std::vector<QuantType> act_q8_types() {
  std::vector<QuantType> types;
  for (QuantType t : quantized_matmul_types())
    if (quantized::dot_kernel_scalar(t) != nullptr) types.push_back(t);
  return types;
}

QTensor random_weight(Rng& rng, int64_t n, int64_t k, QuantType t) {
  const int64_t block = quant_type_info(t)->block_elems;
  return quantize(Tensor::from_vec(block_test_data(rng, n, k, block), {n, k}), t);
}

// The prologue of a product: none (forward), rms_norm or swiglu.
enum class Prologue { None, RmsNorm, Swiglu };
const char* prologue_name(Prologue p) {
  return p == Prologue::None ? "none" : p == Prologue::RmsNorm ? "rms_norm" : "swiglu";
}

// The same inputs on the fused and the unfused device.
struct Inputs {
  Ref x, p, residual;
};

Tensor run(const Device& dev, const QTensor& w, Prologue pro, const Inputs& in, DType dt,
           Variant variant, bool with_residual) {
  const QMatMul mm(w, dev);
  const Tensor x = make_tensor(in.x, dt, dev, variant);
  const Tensor r = make_tensor(in.residual, DType::F32, dev, Variant::Offset);
  switch (pro) {
    case Prologue::None:
      return with_residual ? mm.forward(x, r) : mm.forward(x);
    case Prologue::RmsNorm: {
      // alpha read with stride 2: column 1 of (k, 2).
      const Tensor alpha = make_tensor(in.p, dt, dev).narrow(1, 1, 1).squeeze(1);
      const Tensor y = mm.forward_rms_norm(x, alpha, kEps);
      return y;
    }
    case Prologue::Swiglu: {
      const Tensor up = make_tensor(in.p, dt, dev, Variant::Offset);
      return with_residual ? mm.forward_swiglu(x, up, r) : mm.forward_swiglu(x, up);
    }
  }
  return {};
}

class GpuQMatVecFuse : public GpuDeviceTest {
 protected:
  Rng rng;
  gpu::QMatVecShape device_shape() { return gpu(device()).gpu_options().qmatvec; }
  // A device of shape `shape` that fuses x's quantization up to fuse_rows x rows and stages
  // qact's rows from stage_rows (0: never), whatever the knobs say; the SIMT products only (MMA,
  // which takes 8 x rows on CUDA by default, has its own tests: test_qmatvec_mma.cpp).
  Device with_rows(const gpu::QMatVecShape& shape, int64_t fuse_rows, int64_t stage_rows,
                   bool weight_stage = true) const {
    return private_device([&](gpu::GpuOptions& o) {
      o.qmatvec_weight_stage = weight_stage;
      o.queue.ops_per_buffer = 1000;
      o.qmatvec = shape;
      o.qmatvec_fuse_rows = fuse_rows;
      o.qmatvec_fuse_max_k = std::numeric_limits<int64_t>::max();
      o.qmatvec_fuse_wide = true;
      o.qmatvec_stage_rows = stage_rows;
      o.qmatvec_mma_rows = 0;
    });
  }
  // A device of shape `shape` with the fusion on (every row count) or off, staging off.
  Device with(const gpu::QMatVecShape& shape, bool fuse) const {
    return with_rows(shape, fuse ? std::numeric_limits<int64_t>::max() : 0, 0);
  }

  // Every combination for weight `t` (n x k) and m x rows: fused == unfused, bit for bit.
  void check(const Device& on, const Device& off, QuantType t, int64_t n, int64_t m, int64_t k,
             DType dt, Variant variant, const std::string& label, bool with_residual = true) {
    const QTensor w = random_weight(rng, n, k, t);
    for (Prologue pro : {Prologue::None, Prologue::RmsNorm, Prologue::Swiglu}) {
      Inputs in;
      in.x = random_ref(rng, {m, k}, pro == Prologue::Swiglu ? -6 : -3, 3);
      in.p = pro == Prologue::RmsNorm ? random_ref(rng, {k, 2}, -2, 2) : random_ref(rng, {m, k});
      in.residual = random_ref(rng, {m, n}, -10, 10);
      // rms_norm has no residual form (r + y is the add kernel's).
      for (bool res : {false, true}) {
        if (res && (pro == Prologue::RmsNorm || !with_residual)) continue;
        const std::string what = std::string(quant_type_info(t)->name) + " m=" + std::to_string(m) +
                                 " k=" + std::to_string(k) + " " + dtype_name(dt) + " " +
                                 variant_name(variant) + " " + prologue_name(pro) +
                                 (res ? " +residual " : " ") + label;
        expect_same_bits(run(on, w, pro, in, dt, variant, res),
                         run(off, w, pro, in, dt, variant, res), what);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
};

TEST_P(GpuQMatVecFuse, OneDispatchInsteadOfTwo) {
  PoisonOff quiet;  // exact dispatch counts
  const Device on = with(device_shape(), true), off = with(device_shape(), false);
  const QTensor w = random_weight(rng, 40, 256, QuantType::Q4_K);
  auto dispatches = [](const Device& d) { return gpu(d).stats().queue.dispatches; };
  for (const Device* d : {&on, &off}) {
    const QMatMul mm(w, *d);
    const Tensor x = make_tensor(random_ref(rng, {1, 256}), DType::F32, *d);
    const Tensor alpha = make_tensor(random_ref(rng, {256}), DType::F32, *d);
    const Tensor r = make_tensor(random_ref(rng, {1, 40}), DType::F32, *d);
    d->synchronize();
    const uint64_t d0 = dispatches(*d);
    mm.forward(x);
    mm.forward_rms_norm(x, alpha, kEps);
    mm.forward_swiglu(x, x, r);
    const uint64_t n = d == &on ? 3u : 6u;
    EXPECT_EQ(dispatches(*d) - d0, n) << (d == &on ? "fused" : "unfused");
  }
}

TEST_P(GpuQMatVecFuse, DeclaresItsOperandsToTheHazardTracker) {
  PoisonOff quiet;  // exact barrier counts
  const Device d = with(device_shape(), true);
  const QMatMul mm(random_weight(rng, 40, 64, QuantType::Q8_0), d);
  const Tensor a = make_tensor(random_ref(rng, {2, 64}), DType::F32, d);
  const Tensor b = make_tensor(random_ref(rng, {64}), DType::F32, d);
  d.synchronize();  // the uploads are done; the next list starts clean
  const uint64_t before = gpu(d).stats().queue.barriers;
  const Tensor x = a * a, alpha = b * b;                 // written by queued ops
  const Tensor y = mm.forward_rms_norm(x, alpha, kEps);  // reads both: one barrier
  EXPECT_EQ(gpu(d).stats().queue.barriers - before, 1u);
  const Tensor up = a + a;
  const Tensor z = mm.forward_swiglu(x, up, y);  // reads up and y: another
  EXPECT_EQ(gpu(d).stats().queue.barriers - before, 2u);
  const Tensor want = y + mm.forward(x.silu() * up);
  expect_same_bits(z, want, "swiglu after queued ops");
}

TEST_P(GpuQMatVecFuse, RowsBeyondTheSharedMemoryBudgetTakeTwoDispatches) {
  // 8 rows of k = 2048 in 32-element blocks, staged in f32 and quantized (8 x 2688 words, 84
  // KiB), over the 16 KiB budget; one row (10.5 KiB) fits.
  PoisonOff quiet;
  const Device on = with(device_shape(), true), off = with(device_shape(), false);
  const QTensor w = random_weight(rng, 24, 2048, QuantType::Q8_0);
  const QMatMul mm(w, on);
  for (int64_t m : {1, 8}) {
    Inputs in{random_ref(rng, {m, 2048}), {}, {}};
    const Tensor x = make_tensor(in.x, DType::F32, on);
    on.synchronize();
    const uint64_t d0 = gpu(on).stats().queue.dispatches;
    const Tensor y = mm.forward(x);
    EXPECT_EQ(gpu(on).stats().queue.dispatches - d0, m == 1 ? 1u : 2u) << "m=" << m;
    expect_same_bits(y, QMatMul(w, off).forward(make_tensor(in.x, DType::F32, off)),
                     "k=2048 m=" + std::to_string(m));
  }
}

TEST_P(GpuQMatVecFuse, FusesUpToQmatvecFuseRowsXRows) {
  // qmatvec_fuse_rows = 2: one dispatch for 1 and 2 x rows, two for 3; the products equal the
  // unfused ones.
  PoisonOff quiet;
  const Device limited = with_rows(device_shape(), 2, 0);
  const Device off = with(device_shape(), false);
  const QTensor w = random_weight(rng, 21, 128, QuantType::Q4_1);
  const QMatMul mm(w, limited);
  for (int64_t m : {1, 2, 3}) {
    const Ref x = random_ref(rng, {m, 128});
    const Tensor xt = make_tensor(x, DType::F32, limited);
    limited.synchronize();
    const uint64_t d0 = gpu(limited).stats().queue.dispatches;
    const Tensor y = mm.forward(xt);
    EXPECT_EQ(gpu(limited).stats().queue.dispatches - d0, m <= 2 ? 1u : 2u) << "m=" << m;
    expect_same_bits(y, QMatMul(w, off).forward(make_tensor(x, DType::F32, off)),
                     "m=" + std::to_string(m));
  }
}

// The kernel's bits against the two-dispatch path: the kernels' numbers, not host code (minutes
// under ASan on lavapipe; instantiated as Devices/, which that pass leaves out).
class GpuQMatVecFuseSweeps : public GpuQMatVecFuse {};

TEST_P(GpuQMatVecFuseSweeps, SameBitsAsQactThenQmatvecForEveryFormat) {
  // Every format on the device's shape for one x row, a few m for a 32- and a 256-element
  // format; then 32 threads x 2 rows (the rms_norm sums of 256 lanes on 32 threads) and
  // the wide one (128 x 8) made to apply to 37 rows. 11 rows: two groups of x rows, the second
  // of 3 (lavapipe's shape takes every m). Pipelines compile slowly on lavapipe: few of each.
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  const gpu::QMatVecShape own = device_shape();
  const Device on = with(own, true), off = with(own, false);
  for (QuantType t : act_q8_types()) {
    check(on, off, t, 37, 1, quant_type_info(t)->block_elems == 32 ? 96 : 512, DType::F32,
          Variant::Contiguous, "device shape");
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (int64_t m : {int64_t{3}, int64_t{8}, own.max_rows > 8 ? int64_t{11} : int64_t{5}}) {
    check(on, off, QuantType::Q4_1, 37, m, 96, DType::F32, Variant::Contiguous, "device shape");
    if (::testing::Test::HasFatalFailure()) return;
    check(on, off, QuantType::Q4_K, 37, m, 512, DType::F32, Variant::Contiguous, "device shape");
    if (::testing::Test::HasFatalFailure()) return;
  }
  gpu::QMatVecShape gpu_like{32, 2, 8};
  gpu::QMatVecShape wide{32, 2, 8};
  wide.wide_min_out = 32;
  const std::pair<gpu::QMatVecShape, const char*> shapes[] = {{gpu_like, "32x2"},
                                                              {wide, "wide 128x8"}};
  for (const auto& [shape, label] : shapes) {
    const Device s_on = with(shape, true), s_off = with(shape, false);
    {  // fused on this shape
      PoisonOff quiet;
      const QMatMul mm(random_weight(rng, 37, 768, QuantType::Q8_0), s_on);
      const Tensor x = make_tensor(random_ref(rng, {1, 768}), DType::F32, s_on);
      s_on.synchronize();
      const uint64_t d0 = gpu(s_on).stats().queue.dispatches;
      mm.forward(x);
      EXPECT_EQ(gpu(s_on).stats().queue.dispatches - d0, 1u) << label;
    }
    for (int64_t m : {1, 5}) {
      check(s_on, s_off, QuantType::Q8_0, 37, m, 768, DType::F32, Variant::Contiguous, label,
            m == 1);
      if (::testing::Test::HasFatalFailure()) return;
      check(s_on, s_off, QuantType::Q5_K, 37, m, 512, DType::F32, Variant::Contiguous, label,
            m == 1);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // The fused products with their weights read from the buffer after the prologue, not staged
  // before it (W_STAGE off: where shared memory is short).
  const Device unstaged = with_rows(gpu_like, std::numeric_limits<int64_t>::max(), 0, false);
  const Device unstaged_off = with(gpu_like, false);
  for (QuantType t : {QuantType::Q4_1, QuantType::Q5_K}) {
    check(unstaged, unstaged_off, t, 37, 1, t == QuantType::Q4_1 ? 96 : 512, DType::F32,
          Variant::Contiguous, "no W_STAGE");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(GpuQMatVecFuseSweeps, SameBitsOnStridedXAndHalfDtypes) {
  // k = 768 (Q4_0: three per lane of norm's 256) and 256 (Q6_K), every layout of x, f16/bf16.
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  const Device on = with(device_shape(), true), off = with(device_shape(), false);
  for (QuantType t : {QuantType::Q4_0, QuantType::Q6_K}) {
    const int64_t k = t == QuantType::Q4_0 ? 768 : 256;
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      for (Variant v :
           {Variant::Contiguous, Variant::Transposed, Variant::Narrowed, Variant::Offset}) {
        check(on, off, t, 29, 2, k, dt, v, "", v == Variant::Offset);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(GpuQMatVecFuseSweeps, FollowsTheCpuQuantizersRounding) {
  // Halves everywhere (x / d_x = n + 0.5): the scalar quantizer rounds them away from zero, the
  // AVX2 and AVX-512 ones to even, and the fused kernel as qact.
  SCOPED_TRACE(rng.seed());
  struct LevelGuard {
    ~LevelGuard() { quantized::set_simd_level(quantized::detected_simd_level()); }
  } level_guard;
  const Device on = with(device_shape(), true), off = with(device_shape(), false);
  const QTensor w = random_weight(rng, 19, 256, QuantType::Q8_0);
  Ref x = random_ref(rng, {2, 256});
  for (int64_t i = 0; i < 256; i++)
    x.v[static_cast<size_t>(256 + i)] =
        i % 32 == 0 ? 127.0 : static_cast<double>((i * 37) % 201 - 100) + 0.5;
  for (quantized::SimdLevel level :
       {quantized::SimdLevel::Scalar, quantized::detected_simd_level()}) {
    quantized::set_simd_level(level);
    expect_same_bits(QMatMul(w, on).forward(make_tensor(x, DType::F32, on)),
                     QMatMul(w, off).forward(make_tensor(x, DType::F32, off)),
                     quantized::simd_level_name(level));
  }
}

TEST_P(GpuQMatVecFuse, FusesUpToMaxKAndNotWideMatricesByDefault) {
  // The defaults' limits: x rows of at most qmatvec_fuse_max_k elements, matrices of the wide
  // shape never (unless qmatvec_fuse_wide); the products equal the unfused ones either way.
  PoisonOff quiet;
  gpu::QMatVecShape shape = device_shape();
  shape.wide_min_out = 64;  // a 96-row matrix takes the wide shape
  const Device limited = private_device([&](gpu::GpuOptions& o) {
    o.queue.ops_per_buffer = 1000;
    o.qmatvec = shape;
    o.qmatvec_fuse_rows = 1;
    o.qmatvec_fuse_max_k = 256;
    o.qmatvec_fuse_wide = false;
    o.qmatvec_stage_rows = 0;
  });
  const Device off = with(shape, false);
  struct Product {
    int64_t n, k;
    uint64_t dispatches;
  };
  for (const Product& p : {Product{40, 256, 1}, Product{40, 288, 2}, Product{96, 128, 2}}) {
    const QTensor w = random_weight(rng, p.n, p.k, QuantType::Q4_1);
    const Ref x = random_ref(rng, {1, p.k});
    const Tensor xt = make_tensor(x, DType::F32, limited);
    limited.synchronize();
    const uint64_t d0 = gpu(limited).stats().queue.dispatches;
    const Tensor y = QMatMul(w, limited).forward(xt);
    const std::string what = "n=" + std::to_string(p.n) + " k=" + std::to_string(p.k);
    EXPECT_EQ(gpu(limited).stats().queue.dispatches - d0, p.dispatches) << what;
    expect_same_bits(y, QMatMul(w, off).forward(make_tensor(x, DType::F32, off)), what);
  }
}

TEST_P(GpuQMatVecFuse, KnobIsParsed) {
  const std::string exe = self_exe();
  // rows, max_k and wide as the child's device has them.
  const auto fuse = [&](const std::string& env) {
    auto kv = run_gpu_child(exe, spec(), env, "GpuChild.DISABLED_ReportOptions");
    return kv["qmatvec_fuse_rows"] + " " + kv["qmatvec_fuse_max_k"] + " " + kv["qmatvec_fuse_wide"];
  };
  const std::string all = std::to_string(std::numeric_limits<int64_t>::max());
  const gpu::DeviceCaps& caps = gpu(device()).device_caps();
  // The table's default; CUDA's own: none (CudaOptions::from_knobs).
  const int64_t rows =
      device().kind() == DeviceKind::Cuda ? 0 : gpu::default_qmatvec_fuse_rows(caps);
  EXPECT_EQ(
      fuse("-u WICK_QMATVEC_FUSE"),
      std::to_string(rows) + " " + std::to_string(gpu::default_qmatvec_fuse_max_k(caps)) + " 0");
  EXPECT_EQ(fuse("WICK_QMATVEC_FUSE=0").substr(0, 2), "0 ");
  EXPECT_EQ(fuse("WICK_QMATVEC_FUSE=off").substr(0, 2), "0 ");
  EXPECT_EQ(fuse("WICK_QMATVEC_FUSE=1"), all + " " + all + " 1");
  EXPECT_EQ(fuse("WICK_QMATVEC_FUSE=on"), all + " " + all + " 1");
  EXPECT_EQ(fuse("WICK_QMATVEC_FUSE=2,1024"), "2 1024 0");
}

TEST_P(GpuQMatVecFuse, StageKnobIsParsed) {
  const std::string exe = self_exe();
  const auto stage = [&](const std::string& env) {
    return run_gpu_child(exe, spec(), env, "GpuChild.DISABLED_ReportOptions")["qmatvec_stage_rows"];
  };
  // The table's default; CUDA's own: 2 rows (CudaOptions::from_knobs).
  const std::string def =
      device().kind() == DeviceKind::Cuda
          ? "2"
          : std::to_string(gpu::default_qmatvec_stage_rows(gpu(device()).device_caps()));
  EXPECT_EQ(stage("-u WICK_QMATVEC_STAGE"), def) << "the table's default";
  EXPECT_EQ(stage("WICK_QMATVEC_STAGE=off"), "0");
  EXPECT_EQ(stage("WICK_QMATVEC_STAGE=0"), "0");
  EXPECT_EQ(stage("WICK_QMATVEC_STAGE=on"), "2");
  EXPECT_EQ(stage("WICK_QMATVEC_STAGE=5"), "5");
  EXPECT_EQ(stage("WICK_QMATVEC_STAGE=abc"), def) << "unparsable falls back to the default";
  EXPECT_EQ(stage("WICK_QMATVEC_STAGE=-2"), def);
}

// qmatvec copying qact's rows into shared memory first (GpuOptions::qmatvec_stage_rows): used
// from that many x rows where they fit, and the same bits as reading them in place, for 32- and
// 256-element activation blocks, with and without the residual, x contiguous and transposed.
class GpuQMatVecStageSweeps : public GpuQMatVecFuse {};

TEST_P(GpuQMatVecStageSweeps, SameBitsAsReadingTheRowsInPlace) {
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  // The device's shape (lavapipe's takes every m: 11 rows are a group of 8 and one of 3) and a
  // GPU's (up to 8 rows).
  const gpu::QMatVecShape shapes[] = {device_shape(), gpu::QMatVecShape{32, 2, 8}};
  for (const gpu::QMatVecShape& shape : shapes) {
    const Device on = with_rows(shape, 0, 2), off = with(shape, false);
    for (QuantType t : {QuantType::Q4_1, QuantType::Q4_K}) {
      const int64_t k = quant_type_info(t)->block_elems == 32 ? 160 : 512;
      const QTensor w = random_weight(rng, 23, k, t);
      const QMatMul mm_on(w, on), mm_off(w, off);
      for (int64_t m : {int64_t{1}, int64_t{3}, shape.max_rows > 8 ? int64_t{11} : int64_t{8}}) {
        const Ref x = random_ref(rng, {m, k});
        const Ref r = random_ref(rng, {m, 23}, -10, 10);
        const uint64_t s0 = gpu(on).stats().staged_qmatvecs;
        const Tensor y_on = mm_on.forward(make_tensor(x, DType::F32, on),
                                          make_tensor(r, DType::F32, on, Variant::Offset));
        const Tensor z_on = mm_on.forward(make_tensor(x, DType::F32, on, Variant::Transposed));
        EXPECT_EQ(gpu(on).stats().staged_qmatvecs - s0, m >= 2 ? 2u : 0u)
            << quant_type_info(t)->name << " m=" << m;
        const std::string what = std::string(quant_type_info(t)->name) + " m=" + std::to_string(m) +
                                 " " + std::to_string(shape.threads) + "x" +
                                 std::to_string(shape.rows);
        expect_same_bits(y_on,
                         mm_off.forward(make_tensor(x, DType::F32, off),
                                        make_tensor(r, DType::F32, off, Variant::Offset)),
                         what + " +residual");
        expect_same_bits(z_on, mm_off.forward(make_tensor(x, DType::F32, off, Variant::Transposed)),
                         what);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQMatVecFuse);
WICK_INSTANTIATE_GPU_SWEEPS(GpuQMatVecStageSweeps);
WICK_INSTANTIATE_GPU_SWEEPS(GpuQMatVecFuseSweeps);

}  // namespace
}  // namespace wick::testing
