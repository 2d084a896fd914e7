// QMatMul::forward_argmax, a greedy pick from the product (the lm_head's logits and their argmax),
// on every device: the picks equal argmax(1) of the product on the same device (the unfused
// ops), with and without the rms_norm prologue, f32/f16/bf16 x, for x rows decode's kernel takes
// and more, at an offset into ids whose other elements stay as they were; the picked row's
// float64 value is the largest within the product's error (f32 x); duplicated best rows give the
// first, rows of NaN win as argmax's order says; its errors. On GPUs: two dispatches fewer than
// the ops, the two levels of merges on many workgroups, qmatvec's shapes and x paths, ties and NaN
// in the kernel, and a captured pick replayed with new x.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "gpu_test_util.h"
#include "quantized_ref.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

constexpr double kEps = 1e-5;
constexpr uint32_t kPoison = 0xdeadbeefu;

struct Case {
  QuantType type = QuantType::Q8_0;
  int64_t m = 1, n = 300, k = 64, offset = 0;
  bool norm = true;
  DType dt = DType::F32;  // x's (and alpha's)
};

std::string str(const Case& c) {
  std::ostringstream o;
  o << quant_type_info(c.type)->name << " m=" << c.m << " n=" << c.n << " k=" << c.k
    << " offset=" << c.offset << (c.norm ? " rms_norm" : "") << " x " << c.dt;
  return o.str();
}

Case random_case(Rng& rng) {
  const QuantType types[] = {QuantType::Q8_0, QuantType::Q4_1, QuantType::Q4_0, QuantType::Q4_K,
                             QuantType::Q6_K};
  Case c;
  c.type = types[rng.integer(0, 4)];
  c.k = quant_type_info(c.type)->block_elems == 32 ? 32 * rng.integer(1, 6) : 256;
  c.m = rng.integer(1, 4) == 1 ? rng.integer(2, 12) : 1;
  const int64_t ns[] = {1, 2, 7, 64, 301, 2049, 5000};
  c.n = ns[rng.integer(0, 6)];
  c.offset = rng.integer(0, 3);
  c.norm = rng.integer(0, 3) != 0;
  const DType dts[] = {DType::F32, DType::F32, DType::F16, DType::BF16};
  c.dt = dts[rng.integer(0, 3)];
  return c;
}

