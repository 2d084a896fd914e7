// QMatMul::forward_rope_kv, a decode step's q/k/v projection and its rope_kv_cache, on every
// device: bit for bit the product followed by rope_kv_cache on the same device (the rotated q and
// both caches, whose other rows keep their random values), the rotation against float64 of the
// product's values, for each cache dtype, with and without the rms_norm prologue, one position or
// one per item, with and without cache slots, both rotation layouts (GPUs join only rope_i pairs
// to the product's stores), x rows decode's kernel takes and more; its errors. On GPUs: one
// dispatch less than the two ops, on the device's qmatvec shape and a GPU's, with x quantized by
// qact, by the product itself (ACT_INLINE) or staged (ACT_STAGE), and a position past the cache
// raised at the next wait with nothing written.
#include <algorithm>
#include <bit>
#include <numeric>
#include <sstream>
#include <utility>

#include "gpu_test_util.h"
#include "quantized_ref.h"
#include "wick/attention.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

constexpr double kEps = 1e-5;

QTensor random_weight(Rng& rng, int64_t n, int64_t k, QuantType t) {
  const int64_t block = quant_type_info(t)->block_elems;
  return quantize(Tensor::from_vec(block_test_data(rng, n, k, block), {n, k}), t);
}

Tensor u32_tensor(const std::vector<uint32_t>& v, const Device& dev) {
  return Tensor::from_vec(v, Shape{static_cast<int64_t>(v.size())}, dev);
}

struct Case {
  QuantType type = QuantType::Q4_1;
  int64_t b = 1, h = 2, kvh = 1, d = 8, k = 64, max_seq = 16;
  DType kv = DType::F16;
  bool interleaved = true, norm = true, per_item = false, slots = false, strided_tables = false;
};

std::string str(const Case& c) {
  std::ostringstream o;
  o << quant_type_info(c.type)->name << " b=" << c.b << " h=" << c.h << " kvh=" << c.kvh
    << " d=" << c.d << " k=" << c.k << " max_seq=" << c.max_seq << " cache " << c.kv
    << (c.interleaved ? " rope_i" : " rope") << (c.norm ? " rms_norm" : "")
    << (c.per_item ? " pos per item" : " one pos") << (c.slots ? " slots" : "")
    << (c.strided_tables ? " strided tables" : "");
  return o.str();
}

Case random_case(Rng& rng) {
  Case c;
  const QuantType types[] = {QuantType::Q4_1, QuantType::Q8_0, QuantType::Q4_K, QuantType::Q6_K};
  c.type = types[rng.integer(0, 3)];
  c.k = quant_type_info(c.type)->block_elems == 32 ? 32 * rng.integer(1, 6) : 256;
  c.b = rng.integer(1, 8);
  c.kvh = rng.integer(1, 3);
  c.h = c.kvh * rng.integer(1, 3);
  c.d = 2 * rng.integer(1, 12);
  c.max_seq = rng.integer(1, 20);
  const DType kvs[] = {DType::F32, DType::F16, DType::BF16};
  c.kv = kvs[rng.integer(0, 2)];
  c.interleaved = rng.integer(0, 3) != 0;
  c.norm = rng.integer(0, 3) != 0;
  c.per_item = rng.integer(0, 1) != 0;
  c.slots = rng.integer(0, 1) != 0;
  c.strided_tables = rng.integer(0, 5) == 0;
  return c;
}

// The product's inputs and targets, twice: for forward_rope_kv and for the unfused ops.
struct Inputs {
  Tensor x, alpha, pos, slots;
  RotaryTables tables;
  Ref kc, vc;  // the caches' values before (rounded to the cache dtype)
  std::vector<int64_t> item_pos, item_slot;
};

