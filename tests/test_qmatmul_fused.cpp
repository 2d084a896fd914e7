// QMatMul's prologues (forward_rms_norm, forward_swiglu) on every device: bit for bit the unfused
// composition on the same device (forward(x.rms_norm(alpha, eps)), forward(gate.silu() * up)),
// and close to a float64 reference, for formats whose x a GPU quantizes to 8 bits (there one
// kernel computes the prologue and quantizes its rows) and for others, for decode rows and for
// rows beyond the CPU's switch to sgemm (the prologue's ops run first), on strided views and in
// f16/bf16; their errors; and on GPUs, that the fused path is 2 dispatches whose operands the
// hazard tracker sees.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

#include "gpu_test_util.h"
#include "quantized/kernels.h"
#include "quantized_ref.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

// The formats the issue names, the IQ4 formats (table values: 32 and 256 elements), plus q8_1,
// whose x no device quantizes (the ops run first).
constexpr QuantType kPrologueTypes[] = {QuantType::Q4_0,   QuantType::Q4_1,   QuantType::Q8_0,
                                        QuantType::Q4_K,   QuantType::Q5_K,   QuantType::Q6_K,
                                        QuantType::IQ4_NL, QuantType::IQ4_XS, QuantType::Q8_1};
constexpr double kEps = 1e-5;

// Lowers the x rows from which QMatMul takes sgemm on the CPU and f32 x on GPUs (no quantized x:
// the prologue's ops run first), so that short inputs take that path.
struct GemmMinRowsGuard {
  explicit GemmMinRowsGuard(int64_t rows) { quantized::set_gemm_min_rows(rows); }
  ~GemmMinRowsGuard() { quantized::set_gemm_min_rows(0); }
};

struct SimdLevelGuard {
  ~SimdLevelGuard() { quantized::set_simd_level(quantized::detected_simd_level()); }
};

// Both on one device, then quantized_ref.h's bit comparison.
void expect_same_bits_here(const Tensor& fused, const Tensor& unfused, const std::string& what) {
  ASSERT_EQ(fused.device(), unfused.device()) << what;
  expect_same_bits(fused, unfused, what);
}

QTensor random_weight(Rng& rng, int64_t n, int64_t k, QuantType t) {
  const int64_t block = quant_type_info(t)->block_elems;
  return quantize(Tensor::from_vec(block_test_data(rng, n, k, block), {n, k}), t);
}

// The prologues in float64 on the inputs as stored in the dtype under test.
std::vector<double> ref_rms_norm(const Ref& x, const Ref& alpha, int64_t k) {
  std::vector<double> y(x.v.size());
  for (size_t r = 0; r < x.v.size() / static_cast<size_t>(k); r++) {
    const double* xr = x.v.data() + r * static_cast<size_t>(k);
    double ss = 0;
    for (int64_t i = 0; i < k; i++) ss += xr[i] * xr[i];
    const double inv = 1 / std::sqrt(ss / static_cast<double>(k) + kEps);
    for (int64_t i = 0; i < k; i++)
      y[r * static_cast<size_t>(k) + static_cast<size_t>(i)] =
          xr[i] * inv * alpha.v[static_cast<size_t>(i)];
  }
  return y;
}

std::vector<double> ref_swiglu(const Ref& gate, const Ref& up) {
  std::vector<double> y(gate.v.size());
  for (size_t i = 0; i < y.size(); i++) y[i] = gate.v[i] / (1 + std::exp(-gate.v[i])) * up.v[i];
  return y;
}

// y against the float64 product of the prologue's output xp (m x k): QMatMul's own allowance
// (expected_for: half an 8-bit step per block of x, or f32 rounding), widened by the prologue's
// rounding of x to `dt` (twice for swiglu: silu, then the product) and a few f32 ulp of its
// arithmetic, on each |x| and on the block's step.
void check_reference(const Tensor& y, QuantType t, const std::vector<float>& w,
                     const std::vector<double>& xp, int64_t m, int64_t n, int64_t k, DType dt,
                     const std::string& what) {
  Expected e = expected_for(t, w, xp, m, n, k);
  // The prologue's outputs are rounded to dt up to twice (swiglu: silu, then the product).
  const double rel = (dt == DType::F32 ? 0 : 2 * unit_roundoff(dt)) + 8 * 0x1p-24;
  const int64_t block = quantized::act_kind(t) == quantized::ActKind::Block32 ? 32 : 256;
  for (int64_t r = 0; r < m; r++) {
    std::vector<double> mag(static_cast<size_t>(k));
    for (int64_t b = 0; b < k / block; b++) {
      double amax = 0;
      for (int64_t j = b * block; j < (b + 1) * block; j++)
        amax = std::max(amax, std::fabs(xp[static_cast<size_t>(r * k + j)]));
      for (int64_t j = b * block; j < (b + 1) * block; j++)
        mag[static_cast<size_t>(j)] = std::fabs(xp[static_cast<size_t>(r * k + j)]) + amax / 127;
    }
    for (int64_t o = 0; o < n; o++) {
      double extra = 0;
      for (int64_t i = 0; i < k; i++)
        extra += std::fabs(w[static_cast<size_t>(o * k + i)]) * mag[static_cast<size_t>(i)];
      e.tol[static_cast<size_t>(r * n + o)] += rel * extra;
    }
  }
  check_qmatmul(y, e, what);
}

class QMatMulPrologues : public DeviceTest {};