std::vector<float> random_values(Rng& rng, int64_t n, double lo, double hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

// ids of `len` elements, every one kPoison.
Tensor poisoned_ids(int64_t len, const Device& dev) {
  return Tensor::from_vec(std::vector<uint32_t>(static_cast<size_t>(len), kPoison), {len}, dev);
}

// forward_argmax's picks at c.offset of ids (c.m + c.offset + 2 elements), the others untouched,
// against argmax(1) of the product on the same device; returns the picks.
std::vector<uint32_t> check_picks(const QMatMul& mm, const Tensor& x, const Tensor& alpha,
                                  const Case& c, const std::string& what) {
  const Device& dev = mm.device();
  const Tensor ids = poisoned_ids(c.m + c.offset + 2, dev);
  mm.forward_argmax(x, ids, c.offset, c.norm ? alpha : Tensor(), kEps);
  const Tensor y = c.norm ? mm.forward_rms_norm(x, alpha, kEps) : mm.forward(x);
  const std::vector<uint32_t> want = y.argmax(1).to_vec<uint32_t>();
  const std::vector<uint32_t> got = ids.to_vec<uint32_t>();
  std::vector<uint32_t> picks;
  for (int64_t i = 0; i < ids.dim(0); i++) {
    const uint32_t g = got[static_cast<size_t>(i)];
    if (i < c.offset || i >= c.offset + c.m) {
      EXPECT_EQ(g, kPoison) << what << ": ids[" << i << "] outside the picks was written";
      continue;
    }
    EXPECT_EQ(g, want[static_cast<size_t>(i - c.offset)])
        << what << ": x row " << i - c.offset << " (argmax of the product on " << dev.name() << ")";
    picks.push_back(g);
  }
  return picks;
}

// A random case: the picks as argmax's, and each picked row's float64 value the row's largest
// within the product's error.
void check_case(const Device& dev, Rng& rng, const Case& c, const std::string& where) {
  const std::string what = where + " " + str(c);
  SCOPED_TRACE(what);
  const int64_t block = quant_type_info(c.type)->block_elems;
  const QTensor qw =
      quantize(Tensor::from_vec(block_test_data(rng, c.n, c.k, block), {c.n, c.k}), c.type);
  const QMatMul mm(qw, dev);
  const std::vector<float> xv = random_values(rng, c.m * c.k, -2, 2);
  const std::vector<float> av = random_values(rng, c.k, 0.5, 1.5);
  const Tensor x = Tensor::from_vec(xv, {c.m, c.k}, dev).to_dtype(c.dt);
  const Tensor alpha = Tensor::from_vec(av, {c.k}, dev).to_dtype(c.dt);
  const std::vector<uint32_t> picks = check_picks(mm, x, alpha, c, what);
  // The float64 check for f32 x (16-bit x rounds x and the normalized rows first).
  if (::testing::Test::HasFailure() || c.dt != DType::F32) return;
  // float64: the product of the rows the prologue gives.
  std::vector<double> xr(xv.begin(), xv.end());
  if (c.norm)
    for (int64_t r = 0; r < c.m; r++) {
      double ss = 0;
      for (int64_t e = 0; e < c.k; e++) ss += xr[r * c.k + e] * xr[r * c.k + e];
      const double inv = 1 / std::sqrt(ss / c.k + kEps);
      for (int64_t e = 0; e < c.k; e++) xr[r * c.k + e] *= inv * av[e];
    }
  const std::vector<float> w = dequantize(qw).to_vec<float>();
  const Expected e = expected_for(c.type, w, xr, c.m, c.n, c.k, f16_gemm_for(dev, c.m));
  for (int64_t r = 0; r < c.m; r++) {
    double floor = -1e300;
    for (int64_t o = 0; o < c.n; o++)
      floor = std::max(floor, e.y[r * c.n + o] - e.tol[r * c.n + o]);
    const auto p = static_cast<int64_t>(picks[static_cast<size_t>(r)]);
    ASSERT_LT(p, c.n);
    EXPECT_GE(e.y[r * c.n + p] + e.tol[r * c.n + p], floor)
        << "x row " << r << " picked row " << p << ", which is not among the largest";
  }
}

class QMatMulArgmax : public DeviceTest {};

TEST_P(QMatMulArgmax, PicksTheProductsArgmax) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  for (int i = 0; i < 20; i++) {
    check_case(dev, rng, random_case(rng), "random");
    if (HasFailure()) return;
  }
  // SmolLM2-135M's lm_head: 49152 rows of 576 (Q8_0), decode's one x row, with its final norm.
  Case c;
  c.n = 49152;
  c.k = 576;
  c.offset = 5;
  check_case(dev, rng, c, "SmolLM2's lm_head");
}

