// QMatMul::forward_attention, attention_cached and its output projection (plus the residual), on
// every device: against the two ops on the same device (they quantize the same attention rows, so
// only the product's summation order may differ) and against float64 attention and products of
// the dequantized weight, with the 8-bit activations' error bound; for every 32-element format
// (the fused kernel's) and a K format (the two ops everywhere), f32/f16/bf16 caches, f32 and f16
// q, one position or one per item, cache slots, windows and soft caps, several queries an item,
// caches long enough to split the keys over workgroups, head sizes the vector form takes and not;
// its errors. On GPUs with the kernel (Vulkan): one dispatch where the two ops take two or three,
// the same results with WICK_ATTENTION_O's option off, every attention workgroup size and both
// reductions, and a position past the cache raised at the next wait.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "gpu_test_util.h"
#include "quantized_ref.h"
#include "wick/attention.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

Tensor u32_tensor(const std::vector<uint32_t>& v, const Device& dev) {
  return Tensor::from_vec(v, Shape{static_cast<int64_t>(v.size())}, dev);
}

struct Case {
  QuantType type = QuantType::Q4_1;
  int64_t b = 1, h = 2, kvh = 1, t = 1, d = 64, n_out = 40, max_seq = 16;
  DType q_dt = DType::F32, kv = DType::F16;
  bool per_item = false, slots = false, residual = true;
  double softcap = 0;
  int64_t window = 0;
};

std::string str(const Case& c) {
  std::ostringstream o;
  o << quant_type_info(c.type)->name << " b=" << c.b << " h=" << c.h << " kvh=" << c.kvh
    << " t=" << c.t << " d=" << c.d << " n_out=" << c.n_out << " max_seq=" << c.max_seq << " q "
    << c.q_dt << " cache " << c.kv << (c.per_item ? " pos per item" : " one pos")
    << (c.slots ? " slots" : "") << (c.residual ? " residual" : "") << " softcap " << c.softcap
    << " window " << c.window;
  return o.str();
}

Case random_case(Rng& rng) {
  Case c;
  const QuantType types[] = {QuantType::Q4_0, QuantType::Q4_1,   QuantType::Q5_0, QuantType::Q5_1,
                             QuantType::Q8_0, QuantType::IQ4_NL, QuantType::Q4_K};
  c.type = types[rng.integer(0, 6)];
  c.kvh = rng.integer(1, 3);
  c.h = c.kvh * rng.integer(1, 3);
  const int64_t ds[] = {32, 64, 96, 128};
  c.d = ds[rng.integer(0, 3)];
  if (c.type == QuantType::Q4_K) c.h = c.kvh * 4, c.d = 64;  // h d a multiple of 256
  c.b = rng.integer(1, 3);
  c.t = rng.integer(0, 3) == 0 ? rng.integer(2, 3) : 1;
  c.n_out = 8 * rng.integer(1, 40);
  c.max_seq = rng.integer(c.t, rng.integer(0, 2) == 0 ? 300 : 40);
  const DType kvs[] = {DType::F32, DType::F16, DType::BF16};
  c.kv = kvs[rng.integer(0, 2)];
  c.q_dt = rng.integer(0, 4) == 0 ? DType::F16 : DType::F32;
  if (c.q_dt != DType::F32) c.kv = c.q_dt;  // 16-bit caches go with f32 q or their own dtype
  c.per_item = rng.integer(0, 1) != 0;
  c.slots = rng.integer(0, 1) != 0;
  c.residual = rng.integer(0, 3) != 0;
  if (rng.integer(0, 4) == 0) c.softcap = 0.5 + rng.uniform(0, 30);
  if (rng.integer(0, 4) == 0) c.window = rng.integer(1, c.max_seq);
  return c;
}

struct Inputs {
  Tensor q, kc, vc, pos, slots, residual;
  Ref qr, kr, vr;  // q and the caches as stored
  std::vector<int64_t> item_pos, item_slot;
};