// One product of each prologue for weight `t` (n x k), x of shape `xs` in `dt` laid out as
// `variant`, alpha and up strided too: fused equals unfused bit for bit, and both are close to
// the float64 reference.
void check_prologues(const Device& dev, Rng& rng, QuantType t, int64_t n, const Shape& xs, DType dt,
                     Variant variant, const std::string& label) {
  const int64_t k = xs.dims().back(), m = xs.numel() / k;
  const QTensor qw = random_weight(rng, n, k, t);
  const std::vector<float> w = dequantize(qw).to_vec<float>();
  const QMatMul mm(qw, dev);
  const std::string what = std::string(quant_type_info(t)->name) + " x=" + xs.str() + " " +
                           dtype_name(dt) + " " + variant_name(variant) + " " + label + " on " +
                           dev.name();
  std::vector<int64_t> out_dims = xs.dims();
  out_dims.back() = n;

  const Ref xr = round_ref(random_ref(rng, xs, -3, 3), dt);
  const Ref ar = round_ref(random_ref(rng, {k, 2}, -2, 2), dt);
  Ref alpha_r{Shape{k}, {}};  // column 1 of ar: alpha read with stride 2
  for (int64_t i = 0; i < k; i++) alpha_r.v.push_back(ar.v[static_cast<size_t>(2 * i + 1)]);
  const Tensor x = make_tensor(xr, dt, dev, variant);
  const Tensor alpha = make_tensor(ar, dt, dev).narrow(1, 1, 1).squeeze(1);
  const Tensor y = mm.forward_rms_norm(x, alpha, kEps);
  ASSERT_EQ(y.shape(), Shape(out_dims)) << what;
  expect_same_bits_here(y, mm.forward(x.rms_norm(alpha, kEps)), "rms_norm " + what);
  check_reference(y, t, w, ref_rms_norm(xr, alpha_r, k), m, n, k, dt, "rms_norm " + what);
  if (::testing::Test::HasFatalFailure()) return;

  const Ref gr = round_ref(random_ref(rng, xs, -6, 6), dt);
  const Ref ur = round_ref(random_ref(rng, xs, -2, 2), dt);
  const Tensor gate = make_tensor(gr, dt, dev, variant);
  const Tensor up = make_tensor(
      ur, dt, dev, variant == Variant::Contiguous ? Variant::Offset : Variant::Contiguous);
  const Tensor z = mm.forward_swiglu(gate, up);
  ASSERT_EQ(z.shape(), Shape(out_dims)) << what;
  expect_same_bits_here(z, mm.forward(gate.silu() * up), "swiglu " + what);
  check_reference(z, t, w, ref_swiglu(gr, ur), m, n, k, dt, "swiglu " + what);
}