// Best rows repeated at positions far apart (in other workgroups and blocks of them): the first
// wins; rows of NaN beat every number, the first of them winning.
void check_ties_and_nan(const Device& dev, Rng& rng) {
  for (QuantType t : {QuantType::Q8_0, QuantType::Q4_1}) {
    const int64_t n = 6000, k = 64;
    std::vector<float> wv = random_values(rng, n * k, -1, 1);
    const std::vector<int64_t> best = {4321, 777, 5999, 778};  // the first is 777
    for (int64_t b : best)
      for (int64_t e = 0; e < k; e++) wv[static_cast<size_t>(b * k + e)] = 1.0f;
    QTensor qw = quantize(Tensor::from_vec(wv, {n, k}), t);
    const Tensor x = Tensor::from_vec(random_values(rng, 2 * k, 0.1, 1), {2, k}, dev);
    const Tensor alpha = Tensor::from_vec(random_values(rng, k, 0.5, 1.5), {k}, dev);
    Case c;
    c.type = t;
    c.m = 2;
    c.n = n;
    c.k = k;
    for (bool norm : {true, false}) {
      c.norm = norm;
      const std::vector<uint32_t> picks =
          check_picks(QMatMul(qw, dev), x, alpha, c, std::string("ties ") + str(c));
      ASSERT_EQ(picks, (std::vector<uint32_t>{777, 777}));
    }
    // NaN in a row's first block scale (f16 at the block's start in both formats): rows 3000 and
    // 1234 give NaN, the first of them wins over every number.
    std::vector<uint8_t> bytes(qw.data(), qw.data() + qw.nbytes());
    for (int64_t r : {3000, 1234}) {
      const uint16_t nan16 = 0x7e00;
      std::memcpy(bytes.data() + static_cast<size_t>(r) * qw.row_bytes(), &nan16, 2);
    }
    const QMatMul with_nan(QTensor(t, qw.shape(), std::move(bytes)), dev);
    for (bool norm : {true, false}) {
      c.norm = norm;
      const std::vector<uint32_t> picks =
          check_picks(with_nan, x, alpha, c, std::string("NaN rows ") + str(c));
      ASSERT_EQ(picks, (std::vector<uint32_t>{1234, 1234}));
    }
  }
}

TEST_P(QMatMulArgmax, TiesGoToTheFirstRowAndNaNWins) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  check_ties_and_nan(device(), rng);
}

TEST_P(QMatMulArgmax, RefusesBadArguments) {
  const Device dev = device();
  Rng rng;
  const QMatMul mm(
      quantize(Tensor::from_vec(random_values(rng, 40 * 64, -1, 1), {40, 64}), QuantType::Q8_0),
      dev);
  const Tensor x = Tensor::from_vec(random_values(rng, 2 * 64, -1, 1), {2, 64}, dev);
  const Tensor ids = poisoned_ids(4, dev);
  const std::string op = "QMatMul::forward_argmax";
  expect_error(
      [&] {
        mm.forward_argmax(x.reshape({1, 2, 64}), ids);
      },
      ErrorKind::Shape, {op, "(m, k)"});
  expect_error([&] { mm.forward_argmax(x.narrow(1, 0, 32), ids); }, ErrorKind::Shape, {op});
  expect_error([&] { mm.forward_argmax(x, ids.reshape({2, 2})); }, ErrorKind::Shape, {op, "1-D"});
  expect_error([&] { mm.forward_argmax(x, ids.to_dtype(DType::F32)); }, ErrorKind::DType,
               {op, "u32"});
  expect_error([&] { mm.forward_argmax(x, ids, 3); }, ErrorKind::OutOfRange, {op, "offset 3"});
  expect_error([&] { mm.forward_argmax(x, ids, -1); }, ErrorKind::OutOfRange, {op});
  expect_error([&] { mm.forward_argmax(x, ids, 0, Tensor::ones({32}, DType::F32, dev), kEps); },
               ErrorKind::Shape, {op, "alpha"});
  if (!dev.is_cpu())
    expect_error([&] { mm.forward_argmax(x, poisoned_ids(4, Device::cpu())); }, ErrorKind::Device,
                 {op, "ids"});
  EXPECT_EQ(ids.to_vec<uint32_t>(), std::vector<uint32_t>(4, kPoison)) << "nothing written";
}

WICK_INSTANTIATE_DEVICES(QMatMulArgmax);

class GpuQMatMulArgmax : public GpuDeviceTest {
 protected:
  PoisonOff quiet;  // exact dispatch counts
  Rng rng;
};