Inputs make_inputs(const Device& dev, Rng& rng, const Case& c) {
  Inputs s;
  s.qr = round_ref(random_ref(rng, {c.b, c.h, c.t, c.d}, -0.5, 0.5), c.q_dt);
  s.q = make_tensor(s.qr, c.q_dt, dev);
  const int64_t n_slots = c.slots ? c.b + rng.integer(0, 2) : c.b;
  s.kr = round_ref(random_ref(rng, {n_slots, c.kvh, c.max_seq, c.d}), c.kv);
  s.vr = round_ref(random_ref(rng, {n_slots, c.kvh, c.max_seq, c.d}), c.kv);
  s.kc = make_tensor(s.kr, c.kv, dev);
  s.vc = make_tensor(s.vr, c.kv, dev);
  std::vector<uint32_t> pos, slots(static_cast<size_t>(n_slots));
  std::iota(slots.begin(), slots.end(), 0u);
  std::shuffle(slots.begin(), slots.end(), rng.gen());
  slots.resize(static_cast<size_t>(c.b));
  const int64_t one = rng.integer(0, c.max_seq - c.t);
  for (int64_t i = 0; i < c.b; i++) {
    s.item_pos.push_back(c.per_item ? rng.integer(0, c.max_seq - c.t) : one);
    s.item_slot.push_back(c.slots ? slots[static_cast<size_t>(i)] : i);
    pos.push_back(static_cast<uint32_t>(s.item_pos.back()));
  }
  if (!c.per_item) pos.resize(1);
  s.pos = u32_tensor(pos, dev);
  if (c.slots) s.slots = u32_tensor(slots, dev);
  if (c.residual) s.residual = make_tensor(random_ref(rng, {c.b * c.t, c.n_out}), DType::F32, dev);
  return s;
}

// Float64 attention of the stored values: (b t, h d) rows, query ti of item bi at bi t + ti.
std::vector<double> attention64(const Case& c, const Inputs& s) {
  std::vector<double> out(static_cast<size_t>(c.b * c.t * c.h * c.d));
  for (int64_t bi = 0; bi < c.b; bi++)
    for (int64_t hi = 0; hi < c.h; hi++)
      for (int64_t ti = 0; ti < c.t; ti++) {
        const int64_t slot = s.item_slot[static_cast<size_t>(bi)], kv = hi / (c.h / c.kvh);
        const int64_t n = s.item_pos[static_cast<size_t>(bi)] + ti + 1;
        const int64_t first = c.window > 0 && n > c.window ? n - c.window : 0;
        std::vector<double> p;
        double big = -INFINITY;
        for (int64_t j = first; j < n; j++) {
          double dot = 0;
          for (int64_t e = 0; e < c.d; e++)
            dot += s.qr.at({bi, hi, ti, e}) * s.kr.at({slot, kv, j, e});
          if (c.softcap > 0) dot = c.softcap * std::tanh(dot / c.softcap);
          p.push_back(dot);
          big = std::max(big, dot);
        }
        double sum = 0;
        for (double& v : p) sum += (v = std::exp(v - big));
        for (int64_t e = 0; e < c.d; e++) {
          double acc = 0;
          for (int64_t j = first; j < n; j++)
            acc += p[static_cast<size_t>(j - first)] * s.vr.at({slot, kv, j, e});
          out[static_cast<size_t>(((bi * c.t + ti) * c.h + hi) * c.d + e)] = acc / sum;
        }
      }
  return out;
}