TEST_P(QMatMulPrologues, EqualTheUnfusedOpsBitForBitAndTheF64Reference) {
  // m = 1..8: decode (GPUs' qmatvec); 12: the tiled kernel on GPUs, x still quantized; 20 rows
  // past a lowered sgemm switch: x not quantized, the ops run first. k = 96 (fewer elements
  // than a workgroup) or 256, and 512 (two per invocation of norm's reduction).
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  for (QuantType t : kPrologueTypes) {
    const int64_t k0 = quant_type_info(t)->block_elems == 32 ? 96 : 256;
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 12}) {
      check_prologues(dev, rng, t, 37, Shape{m, k0}, DType::F32, Variant::Contiguous, "");
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (int64_t m : {3, 12}) {
      check_prologues(dev, rng, t, 37, Shape{m, 512}, DType::F32, Variant::Contiguous, "");
      if (::testing::Test::HasFatalFailure()) return;
    }
    const GemmMinRowsGuard sgemm_from(16);
    for (int64_t k : {k0, int64_t{512}}) {
      check_prologues(dev, rng, t, 37, Shape{20, k}, DType::F32, Variant::Contiguous,
                      "(past the sgemm switch)");
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(QMatMulPrologues, ReadStridedViewsAndHalfDtypes) {
  // Transposed and narrowed x are read in place, permuted 3-D x is copied first; f16/bf16
  // prologue outputs are rounded to the dtype as the ops store them.
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  for (QuantType t : {QuantType::Q4_0, QuantType::Q6_K}) {
    for (const Shape& xs : {Shape{3, 256}, Shape{2, 3, 256}, Shape{256}}) {
      for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        for (Variant v : kAllVariants) {
          check_prologues(dev, rng, t, 29, xs, dt, v, "");
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(QMatMulPrologues, FollowTheCpuQuantizersRounding) {
  // The scalar quantizer rounds halves away from zero, the AVX2 and AVX-512 ones to even: the fused
  // kernel follows whichever the CPU uses, as qact does.
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  SimdLevelGuard restore;
  for (quantized::SimdLevel level :
       {quantized::SimdLevel::Scalar, quantized::detected_simd_level()}) {
    quantized::set_simd_level(level);
    for (QuantType t : {QuantType::Q8_0, QuantType::Q5_K}) {
      check_prologues(dev, rng, t, 19, Shape{4, 256}, DType::F32, Variant::Contiguous,
                      quantized::simd_level_name(level));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(QMatMulPrologues, PlainWeightsAndEmptyDims) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const QMatMul plain(
      quantize(Tensor::from_vec(block_test_data(rng, 5, 40, 1), {5, 40}), QuantType::F16), dev);
  const Tensor x = make_tensor(random_ref(rng, {3, 40}), DType::F32, dev);
  const Tensor alpha = make_tensor(random_ref(rng, {40}), DType::F32, dev);
  expect_same_bits_here(plain.forward_rms_norm(x, alpha, kEps),
                        plain.forward(x.rms_norm(alpha, kEps)), "f16 weight");
  expect_same_bits_here(plain.forward_swiglu(x, alpha.broadcast_as({3, 40}).contiguous()),
                        plain.forward(x.silu() * alpha.broadcast_as({3, 40}).contiguous()),
                        "f16 weight");
  const QMatMul mm(quantize(Tensor::ones({3, 32}, DType::F32), QuantType::Q8_0), dev);
  const Tensor none = Tensor::zeros({0, 32}, DType::F32, dev);
  const Tensor ones = Tensor::ones({32}, DType::F32, dev);
  EXPECT_EQ(mm.forward_rms_norm(none, ones, kEps).shape(), (Shape{0, 3}));
  EXPECT_EQ(mm.forward_swiglu(none, none).shape(), (Shape{0, 3}));
  const QMatMul empty_k(quantize(Tensor::zeros({3, 0}, DType::F32), QuantType::Q4_1), dev);
  const Tensor e = Tensor::zeros({2, 0}, DType::F32, dev);
  EXPECT_EQ(empty_k.forward_rms_norm(e, Tensor::zeros({0}, DType::F32, dev), kEps).to_vec<float>(),
            std::vector<float>(6, 0.0f));
  EXPECT_EQ(empty_k.forward_swiglu(e, e).to_vec<float>(), std::vector<float>(6, 0.0f));
}

TEST_P(QMatMulPrologues, RefuseWrongShapesDtypesAndDevices) {
  const Device dev = device();
  const QMatMul mm(quantize(Tensor::ones({4, 64}, DType::F32), QuantType::Q4_1), dev);
  const char* rms = "QMatMul::forward_rms_norm";
  const char* swiglu = "QMatMul::forward_swiglu";
  const Tensor x = Tensor::ones({3, 64}, DType::F32, dev);
  const Tensor alpha = Tensor::ones({64}, DType::F32, dev);
  const std::string w = "QTensor[4, 64; q4_1]";
  expect_error(
      [&] {
        mm.forward_rms_norm(Tensor::ones({3, 32}, DType::F32, dev), alpha, kEps);
      },
      ErrorKind::Shape, {rms, "[3, 32]", "64", w});
  expect_error(
      [&] {
        mm.forward_rms_norm(Tensor::ones({3, 64}, DType::F64, dev), alpha, kEps);
      },
      ErrorKind::DType, {rms, "f64", "[3, 64]"});
  expect_error([&] { mm.forward_rms_norm(x, Tensor::ones({32}, DType::F32, dev), kEps); },
               ErrorKind::Shape, {rms, "alpha", "[32]", "[3, 64]", w});
  expect_error(
      [&] {
        mm.forward_rms_norm(x, Tensor::ones({1, 64}, DType::F32, dev), kEps);
      },
      ErrorKind::Shape, {rms, "alpha", "[1, 64]"});
  expect_error([&] { mm.forward_rms_norm(x, Tensor::ones({64}, DType::F16, dev), kEps); },
               ErrorKind::DType, {rms, "alpha", "f16", "f32"});
  expect_error(
      [&] {
        mm.forward_swiglu(Tensor::ones({3, 32}, DType::F32, dev), x);
      },
      ErrorKind::Shape, {swiglu, "gate", "[3, 32]", "64", w});
  expect_error(
      [&] {
        mm.forward_swiglu(Tensor::ones({3, 64}, DType::U32, dev), x);
      },
      ErrorKind::DType, {swiglu, "gate", "u32"});
  expect_error(
      [&] {
        mm.forward_swiglu(x, Tensor::ones({1, 64}, DType::F32, dev));
      },
      ErrorKind::Shape, {swiglu, "up", "[1, 64]", "[3, 64]", w});
  expect_error(
      [&] {
        mm.forward_swiglu(x, Tensor::ones({3, 64}, DType::BF16, dev));
      },
      ErrorKind::DType, {swiglu, "up", "bf16", "f32"});
  for (const Device& other : available_devices()) {
    if (other.kind() == dev.kind()) continue;
    expect_error(
        [&] {
          mm.forward_rms_norm(Tensor::ones({3, 64}, DType::F32, other), alpha, kEps);
        },
        ErrorKind::Device, {rms, "x", other.name(), dev.name(), w});
    expect_error([&] { mm.forward_rms_norm(x, Tensor::ones({64}, DType::F32, other), kEps); },
                 ErrorKind::Device, {rms, "alpha", other.name(), dev.name(), w});
    expect_error(
        [&] {
          mm.forward_swiglu(Tensor::ones({3, 64}, DType::F32, other), x);
        },
        ErrorKind::Device, {swiglu, "gate", other.name(), dev.name()});
    expect_error(
        [&] {
          mm.forward_swiglu(x, Tensor::ones({3, 64}, DType::F32, other));
        },
        ErrorKind::Device, {swiglu, "up", other.name(), dev.name()});
  }
}

TEST_P(QMatMulPrologues, ResidualJoinsTheStoresBitForBit) {
  // forward(x, r) == r + forward(x) and forward_swiglu(g, u, r) == r + forward_swiglu(g, u), bit
  // for bit: decode rows (qmatvec adds r where it stores), rows past the sgemm switch (the tiled
  // kernel, then the add kernel), every residual layout, and the output differs from the
  // residual-free product (the residual is really added).
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  const GemmMinRowsGuard sgemm_from(16);
  for (QuantType t : {QuantType::Q4_1, QuantType::Q8_0, QuantType::Q6_K}) {
    const int64_t k = 256, n = 37;
    const QTensor qw = random_weight(rng, n, k, t);
    const QMatMul mm(qw, dev);
    for (int64_t m : {1, 3, 9, 20}) {
      for (Variant v : kAllVariants) {
        const std::string what = std::string(quant_type_info(t)->name) + " m=" + std::to_string(m) +
                                 " residual " + variant_name(v);
        SCOPED_TRACE(what);
        const Tensor x = make_tensor(random_ref(rng, {m, k}, -3, 3), DType::F32, dev);
        const Tensor r = make_tensor(random_ref(rng, {m, n}, -4, 4), DType::F32, dev, v);
        const Tensor plain = mm.forward(x);
        const Tensor fused = mm.forward(x, r);
        ASSERT_EQ(fused.shape(), (Shape{m, n}));
        expect_same_bits_here(fused, r + plain, "forward " + what);
        EXPECT_NE(fused.to_vec<float>(), plain.to_vec<float>()) << what;
        const Tensor up = make_tensor(random_ref(rng, {m, k}, -2, 2), DType::F32, dev);
        expect_same_bits_here(mm.forward_swiglu(x, up, r), r + mm.forward_swiglu(x, up),
                              "swiglu " + what);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
    // (..., k) inputs: the residual has the product's shape (2, 3, n).
    const Tensor x3 = make_tensor(random_ref(rng, {2, 3, k}, -3, 3), DType::BF16, dev);
    const Tensor r3 = make_tensor(random_ref(rng, {2, 3, n}, -4, 4), DType::F32, dev);
    expect_same_bits_here(mm.forward(x3, r3), r3 + mm.forward(x3), "3-d bf16 x");
  }
}

TEST_P(QMatMulPrologues, ResidualOfTheWrongShapeDtypeOrDeviceIsRefused) {
  const Device dev = device();
  const QMatMul mm(quantize(Tensor::ones({4, 64}, DType::F32), QuantType::Q4_1), dev);
  const Tensor x = Tensor::ones({3, 64}, DType::F32, dev);
  const std::string w = "QTensor[4, 64; q4_1]";
  const char* fwd = "QMatMul::forward";
  expect_error(
      [&] {
        mm.forward(x, Tensor::ones({3, 5}, DType::F32, dev));
      },
      ErrorKind::Shape, {fwd, "residual", "[3, 4]", "[3, 5]", w});
  expect_error([&] { mm.forward(x, Tensor::ones({4}, DType::F32, dev)); }, ErrorKind::Shape,
               {fwd, "residual", "[4]"});
  expect_error(
      [&] {
        mm.forward(x, Tensor::ones({3, 4}, DType::F16, dev));
      },
      ErrorKind::DType, {fwd, "residual", "f16"});
  expect_error(
      [&] {
        mm.forward_swiglu(x, x, Tensor::ones({3, 4}, DType::BF16, dev));
      },
      ErrorKind::DType, {"QMatMul::forward_swiglu", "residual", "bf16"});
  for (const Device& other : available_devices()) {
    if (other.kind() == dev.kind()) continue;
    expect_error(
        [&] {
          mm.forward(x, Tensor::ones({3, 4}, DType::F32, other));
        },
        ErrorKind::Device, {fwd, "residual", other.name(), dev.name()});
  }
}

// ---- the feed-forward block (QMatMul::forward_swiglu_ffn) ---------------------------------------

// Pairs of gate/up and down formats: the same 8-bit x format (32 or 256 elements), mixed formats,
// and the ones no device quantizes x for (q8_1: the ops run one after the other).
constexpr std::pair<QuantType, QuantType> kFfnTypes[] = {{QuantType::Q4_1, QuantType::Q4_1},
                                                         {QuantType::Q8_0, QuantType::IQ4_NL},
                                                         {QuantType::IQ4_XS, QuantType::Q6_K},
                                                         {QuantType::Q8_1, QuantType::Q4_1}};

// gate_up (2 half x k, type tg) and down (n x half, type td) on x of shape xs: the block equals
// forward_rms_norm (or forward) then down.forward_swiglu on its halves bit for bit, with and
// without the residual, and (without it) down's product is within QMatMul's allowance of the
// float64 product of silu(gate) * up on the device's own gate and up.
void check_ffn(const Device& dev, Rng& rng, QuantType tg, QuantType td, int64_t n, int64_t half,
               const Shape& xs, DType dt, Variant variant, bool norm, const std::string& label) {
  const int64_t k = xs.dims().back(), m = xs.numel() / k;
  const QTensor qd = random_weight(rng, n, half, td);
  const QMatMul gate_up(random_weight(rng, 2 * half, k, tg), dev), down(qd, dev);
  const std::string what =
      std::string(quant_type_info(tg)->name) + "/" + quant_type_info(td)->name + " x=" + xs.str() +
      " half=" + std::to_string(half) + " " + dtype_name(dt) + " " + variant_name(variant) +
      (norm ? " rms_norm " : " ") + label + " on " + dev.name();
  const Tensor x = make_tensor(round_ref(random_ref(rng, xs, -3, 3), dt), dt, dev, variant);
  const Tensor alpha = norm ? make_tensor(round_ref(random_ref(rng, {k, 2}, -2, 2), dt), dt, dev)
                                  .narrow(1, 1, 1)
                                  .squeeze(1)
                            : Tensor();
  std::vector<int64_t> out_dims = xs.dims();
  out_dims.back() = n;
  const Tensor r =
      make_tensor(random_ref(rng, Shape(out_dims), -10, 10), DType::F32, dev, Variant::Offset);
  const Tensor gu = norm ? gate_up.forward_rms_norm(x, alpha, kEps) : gate_up.forward(x);
  const int64_t last = static_cast<int64_t>(gu.rank()) - 1;
  const Tensor gate = gu.narrow(last, 0, half), up = gu.narrow(last, half, half);
  const Tensor y = gate_up.forward_swiglu_ffn(x, down, Tensor(), alpha, kEps);
  ASSERT_EQ(y.shape(), Shape(out_dims)) << what;
  expect_same_bits_here(y, down.forward_swiglu(gate, up), what);
  expect_same_bits_here(gate_up.forward_swiglu_ffn(x, down, r, alpha, kEps),
                        down.forward_swiglu(gate, up, r), "+residual " + what);
  const auto as_ref = [](const Tensor& t) {
    const std::vector<float> f = t.contiguous().to_vec<float>();
    return Ref{t.shape(), std::vector<double>(f.begin(), f.end())};
  };
  check_reference(y, td, dequantize(qd).to_vec<float>(), ref_swiglu(as_ref(gate), as_ref(up)), m, n,
                  half, DType::F32, "f64 " + what);
}

TEST_P(QMatMulPrologues, SwigluFfnEqualsItsOpsBitForBitAndTheF64Reference) {
  // m = 1, 5: decode's qmatvec on GPUs (its two kernels where the formats share x's 8-bit
  // format); 12: the tiled kernel. half: one or several blocks of h; with and without the norm.
  // (Other format pairs and workgroup shapes: GpuSwigluFfnSweeps.)
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  for (const auto& [tg, td] : kFfnTypes) {
    const int64_t block =
        std::max(quant_type_info(tg)->block_elems, quant_type_info(td)->block_elems);
    const int64_t k = block == 32 ? 96 : 256;
    for (int64_t m : {1, 5, 12}) {
      const int64_t half = block * (m == 5 ? 1 : 3);
      check_ffn(dev, rng, tg, td, 37, half, Shape{m, k}, DType::F32, Variant::Contiguous, m != 5,
                "");
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // x in f16 / bf16, strided, 3-D.
  for (Variant v : kAllVariants) {
    const DType dt = v == Variant::Contiguous ? DType::BF16 : DType::F16;
    check_ffn(dev, rng, QuantType::Q4_0, QuantType::Q4_1, 29, 64, Shape{2, 3, 64}, dt, v, true, "");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(QMatMulPrologues, SwigluFfnRefusesMismatchedWeightsAndOperands) {
  const Device dev = device();
  const char* op = "QMatMul::forward_swiglu_ffn";
  const QMatMul gate_up(quantize(Tensor::ones({64, 32}, DType::F32), QuantType::Q4_1), dev);
  const QMatMul down(quantize(Tensor::ones({5, 32}, DType::F32), QuantType::Q4_1), dev);
  const QMatMul wide(quantize(Tensor::ones({5, 64}, DType::F32), QuantType::Q4_1), dev);
  const Tensor x = Tensor::ones({3, 32}, DType::F32, dev);
  const Tensor alpha = Tensor::ones({32}, DType::F32, dev);
  expect_error([&] { gate_up.forward_swiglu_ffn(x, wide); }, ErrorKind::Shape,
               {op, "QTensor[64, 32; q4_1]", "QTensor[5, 64; q4_1]", "twice"});
  expect_error(
      [&] {
        gate_up.forward_swiglu_ffn(Tensor::ones({3, 64}, DType::F32, dev), down);
      },
      ErrorKind::Shape, {op, "x", "[3, 64]", "32"});
  expect_error(
      [&] {
        gate_up.forward_swiglu_ffn(x, down, Tensor(), Tensor::ones({16}, DType::F32, dev), kEps);
      },
      ErrorKind::Shape, {op, "alpha", "[16]"});
  expect_error(
      [&] {
        gate_up.forward_swiglu_ffn(x, down, Tensor::ones({3, 6}, DType::F32, dev));
      },
      ErrorKind::Shape, {op, "residual", "[3, 5]", "[3, 6]"});
  expect_error(
      [&] {
        gate_up.forward_swiglu_ffn(x, down, Tensor::ones({3, 5}, DType::F16, dev));
      },
      ErrorKind::DType, {op, "residual", "f16"});
  for (const Device& other : available_devices()) {
    if (other.kind() == dev.kind()) continue;
    const QMatMul elsewhere(quantize(Tensor::ones({5, 32}, DType::F32), QuantType::Q4_1), other);
    expect_error([&] { gate_up.forward_swiglu_ffn(x, elsewhere); }, ErrorKind::Device,
                 {op, "down", other.name(), dev.name()});
    expect_error(
        [&] {
          gate_up.forward_swiglu_ffn(Tensor::ones({3, 32}, DType::F32, other), down);
        },
        ErrorKind::Device, {op, "x", other.name()});
  }
  // No rows: an empty product.
  EXPECT_EQ(
      gate_up
          .forward_swiglu_ffn(Tensor::zeros({0, 32}, DType::F32, dev), down, Tensor(), alpha, kEps)
          .shape(),
      (Shape{0, 5}));
}

WICK_INSTANTIATE_DEVICES(QMatMulPrologues);

TEST(QMatMulProloguesCpu, SameBitsOnEveryThreadCount) {
  // The CPU runs each row's prologue and quantization on the thread that takes the row (rows
  // split by kActElemsPerTask): 1 to 3 threads, row counts that split unevenly, SmolLM2's k
  // (576, 1536) and a short one, with and without a residual, equal the unfused ops on one
  // thread bit for bit, and the fused output is not the residual-free one.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (QuantType t : {QuantType::Q4_1, QuantType::Q8_0, QuantType::Q4_K}) {
    for (int64_t k : {int64_t{256}, int64_t{576}, int64_t{1536}}) {
      if (k % quant_type_info(t)->block_elems != 0) continue;
      const int64_t n = 40;
      const QMatMul mm(random_weight(rng, n, k, t));
      for (int64_t m : {1, 2, 5, 8, 19}) {
        const std::string what = std::string(quant_type_info(t)->name) + " k=" + std::to_string(k) +
                                 " m=" + std::to_string(m);
        SCOPED_TRACE(what);
        const Tensor x = make_tensor(random_ref(rng, {m, k}, -3, 3), DType::F32, Device::cpu());
        const Tensor alpha = make_tensor(random_ref(rng, {k}, -2, 2), DType::F32, Device::cpu());
        // gate and up as column halves of one (m, 2k) product, as a model's gate_up gives them.
        const Tensor gu =
            make_tensor(random_ref(rng, {m, 2 * k}, -4, 4), DType::F32, Device::cpu());
        const Tensor gate = gu.narrow(1, 0, k), up = gu.narrow(1, k, k);
        const Tensor r = make_tensor(random_ref(rng, {m, n}, -4, 4), DType::F32, Device::cpu());
        Tensor norm_ref, swiglu_ref;
        {
          ThreadCountGuard one(1);
          norm_ref = mm.forward(x.rms_norm(alpha, kEps));
          swiglu_ref = r + mm.forward(gate.silu() * up);
        }
        for (int threads : {1, 2, 3}) {
          ThreadCountGuard count(threads);
          const std::string at = what + " threads=" + std::to_string(threads);
          expect_same_bits_here(mm.forward_rms_norm(x, alpha, kEps), norm_ref, "rms_norm " + at);
          const Tensor z = mm.forward_swiglu(gate, up, r);
          expect_same_bits_here(z, swiglu_ref, "swiglu " + at);
          EXPECT_NE(z.to_vec<float>(), mm.forward_swiglu(gate, up).to_vec<float>()) << at;
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// ---- the fused path's mechanics on GPUs ------------------------------------------------------

class GpuQMatMulPrologues : public GpuDeviceTest {
 protected:
  PoisonOff quiet;  // exact dispatch and barrier counts
  // qact then the product (qmatvec quantizing its own x: test_qmatvec_fuse.cpp).
  Device d = private_device([](gpu::GpuOptions& o) {
    o.queue.ops_per_buffer = 1000;
    o.qmatvec_fuse_rows = 0;
  });
  Rng rng;
  gpu::CommandQueue::Stats queue() const { return gpu(d).stats().queue; }
  // The x rows up to which the device's defaults take the swiglu stores (CUDA: none).
  int64_t default_swiglu_rows() const {
    return device().kind() == DeviceKind::Cuda
               ? 0
               : gpu::default_qmatvec_swiglu_rows(gpu(device()).device_caps());
  }
};

TEST_P(GpuQMatMulPrologues, EachIsTwoDispatchesWithNoHostRoundTrip) {
  // The prologue and x's quantization are one kernel, then the product: 2 dispatches where the
  // unfused ops take 3 (rms_norm) and 4 (silu, mul).
  SCOPED_TRACE(rng.seed());
  const QMatMul mm(random_weight(rng, 96, 256, QuantType::Q4_K), d);
  const Tensor x = make_tensor(random_ref(rng, {3, 256}), DType::F32, d);
  const Tensor alpha = make_tensor(random_ref(rng, {256}), DType::F32, d);
  const Tensor up = make_tensor(random_ref(rng, {3, 256}), DType::F32, d);
  d.synchronize();
  auto dispatches = [&](const std::function<Tensor()>& f, Tensor& out) {
    const auto before = queue();
    out = f();
    const auto after = queue();
    EXPECT_EQ(after.commits, before.commits) << "nothing was read back or waited for";
    return after.dispatches - before.dispatches;
  };
  Tensor fused, unfused;
  EXPECT_EQ(dispatches([&] { return mm.forward_rms_norm(x, alpha, kEps); }, fused), 2u);
  EXPECT_EQ(dispatches([&] { return mm.forward(x.rms_norm(alpha, kEps)); }, unfused), 3u);
  expect_same_bits_here(fused, unfused, "rms_norm");
  EXPECT_EQ(dispatches([&] { return mm.forward_swiglu(x, up); }, fused), 2u);
  EXPECT_EQ(dispatches([&] { return mm.forward(x.silu() * up); }, unfused), 4u);
  expect_same_bits_here(fused, unfused, "swiglu");
}

TEST_P(GpuQMatMulPrologues, DeclareTheirOperandsToTheHazardTracker) {
  SCOPED_TRACE(rng.seed());
  const QMatMul mm(random_weight(rng, 40, 64, QuantType::Q8_0), d);
  const Tensor x = make_tensor(random_ref(rng, {2, 64}), DType::F32, d);
  const Tensor a = make_tensor(random_ref(rng, {64}), DType::F32, d);
  const Tensor b = make_tensor(random_ref(rng, {2, 64}), DType::F32, d);
  d.synchronize();  // the uploads are done; the next list starts clean
  const uint64_t before = queue().barriers;
  const Tensor alpha = a * a;  // written by a queued op
  // The fused kernel reads alpha (a barrier), the product its quantized rows (another).
  const Tensor y = mm.forward_rms_norm(x, alpha, kEps);
  EXPECT_EQ(queue().barriers - before, 2u);
  const Tensor up = b * b;
  const Tensor z = mm.forward_swiglu(x, up);  // reads up: another two
  EXPECT_EQ(queue().barriers - before, 4u);
  expect_same_bits_here(y, mm.forward(x.rms_norm(alpha, kEps)), "rms_norm");
  expect_same_bits_here(z, mm.forward(x.silu() * up), "swiglu");
}

TEST_P(GpuQMatMulPrologues, TheGpuChoicesToo) {
  // lavapipe's defaults take qmatvec for every x: the GPUs' (the tiled kernel beyond 8 rows) and
  // their shared-memory reduction read the fused kernel's rows as well.
  SCOPED_TRACE(rng.seed());
  for (bool subgroups : {true, false}) {
    const Device gpu_like = private_device([&](gpu::GpuOptions& o) {
      o.qmatvec = {32, 2, 8};
      o.subgroups = subgroups;
    });
    for (QuantType t : {QuantType::Q4_1, QuantType::Q6_K}) {
      for (int64_t m : {1, 12}) {
        check_prologues(gpu_like, rng, t, 67, Shape{m, 256}, DType::F32, Variant::Contiguous,
                        subgroups ? "subgroups" : "shared memory");
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// forward_swiglu_ffn on a device of qmatvec shape `rows` x `threads` (SIMT), x quantized by
// the product itself (ACT_INLINE) or by qact, with the feed-forward's two kernels (SWIGLU_Q8) on
// or off; gate/up's k is the only one ACT_INLINE takes.
Device ffn_device(const std::string& name, uint32_t rows, uint32_t threads, bool inline_x,
                  bool subgroups, bool swiglu, int64_t k) {
  return private_device(name, [&](gpu::GpuOptions& o) {
    o.queue.ops_per_buffer = 1000;
    o.qmatvec = {threads, rows, 8};
    o.qmatvec_fuse_rows = inline_x ? 8 : 0;
    o.qmatvec_fuse_max_k = k;
    o.qmatvec_stage_rows = 0;
    o.qmatvec_mma_rows = 0;
    o.subgroups = subgroups;
    o.qmatvec_swiglu_rows = swiglu ? 8 : 0;
  });
}

// The block with SWIGLU_Q8 (`on`) and without (`off`) for tg/td and each m: one dispatch less,
// the same bits, and the same again on the next two calls (the block counters left at zero).
// x (m, k); h of two blocks of down's format, longer than k (never quantized by down itself).
void check_ffn_kernels(const Device& on, const Device& off, Rng& rng, QuantType tg, QuantType td,
                       int64_t k, std::initializer_list<int64_t> ms, const std::string& label) {
  const int64_t half = 2 * quant_type_info(td)->block_elems, n = 23;
  const QTensor wgu = random_weight(rng, 2 * half, k, tg), wd = random_weight(rng, n, half, td);
  for (int64_t m : ms) {
    const std::string what =
        std::string(quant_type_info(tg)->name) + " " + label + " m=" + std::to_string(m);
    SCOPED_TRACE(what);
    const Ref xr = random_ref(rng, {m, k}, -3, 3), ar = random_ref(rng, {k}, -2, 2);
    const Ref rr = random_ref(rng, {m, n}, -5, 5);
    uint64_t dispatches[2] = {};
    std::vector<float> got[2];
    for (int i = 0; i < 2; i++) {
      const Device& d = i == 0 ? on : off;
      const QMatMul gate_up(wgu, d), down(wd, d);
      const Tensor x = make_tensor(xr, DType::F32, d), alpha = make_tensor(ar, DType::F32, d);
      const Tensor r = make_tensor(rr, DType::F32, d);
      d.synchronize();
      const uint64_t d0 = gpu(d).stats().queue.dispatches;
      const Tensor y = gate_up.forward_swiglu_ffn(x, down, r, alpha, kEps);
      dispatches[i] = gpu(d).stats().queue.dispatches - d0;
      for (int rep = 0; rep < 2; rep++)
        expect_same_bits_here(gate_up.forward_swiglu_ffn(x, down, r, alpha, kEps), y,
                              what + " again");
      got[i] = y.to_vec<float>();
    }
    // Off: (qact for x,) gate/up, qact for h, down.
    EXPECT_EQ(dispatches[0] + 1, dispatches[1]) << what;
    EXPECT_LE(dispatches[0], 3u) << what;
    EXPECT_EQ(got[0], got[1]) << what;
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(GpuQMatMulPrologues, SwigluFfnIsTwoKernelsWithTheSameBits) {
  SCOPED_TRACE(rng.seed());
  for (bool inline_x : {true, false}) {
    const Device on = ffn_device(GetParam(), 2, 32, inline_x, true, true, 32);
    const Device off = ffn_device(GetParam(), 2, 32, inline_x, true, false, 32);
    check_ffn_kernels(on, off, rng, QuantType::Q4_1, QuantType::Q8_0, 32, {1, 8},
                      inline_x ? "inline" : "qact");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The device's defaults take the two kernels for decode's x rows only (Vulkan: 1 and 2;
// default_qmatvec_swiglu_rows), the ops one after the other from 3 (CUDA: always): the default
// device's dispatches against one with the stores for every row count and one with none (x
// quantized by qact, whose rows are neither staged nor multiplied on the tensor cores: the
// products' own prologues would make both two dispatches, and CUDA's staging keeps the ops
// apart). Each device runs the block once before it is counted (the split counters' first fill).
TEST_P(GpuQMatMulPrologues, SwigluStoresForDecodeRowsByDefault) {
  SCOPED_TRACE(rng.seed());
  const int64_t rows = default_swiglu_rows();
  auto make = [&](std::optional<int64_t> swiglu_rows) {
    return private_device([&](gpu::GpuOptions& o) {
      o.queue.ops_per_buffer = 1000;
      o.qmatvec_fuse_rows = 0;
      o.qmatvec_stage_rows = 0;
      o.qmatvec_mma_rows = 0;
      if (swiglu_rows) o.qmatvec_swiglu_rows = *swiglu_rows;
    });
  };
  const Device def = make(std::nullopt), all = make(std::numeric_limits<int64_t>::max()),
               none = make(0);
  EXPECT_EQ(gpu(def).gpu_options().qmatvec_swiglu_rows, rows);
  const int64_t k = 64, half = 64, n = 48;
  const QTensor wgu = random_weight(rng, 2 * half, k, QuantType::Q4_1);
  const QTensor wd = random_weight(rng, n, half, QuantType::Q8_0);
  for (int64_t m : {1, 2, 3, 8}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    const Ref xr = random_ref(rng, {m, k}, -3, 3), ar = random_ref(rng, {k}, -2, 2);
    const Ref rr = random_ref(rng, {m, n}, -5, 5);
    uint64_t dispatches[3] = {};
    std::vector<float> got[3];
    const Device* devs[3] = {&def, &all, &none};
    for (int i = 0; i < 3; i++) {
      const Device& d = *devs[i];
      const QMatMul gate_up(wgu, d), down(wd, d);
      const Tensor x = make_tensor(xr, DType::F32, d), alpha = make_tensor(ar, DType::F32, d);
      const Tensor r = make_tensor(rr, DType::F32, d);
      gate_up.forward_swiglu_ffn(x, down, r, alpha, kEps).to_vec<float>();
      const uint64_t d0 = gpu(d).stats().queue.dispatches;
      const Tensor y = gate_up.forward_swiglu_ffn(x, down, r, alpha, kEps);
      dispatches[i] = gpu(d).stats().queue.dispatches - d0;
      got[i] = y.to_vec<float>();
    }
    EXPECT_EQ(dispatches[1] + 1, dispatches[2]) << "the stores save qact's dispatch";
    EXPECT_EQ(dispatches[0], dispatches[m <= rows ? 1 : 2]);
    EXPECT_EQ(got[0], got[1]);
    EXPECT_EQ(got[0], got[2]);
  }
}

TEST_P(GpuQMatMulPrologues, SwigluAndIntDotKnobsAreParsed) {
  const std::string exe = self_exe();
  const auto opt = [&](const std::string& env, const char* key) {
    return run_gpu_child(exe, spec(), env, "GpuChild.DISABLED_ReportOptions")[key];
  };
  const std::string rows = std::to_string(default_swiglu_rows());
  const std::string all = std::to_string(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(opt("-u WICK_QMATVEC_SWIGLU", "qmatvec_swiglu_rows"), rows);
  EXPECT_EQ(opt("WICK_QMATVEC_SWIGLU=1", "qmatvec_swiglu_rows"), all);
  EXPECT_EQ(opt("WICK_QMATVEC_SWIGLU=on", "qmatvec_swiglu_rows"), all);
  EXPECT_EQ(opt("WICK_QMATVEC_SWIGLU=0", "qmatvec_swiglu_rows"), "0");
  EXPECT_EQ(opt("WICK_QMATVEC_SWIGLU=off", "qmatvec_swiglu_rows"), "0");
  // Packed dot products: on where the device has them unless the knob says off.
  const std::string has = gpu(device()).device_caps().int_dot ? "1" : "0";
  EXPECT_EQ(opt("-u WICK_VK_INT_DOT", "int_dot"), has);
  EXPECT_EQ(opt("WICK_VK_INT_DOT=1", "int_dot"), has);
  EXPECT_EQ(opt("WICK_VK_INT_DOT=off", "int_dot"), "0");
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQMatMulPrologues);

class GpuSwigluFfnSweeps : public GpuDeviceTest {};

TEST_P(GpuSwigluFfnSweeps, EveryWorkgroupShapeGivesTheSameBits) {
  // Workgroups of 2, 4 and 8 rows (1, 2, 4 h each), subgroup sums and shared memory, x
  // quantized by qact or by the product, the 32- and 256-element 8-bit formats.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  struct Config {
    uint32_t rows, threads;
    bool inline_x, subgroups;
  };
  for (const Config& sh :
       {Config{4, 32, false, false}, Config{8, 32, true, false}, Config{8, 32, false, true}}) {
    const std::string label = "rows=" + std::to_string(sh.rows) +
                              (sh.inline_x ? " inline" : " qact") +
                              (sh.subgroups ? " subgroups" : " shared");
    for (const auto& [tg, td] : {std::pair{QuantType::Q4_1, QuantType::Q8_0},
                                 std::pair{QuantType::Q4_K, QuantType::Q6_K}}) {
      const int64_t k = quant_type_info(tg)->block_elems;
      const Device on =
          ffn_device(GetParam(), sh.rows, sh.threads, sh.inline_x, sh.subgroups, true, k);
      const Device off =
          ffn_device(GetParam(), sh.rows, sh.threads, sh.inline_x, sh.subgroups, false, k);
      check_ffn_kernels(on, off, rng, tg, td, k, {1, 8}, label);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

WICK_INSTANTIATE_GPU_SWEEPS(GpuSwigluFfnSweeps);

}  // namespace
}  // namespace wick::testing