TEST_P(GpuQMatMulArgmax, IsTwoDispatchesFewerThanTheOps) {
  SCOPED_TRACE(rng.seed());
  for (bool fused : {true, false}) {
    const Device d = private_device([&](gpu::GpuOptions& o) {
      o.queue.ops_per_buffer = 1000;
      o.qmatvec_fuse_rows = 0;  // qact, then the product
      o.qmatvec_argmax = fused;
    });
    const QMatMul mm(
        quantize(Tensor::from_vec(random_values(rng, 500 * 64, -1, 1), {500, 64}), QuantType::Q8_0),
        d);
    const Tensor x = Tensor::from_vec(random_values(rng, 64, -1, 1), {1, 64}, d);
    const Tensor alpha = Tensor::from_vec(random_values(rng, 64, 0.5, 1.5), {64}, d);
    const Tensor ids = poisoned_ids(3, d);
    d.synchronize();
    const auto before = gpu(d).stats().queue;
    mm.forward_argmax(x, ids, 1, alpha, kEps);
    const auto after = gpu(d).stats().queue;
    // qact and the product; unfused also argmax (and the copy into ids where it is a kernel).
    if (fused)
      EXPECT_EQ(after.dispatches - before.dispatches, 2u);
    else
      EXPECT_GE(after.dispatches - before.dispatches, 3u);
    EXPECT_EQ(after.commits, before.commits) << "nothing was waited for";
  }
}

TEST_P(GpuQMatMulArgmax, ShapesXPathsAndManyWorkgroups) {
  // qmatvec's shapes (32 threads a workgroup: blocks of 64 workgroups, so 5000 rows of 2 a
  // workgroup merge on two levels over 40 blocks), subgroups or shared memory, x quantized by the
  // product itself (ACT_INLINE) or staged (ACT_STAGE).
  SCOPED_TRACE(rng.seed());
  const QMatVecPath paths[] = {{{32, 2, 8}, true, 0, 0, "32 x 2"},
                               {{32, 2, 8}, false, 0, 0, "32 x 2, shared memory"},
                               {{64, 4, 8}, true, 0, 0, "64 x 4"},
                               {{128, 3, 8}, true, 0, 0, "128 x 3"},
                               {{32, 1, 8}, true, 8, 0, "32 x 1, ACT_INLINE"},
                               {{64, 2, 8}, true, 0, 2, "64 x 2, ACT_STAGE"}};
  for (const QMatVecPath& v : paths) {
    const Device d = private_device([&](gpu::GpuOptions& o) {
      v.apply(o);
      o.qmatvec_argmax = true;  // CUDA's default is off
    });
    for (int i = 0; i < 3; i++) {
      Case c = random_case(rng);
      c.n = i == 0 ? 5000 : c.n;
      c.m = i == 1 ? 3 : c.m;
      check_case(d, rng, c, v.name);
      if (HasFailure()) return;
    }
  }
}

TEST_P(GpuQMatMulArgmax, TiesAndNaNInTheKernel) {
  SCOPED_TRACE(rng.seed());
  check_ties_and_nan(private_device([](gpu::GpuOptions& o) { o.qmatvec_argmax = true; }), rng);
}

// A captured pick replayed with new x rows: each replay's picks are argmax's of that x (the
// counters the last workgroups reset let every replay merge again).
TEST_P(GpuQMatMulArgmax, ReplaysWithNewX) {
  SCOPED_TRACE(rng.seed());
  const Device d = private_device([](gpu::GpuOptions& o) { o.qmatvec_argmax = true; });
  const int64_t n = 3000, k = 96;
  const QMatMul mm(
      quantize(Tensor::from_vec(random_values(rng, n * k, -1, 1), {n, k}), QuantType::Q4_1), d);
  const Tensor alpha = Tensor::from_vec(random_values(rng, k, 0.5, 1.5), {k}, d);
  const Tensor x = Tensor::zeros({1, k}, DType::F32, d), ids = poisoned_ids(4, d);
  const Recording step = d.capture([&] { mm.forward_argmax(x, ids, 2, alpha, kEps); });
  for (int i = 0; i < 4; i++) {
    const Tensor xi = Tensor::from_vec(random_values(rng, k, -2, 2), {1, k}, d);
    x.slice_set(xi, 0, 0);
    step.replay();
    const uint32_t want = mm.forward_rms_norm(xi, alpha, kEps).argmax(1).to_vec<uint32_t>()[0];
    EXPECT_EQ(ids.to_vec<uint32_t>(), (std::vector<uint32_t>{kPoison, kPoison, want, kPoison}))
        << "replay " << i;
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQMatMulArgmax);

}  // namespace
}  // namespace wick::testing