// forward_attention against the two ops on `dev` and against float64.
void check_case(const Device& dev, Rng& rng, const Case& c, const std::string& label) {
  SCOPED_TRACE(str(c) + " " + label + " on " + dev.name());
  const int64_t k = c.h * c.d, m = c.b * c.t;
  const QTensor wq =
      quantize(Tensor::from_vec(block_test_data(rng, c.n_out, k, 32), {c.n_out, k}), c.type);
  const QMatMul o(wq, dev);
  const Inputs s = make_inputs(dev, rng, c);
  AttentionOptions opts;
  opts.softcap = c.softcap;
  opts.window = c.window;
  const Tensor fused = o.forward_attention(s.q, s.kc, s.vc, s.pos, s.slots, opts, s.residual);
  const Tensor y =
      attention_cached(s.q, s.kc, s.vc, s.pos, s.slots, opts).transpose(1, 2).reshape({m, k});
  const Tensor two = c.residual ? o.forward(y, s.residual) : o.forward(y);
  ASSERT_EQ(fused.shape(), Shape({m, c.n_out}));
  EXPECT_EQ(fused.dtype(), DType::F32);
  EXPECT_TRUE(fused.is_contiguous());

  const std::vector<float> a = fused.to_vec<float>(), b = two.to_vec<float>();
  const std::vector<float> x = y.to_dtype(DType::F32).to_vec<float>();
  const std::vector<float> w = dequantize(wq, DType::F32).to_vec<float>();
  const std::vector<float> res =
      c.residual ? s.residual.to_vec<float>() : std::vector<float>(a.size(), 0.0f);
  const std::vector<double> x64 = attention64(c, s);
  // The 8-bit activations' bound (expected_for) around float64's products of float64 attention;
  // the attention's own error (f32 sums, rounded to q's dtype) moves x by a few units of q's
  // dtype, which the products carry as sum |w| |dx|.
  const Expected e = expected_for(c.type, w, x64, m, c.n_out, k);
  const double u_q = c.q_dt == DType::F32 ? 0x1p-18 : 0x1p-9;
  for (int64_t r = 0; r < m; r++)
    for (int64_t n = 0; n < c.n_out; n++) {
      const size_t at = static_cast<size_t>(r * c.n_out + n);
      // Sum over the terms of |w| |x| (with the block's largest |w|: gap_over_term_sum's measure).
      double terms = 0, dx = 0;
      for (int64_t i = 0; i < k; i += 32) {
        double wmax = 0;
        for (int64_t j = i; j < i + 32; j++) wmax = std::max<double>(wmax, std::abs(w[n * k + j]));
        for (int64_t j = i; j < i + 32; j++) {
          const double xv = x[static_cast<size_t>(r * k + j)];
          terms += (std::abs(w[n * k + j]) + wmax) * std::abs(xv);
          dx += std::abs(w[n * k + j]) * (u_q * std::abs(xv) + 1e-7);
        }
      }
      // Two summation orders of k / 8 runs: each within (k / 8 + 2) 2^-24 of the term sum, then
      // one rounding of the residual's add.
      const double gap = (static_cast<double>(k) / 8 + 2) * 0x1p-23 * terms +
                         0x1p-23 * (std::abs(b[at]) + std::abs(res[at]));
      ASSERT_LE(std::abs(static_cast<double>(a[at]) - b[at]), gap)
          << "row " << r << " out " << n << ": fused " << a[at] << ", two ops " << b[at];
      const double want = e.y[at] + res[at];
      ASSERT_LE(std::abs(a[at] - want), e.tol[at] + dx + 0x1p-22 * std::abs(want))
          << "row " << r << " out " << n << ": fused " << a[at] << ", float64 " << want;
    }
}

class QMatMulAttention : public DeviceTest {};

TEST_P(QMatMulAttention, MatchesTheTwoOpsAndFloat64) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  for (int i = 0; i < 20; i++) {
    check_case(dev, rng, random_case(rng), "random");
    if (HasFatalFailure()) return;
  }
  // SmolLM2-135M's o projection (9 heads of 64, 3 kv heads) at decode's rows, a cache long
  // enough for several key splits.
  for (int64_t b : {1, 4}) {
    Case c;
    c.b = b;
    c.h = 9;
    c.kvh = 3;
    c.n_out = 576;
    c.max_seq = 300;
    c.per_item = b > 1;
    c.slots = b > 1;
    check_case(dev, rng, c, "SmolLM2 shape");
    if (HasFatalFailure()) return;
  }
}