Inputs make_setup(const Device& dev, Rng& rng, const Case& c) {
  Inputs s;
  s.x = make_tensor(random_ref(rng, {c.b, c.k}, -3, 3), DType::F32, dev);
  s.alpha = make_tensor(random_ref(rng, {c.k}), DType::F32, dev);
  const int64_t n_slots = c.slots ? c.b + rng.integer(0, 3) : c.b;
  s.kc = round_ref(random_ref(rng, {n_slots, c.kvh, c.max_seq, c.d}), c.kv);
  s.vc = round_ref(random_ref(rng, {n_slots, c.kvh, c.max_seq, c.d}), c.kv);
  std::vector<uint32_t> pos, slots(static_cast<size_t>(n_slots));
  std::iota(slots.begin(), slots.end(), 0u);
  std::shuffle(slots.begin(), slots.end(), rng.gen());
  slots.resize(static_cast<size_t>(c.b));
  const int64_t one = rng.integer(0, c.max_seq - 1);
  for (int64_t i = 0; i < c.b; i++) {
    s.item_pos.push_back(c.per_item ? rng.integer(0, c.max_seq - 1) : one);
    s.item_slot.push_back(c.slots ? slots[static_cast<size_t>(i)] : i);
    pos.push_back(static_cast<uint32_t>(s.item_pos.back()));
  }
  if (!c.per_item) pos.resize(1);
  s.pos = u32_tensor(pos, dev);
  if (c.slots) s.slots = u32_tensor(slots, dev);
  const int64_t rows = c.max_seq + rng.integer(0, 2);
  Tensor* tabs[] = {&s.tables.cos_q, &s.tables.sin_q, &s.tables.cos_k, &s.tables.sin_k};
  for (size_t i = 0; i < 4; i++)
    *tabs[i] = make_tensor(random_ref(rng, {rows, c.d / 2}, -1, 1), DType::F32, dev,
                           c.strided_tables && i == 1 ? Variant::Transposed : Variant::Contiguous);
  return s;
}

// q, k and v of a product y (b, n_out) as rope_kv_cache takes them.
std::array<Tensor, 3> split_qkv(const Tensor& y, const Case& c) {
  auto part = [&](int64_t first, int64_t n) {
    return y.narrow(1, first * c.d, n * c.d).reshape({c.b, 1, n, c.d}).transpose(1, 2);
  };
  return {part(0, c.h), part(c.h, c.kvh), part(c.h + c.kvh, c.kvh)};
}

// forward_rope_kv against the product then rope_kv_cache, on `dev`.
void check_case(const Device& dev, Rng& rng, const Case& c, const std::string& label) {
  SCOPED_TRACE(str(c) + " " + label + " on " + dev.name());
  const int64_t n_out = (c.h + 2 * c.kvh) * c.d;
  const QMatMul mm(random_weight(rng, n_out, c.k, c.type), dev);
  const Inputs s = make_setup(dev, rng, c);
  const Tensor kc = make_tensor(s.kc, c.kv, dev), vc = make_tensor(s.vc, c.kv, dev);
  const Tensor kc2 = make_tensor(s.kc, c.kv, dev), vc2 = make_tensor(s.vc, c.kv, dev);
  const Tensor alpha = c.norm ? s.alpha : Tensor();
  const Tensor q = mm.forward_rope_kv(
      s.x, {c.h, c.kvh, kc, vc, s.tables, s.pos, c.interleaved, s.slots}, alpha, kEps);
  const Tensor y = c.norm ? mm.forward_rms_norm(s.x, s.alpha, kEps) : mm.forward(s.x);
  const std::array<Tensor, 3> qkv = split_qkv(y, c);
  const Tensor q2 =
      rope_kv_cache(qkv[0], qkv[1], qkv[2], kc2, vc2, s.tables, s.pos, c.interleaved, s.slots);
  ASSERT_EQ(q.shape(), Shape({c.b, c.h, 1, c.d}));
  EXPECT_EQ(q.dtype(), DType::F32);
  EXPECT_TRUE(q.is_contiguous());
  EXPECT_TRUE(same_bits(q, q2)) << "q";
  EXPECT_TRUE(same_bits(kc, kc2)) << "k_cache";
  EXPECT_TRUE(same_bits(vc, vc2)) << "v_cache";

  // The rotation in float64 of the product's values, and the caches' other rows untouched.
  const Ref yr = to_ref(y), qr = to_ref(q), kr = to_ref(kc), vr = to_ref(vc);
  const Ref cq = to_ref(s.tables.cos_q), sq = to_ref(s.tables.sin_q);
  const Ref ck = to_ref(s.tables.cos_k), sk = to_ref(s.tables.sin_k);
  // The rotated value and the size of its terms (what f32 rounding is relative to).
  auto rotated = [&](int64_t bi, int64_t col0, int64_t i, const Ref& cs, const Ref& sn) {
    const int64_t half = c.d / 2, pair = c.interleaved ? i / 2 : i % half;
    const int64_t lo = c.interleaved ? 2 * pair : pair, hi = c.interleaved ? lo + 1 : lo + half;
    const double a = yr.at({bi, col0 + lo}), b = yr.at({bi, col0 + hi});
    const double cv = cs.at({s.item_pos[static_cast<size_t>(bi)], pair});
    const double sv = sn.at({s.item_pos[static_cast<size_t>(bi)], pair});
    const double size = std::abs(a) + std::abs(b);
    return std::pair(i == lo ? a * cv - b * sv : a * sv + b * cv, size);
  };
  // f32 arithmetic (a few ulp of the terms) and one rounding to the stored dtype (u; f16's
  // subnormals are 2^-24 apart).
  const double floor = c.kv == DType::F16 ? 0x1p-25 : 0;
  auto near = [&](double got, std::pair<double, double> want, double u) {
    return std::abs(got - want.first) <=
           4 * 0x1p-24 * want.second + u * std::abs(want.first) + (u > 0 ? floor : 0);
  };
  const double u = unit_roundoff(c.kv);
  for (int64_t bi = 0; bi < c.b; bi++)
    for (int64_t i = 0; i < c.d; i++) {
      for (int64_t hi = 0; hi < c.h; hi++) {
        const auto want = rotated(bi, hi * c.d, i, cq, sq);
        ASSERT_TRUE(near(qr.at({bi, hi, 0, i}), want, 0))
            << "q " << bi << " " << hi << " " << i << ": " << qr.at({bi, hi, 0, i}) << " vs "
            << want.first;
      }
      for (int64_t hi = 0; hi < c.kvh; hi++) {
        const std::vector<int64_t> at = {s.item_slot[static_cast<size_t>(bi)], hi,
                                         s.item_pos[static_cast<size_t>(bi)], i};
        const auto want_k = rotated(bi, (c.h + hi) * c.d, i, ck, sk);
        ASSERT_TRUE(near(kr.at(at), want_k, u)) << "k " << kr.at(at) << " vs " << want_k.first;
        const double want_v = yr.at({bi, (c.h + c.kvh + hi) * c.d + i});
        ASSERT_TRUE(near(vr.at(at), {want_v, 0.0}, u)) << "v " << vr.at(at) << " vs " << want_v;
      }
    }
  for_each_index(s.kc.shape, [&](const std::vector<int64_t>& at) {
    for (int64_t bi = 0; bi < c.b; bi++)
      if (at[0] == s.item_slot[static_cast<size_t>(bi)] &&
          at[2] == s.item_pos[static_cast<size_t>(bi)])
        return;
    ASSERT_EQ(kr.at(at), s.kc.at(at)) << "k_cache row untouched";
    ASSERT_EQ(vr.at(at), s.vc.at(at)) << "v_cache row untouched";
  });
}