TEST_P(QMatMulAttention, RefusesBadArguments) {
  const Device dev = device();
  Rng rng;
  Case c;  // h 2, kvh 1, d 64: k 128
  const QMatMul o(
      quantize(Tensor::from_vec(block_test_data(rng, 40, 128, 32), {40, 128}), QuantType::Q8_0),
      dev);
  const Inputs s = make_inputs(dev, rng, c);
  const std::string op = "QMatMul::forward_attention";
  AttentionOptions opts;
  expect_error([&] { o.forward_attention(s.q.narrow(3, 0, 32), s.kc, s.vc, s.pos, {}, opts); },
               ErrorKind::Shape, {op});
  const QMatMul wide(
      quantize(Tensor::from_vec(block_test_data(rng, 40, 256, 32), {40, 256}), QuantType::Q8_0),
      dev);
  expect_error([&] { wide.forward_attention(s.q, s.kc, s.vc, s.pos, {}, opts); }, ErrorKind::Shape,
               {op, "k = 256"});
  expect_error(
      [&] { o.forward_attention(s.q, s.kc, s.vc, s.pos, {}, opts, s.residual.narrow(1, 0, 8)); },
      ErrorKind::Shape, {op, "residual"});
  expect_error(
      [&] {
        o.forward_attention(s.q, s.kc, s.vc, s.pos, {}, opts, s.residual.to_dtype(DType::F16));
      },
      ErrorKind::DType, {op, "residual"});
  expect_error([&] { o.forward_attention(s.q.to_dtype(DType::I32), s.kc, s.vc, s.pos, {}, opts); },
               ErrorKind::DType, {op});
  AttentionOptions bad;
  bad.window = -1;
  expect_error([&] { o.forward_attention(s.q, s.kc, s.vc, s.pos, {}, bad); },
               ErrorKind::Unsupported, {op});
  // A position past the cache: OutOfRange (a GPU raises it at the next wait).
  expect_error(
      [&] {
        o.forward_attention(s.q, s.kc, s.vc, u32_tensor({static_cast<uint32_t>(c.max_seq)}, dev),
                            {}, opts, s.residual);
        dev.synchronize();
      },
      ErrorKind::OutOfRange, {"attention"});
}

WICK_INSTANTIATE_DEVICES(QMatMulAttention);

class GpuQMatMulAttention : public GpuDeviceTest {
 protected:
  Rng rng;
};

TEST_P(GpuQMatMulAttention, IsOneDispatchWhereTheBackendHasTheKernel) {
  PoisonOff quiet;  // exact dispatch counts
  SCOPED_TRACE(rng.seed());
  const bool has = gpu(device()).gpu_options().attention_o_proj;
  for (bool on : {true, false}) {
    const Device d = private_device([&](gpu::GpuOptions& o) {
      o.queue.ops_per_buffer = 1000;
      o.attention_o_proj = has && on;
    });
    Case c;
    const QMatMul o(quantize(Tensor::from_vec(block_test_data(rng, c.n_out, c.h * c.d, 32),
                                              {c.n_out, c.h * c.d}),
                             c.type),
                    d);
    const Inputs s = make_inputs(d, rng, c);
    d.synchronize();
    const auto before = gpu(d).stats().queue;
    const Tensor y = o.forward_attention(s.q, s.kc, s.vc, s.pos, {}, {}, s.residual);
    const auto after = gpu(d).stats().queue;
    if (has && on)
      EXPECT_EQ(after.dispatches - before.dispatches, 1u);
    else
      EXPECT_GE(after.dispatches - before.dispatches, 2u);
    EXPECT_EQ(after.commits, before.commits) << "nothing was waited for";
  }
}

TEST_P(GpuQMatMulAttention, EveryWorkgroupSizeAndReduction) {
  // The kernel's workgroup is the attention's (32 .. 256 threads: head sizes up to it, the
  // weight's columns in more or fewer registers a thread), with subgroup or tree reductions,
  // and with the option off (the two ops).
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  for (uint32_t block : {32u, 64u, 128u, 256u}) {
    if (block > gpu(device()).device_caps().max_workgroup_size) continue;
    for (bool subgroups : {true, false}) {
      const Device d = private_device([&](gpu::GpuOptions& o) {
        o.attention_block = block;
        o.subgroups = subgroups;
      });
      for (int i = 0; i < 3; i++) {
        Case c = random_case(rng);
        c.t = 1;
        c.d = std::min<int64_t>(c.d, block);
        check_case(d, rng, c,
                   "block " + std::to_string(block) + (subgroups ? " subgroups" : " tree"));
        if (HasFatalFailure()) return;
      }
    }
  }
  const Device off = private_device([](gpu::GpuOptions& o) { o.attention_o_proj = false; });
  check_case(off, rng, random_case(rng), "option off");
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQMatMulAttention);

}  // namespace
}  // namespace wick::testing