class QMatMulRopeKv : public DeviceTest {};

TEST_P(QMatMulRopeKv, EqualsTheProductThenRopeKvCacheBitForBit) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  for (int i = 0; i < 24; i++) {
    check_case(dev, rng, random_case(rng), "random");
    if (HasFatalFailure()) return;
  }
  // SmolLM2-135M's shape (9 query heads, 3 kv heads of 64) at decode's rows, and 12 rows (the
  // tiled kernel on GPUs: the two ops).
  for (int64_t b : {1, 8, 12}) {
    Case c;
    c.b = b;
    c.h = 9;
    c.kvh = 3;
    c.d = 64;
    c.k = 576;
    c.max_seq = 40;
    c.per_item = b > 1;
    c.slots = b > 1;
    check_case(dev, rng, c, "SmolLM2 shape");
    if (HasFatalFailure()) return;
  }
}

TEST_P(QMatMulRopeKv, RefusesBadArguments) {
  const Device dev = device();
  Rng rng;
  const QMatMul mm(random_weight(rng, 32, 64, QuantType::Q8_0), dev);  // h + 2 kvh = 4 of d = 8
  Case c;
  const Inputs s = make_setup(dev, rng, c);  // h 2, kvh 1, d 8
  const Tensor kc = make_tensor(s.kc, c.kv, dev), vc = make_tensor(s.vc, c.kv, dev);
  const RopeKvTarget ok{2, 1, kc, vc, s.tables, s.pos, true, {}};
  const std::string op = "QMatMul::forward_rope_kv";
  expect_error(
      [&] {
        mm.forward_rope_kv(s.x.reshape({1, 1, 64}), ok);
      },
      ErrorKind::Shape, {op, "(b, k)"});
  expect_error([&] { mm.forward_rope_kv(s.x.narrow(1, 0, 32), ok); }, ErrorKind::Shape, {op});
  RopeKvTarget bad_heads = ok;
  bad_heads.heads = 3;  // 3 + 2 = 5 does not divide 32
  expect_error([&] { mm.forward_rope_kv(s.x, bad_heads); }, ErrorKind::Shape, {op, "divide"});
  bad_heads.heads = 0;
  expect_error([&] { mm.forward_rope_kv(s.x, bad_heads); }, ErrorKind::Shape, {op});
  expect_error([&] { mm.forward_rope_kv(s.x, ok, s.alpha.narrow(0, 0, 32), kEps); },
               ErrorKind::Shape, {op, "alpha"});
  expect_error([&] { mm.forward_rope_kv(s.x, ok, s.alpha.to_dtype(DType::F16), kEps); },
               ErrorKind::DType, {op, "alpha"});
  RopeKvTarget wrong_cache = ok;
  wrong_cache.k_cache = make_tensor(random_ref(rng, {1, 1, 16, 6}), c.kv, dev);
  expect_error([&] { mm.forward_rope_kv(s.x, wrong_cache); }, ErrorKind::Shape,
               {"rope_kv_cache", "k_cache"});
  RopeKvTarget half_tables = ok;
  half_tables.tables.cos_q = ok.tables.cos_q.to_dtype(DType::F16);
  expect_error([&] { mm.forward_rope_kv(s.x, half_tables); }, ErrorKind::DType, {"rope_kv_cache"});
  // A position past the cache: OutOfRange (a GPU raises it at the next wait), nothing written.
  RopeKvTarget far = ok;
  far.pos = u32_tensor({static_cast<uint32_t>(c.max_seq)}, dev);
  expect_error(
      [&] {
        mm.forward_rope_kv(s.x, far);
        dev.synchronize();
      },
      ErrorKind::OutOfRange, {"rope_kv_cache"});
  EXPECT_TRUE(same_bits(kc, make_tensor(s.kc, c.kv, dev)));
  EXPECT_TRUE(same_bits(vc, make_tensor(s.vc, c.kv, dev)));
}

WICK_INSTANTIATE_DEVICES(QMatMulRopeKv);

class GpuQMatMulRopeKv : public GpuDeviceTest {
 protected:
  PoisonOff quiet;  // exact dispatch counts
  Rng rng;
};

TEST_P(GpuQMatMulRopeKv, IsOneDispatchLessThanTheTwoOps) {
  SCOPED_TRACE(rng.seed());
  for (bool rope : {true, false}) {
    const Device d = private_device([&](gpu::GpuOptions& o) {
      o.queue.ops_per_buffer = 1000;
      o.qmatvec_fuse_rows = 0;  // qact, then the product
      o.qmatvec_rope = rope;
    });
    Case c;
    c.b = 2;
    c.per_item = true;
    const QMatMul mm(random_weight(rng, (c.h + 2 * c.kvh) * c.d, c.k, c.type), d);
    const Inputs s = make_setup(d, rng, c);
    const Tensor kc = make_tensor(s.kc, c.kv, d), vc = make_tensor(s.vc, c.kv, d);
    d.synchronize();
    const auto before = gpu(d).stats().queue;
    mm.forward_rope_kv(s.x, {c.h, c.kvh, kc, vc, s.tables, s.pos, true, {}}, s.alpha, kEps);
    const auto after = gpu(d).stats().queue;
    EXPECT_EQ(after.dispatches - before.dispatches, rope ? 2u : 3u);
    EXPECT_EQ(after.commits, before.commits) << "nothing was waited for";
  }
}

TEST_P(GpuQMatMulRopeKv, GpuShapesAndXPathsToo) {
  // qmatvec's GPU shapes (2 and 4 rows a workgroup, subgroups or shared memory; 3 rows: the two
  // ops), x quantized by the product itself (ACT_INLINE) or staged (ACT_STAGE), and on the tensor
  // cores (MMA, where the device has 8-bit MMA: q4_1's cases of 2 x rows or more).
  SCOPED_TRACE(rng.seed());
  const QMatVecPath paths[] = {{{32, 2, 8}, true, 0, 0, "32 x 2"},
                               {{32, 2, 8}, false, 0, 0, "32 x 2, shared memory"},
                               {{64, 4, 8}, true, 0, 0, "64 x 4"},
                               {{32, 3, 8}, true, 0, 0, "32 x 3: the two ops"},
                               {{32, 2, 8}, true, 8, 0, "32 x 2, ACT_INLINE"},
                               {{64, 2, 8}, true, 0, 2, "64 x 2, ACT_STAGE"},
                               {{32, 2, 8}, true, 0, 0, "MMA, 2 warps", 2, 64},
                               {{32, 2, 8}, true, 0, 2, "MMA, ACT_STAGE, 4 warps", 2, 128}};
  for (const QMatVecPath& v : paths) {
    if (v.mma_rows > 0 && !gpu(device()).device_caps().int8_mma) continue;
    const Device d = private_device(v);
    for (int i = 0; i < 4; i++) {
      Case c = random_case(rng);
      c.type = i % 2 ? QuantType::Q4_1 : QuantType::Q4_K;
      c.k = i % 2 ? 96 : 256;
      check_case(d, rng, c, v.name);
      if (HasFatalFailure()) return;
    }
  }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuQMatMulRopeKv);

}  // namespace
}  // namespace wick::testing
