// rope_kv_cache and attention_cached (wick/attention.h) against float64 references and against
// the unfused ops they replace (rope / rope_i and slice_set; matmul, causal mask, softmax,
// matmul), on every float dtype, strided q/k/v views (the model's narrowed fused projection
// among them), short and long caches and every kernel path (one split, several splits, several
// chunks per split, head dims above the GPU's workgroup), plus every error path.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>

#include "gpu_test_util.h"
#include "harness.h"
#include "isa_cap.h"

namespace wick::testing {
namespace {

struct Dims {
  int64_t b, h, kvh, t, d, max_seq, pos;
};

std::string str(const Dims& x) {
  std::ostringstream os;
  os << "b " << x.b << " h " << x.h << " kvh " << x.kvh << " t " << x.t << " d " << x.d
     << " max_seq " << x.max_seq << " pos " << x.pos;
  return os.str();
}

// Small sizes on GPUs (lavapipe runs kernels on the build machine's cores), larger on the CPU.
Dims random_dims(Rng& rng, bool cpu) {
  Dims x{};
  x.b = rng.integer(1, 2);
  x.kvh = rng.integer(1, 3);
  x.h = x.kvh * rng.integer(1, 3);
  x.d = 2 * rng.integer(1, cpu ? 48 : 20);
  x.t = rng.integer(1, 4);
  x.max_seq = rng.integer(x.t, cpu ? 400 : 150);
  x.pos = rng.integer(0, x.max_seq - x.t);
  return x;
}

Tensor pos_tensor(int64_t p, const Device& dev) {
  return Tensor::from_vec(std::vector<uint32_t>{static_cast<uint32_t>(p)}, Shape{1}, dev);
}

// ---- inputs --------------------------------------------------------------------------------

// How q, k and v are laid out: one of the harness's variants each, or (kFused) the model's views
// of one (b, t, h + 2 kvh, d) projection output.
constexpr int kLayouts = 6;
constexpr int kFused = 5;
const char* layout_name(int l) {
  return l == kFused ? "fused" : variant_name(kAllVariants[l]);
}

struct Qkv {
  Tensor q, k, v;
};

Qkv make_qkv(const Ref& q, const Ref& k, const Ref& v, DType dt, const Device& dev, int layout) {
  if (layout != kFused) {
    const Variant var = kAllVariants[layout];
    return {make_tensor(q, dt, dev, var), make_tensor(k, dt, dev, var),
            make_tensor(v, dt, dev, var)};
  }
  const int64_t b = q.shape[0], h = q.shape[1], t = q.shape[2], d = q.shape[3];
  const int64_t kvh = k.shape[1], heads = h + 2 * kvh;
  Ref f{{b, t, heads, d}, std::vector<double>(static_cast<size_t>(b * t * heads * d))};
  auto put = [&](const Ref& r, int64_t first) {
    for_each_index(r.shape, [&](const std::vector<int64_t>& i) {
      f.v[static_cast<size_t>(f.index({i[0], i[2], first + i[1], i[3]}))] = r.at(i);
    });
  };
  put(q, 0);
  put(k, h);
  put(v, h + kvh);
  const Tensor y = make_tensor(f, dt, dev);
  return {y.narrow(2, 0, h).transpose(1, 2), y.narrow(2, h, kvh).transpose(1, 2),
          y.narrow(2, h + kvh, kvh).transpose(1, 2)};
}

struct RopeCase {
  Dims x;
  Ref q, k, v, kc, vc, cos_q, sin_q, cos_k, sin_k;
};

RopeCase random_rope_case(Rng& rng, const Dims& x, DType dt) {
  RopeCase c{x, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  c.q = round_ref(random_ref(rng, {x.b, x.h, x.t, x.d}), dt);
  c.k = round_ref(random_ref(rng, {x.b, x.kvh, x.t, x.d}), dt);
  c.v = round_ref(random_ref(rng, {x.b, x.kvh, x.t, x.d}), dt);
  c.kc = round_ref(random_ref(rng, {x.b, x.kvh, x.max_seq, x.d}), dt);
  c.vc = round_ref(random_ref(rng, {x.b, x.kvh, x.max_seq, x.d}), dt);
  const int64_t rows = x.max_seq + rng.integer(0, 2);  // tables may be longer than the cache
  for (Ref* r : {&c.cos_q, &c.sin_q, &c.cos_k, &c.sin_k})
    *r = round_ref(random_ref(rng, {rows, x.d / 2}, -1, 1), dt);
  return c;
}

// A table laid out with a stride along d/2 (a column of a wider table) every other case.
Tensor make_table(const Ref& r, DType dt, const Device& dev, bool strided) {
  return make_tensor(r, dt, dev, strided ? Variant::Transposed : Variant::Contiguous);
}

// A cache: contiguous, or contiguous from an offset.
Tensor make_cache(const Ref& r, DType dt, const Device& dev, bool offset) {
  return make_tensor(r, dt, dev, offset ? Variant::Offset : Variant::Contiguous);
}

// ---- references ----------------------------------------------------------------------------

// x (b, n, t, d) rotated at positions pos + ti by the tables' rows.
Ref rope_ref(const Ref& x, const Ref& cs, const Ref& sn, int64_t pos, bool interleaved) {
  Ref y{x.shape, std::vector<double>(x.v.size())};
  const int64_t d = x.shape[3], half = d / 2;
  for_each_index(x.shape, [&](const std::vector<int64_t>& i) {
    const int64_t e = i[3];
    const int64_t pair = interleaved ? e / 2 : e % half;
    const int64_t lo = interleaved ? 2 * pair : pair, hi = interleaved ? lo + 1 : pair + half;
    std::vector<int64_t> a = i, b = i;
    a[3] = lo;
    b[3] = hi;
    const double xa = x.at(a), xb = x.at(b);
    const double c = cs.at({pos + i[2], pair}), s = sn.at({pos + i[2], pair});
    y.v[static_cast<size_t>(x.index(i))] = e == lo ? xa * c - xb * s : xa * s + xb * c;
  });
  return y;
}

// The cache after rows pos .. pos + t - 1 got `rows` (b, kvh, t, d).
Ref with_rows(const Ref& cache, const Ref& rows, int64_t pos) {
  Ref out = cache;
  for_each_index(rows.shape, [&](const std::vector<int64_t>& i) {
    out.v[static_cast<size_t>(out.index({i[0], i[1], pos + i[2], i[3]}))] = rows.at(i);
  });
  return out;
}

struct AttentionRef {
  Ref y;
  Tol tol;
  double spread;  // the largest sum |q k| of a score: bounds |score|
};

// Causal attention in float64, with the error bound of a computation in `dt`: scores off by up
// to (d + 2) u sum|q k| (and 8 u softcap for the cap's tanh), weights by twice that, the weighted
// sum by (keys + 16) u, then the output rounding. u: the compute roundoff. softcap > 0: scores
// capped to softcap tanh(s / softcap); window > 0: the query at p sees keys p - window + 1 ..= p.
AttentionRef attention_ref(const Ref& q, const Ref& kc, const Ref& vc, int64_t pos, DType dt,
                           double softcap = 0, int64_t window = 0) {
  const int64_t b = q.shape[0], h = q.shape[1], t = q.shape[2], d = q.shape[3];
  const int64_t kvh = kc.shape[1], g = h / kvh;
  Ref y{q.shape, std::vector<double>(q.v.size())};
  double worst = 0, widest = 0;
  for (int64_t bi = 0; bi < b; bi++)
    for (int64_t hi = 0; hi < h; hi++)
      for (int64_t ti = 0; ti < t; ti++) {
        const int64_t n = pos + ti + 1, kh = hi / g;
        const int64_t lo = window > 0 ? std::max<int64_t>(0, n - window) : 0;
        std::vector<double> s(static_cast<size_t>(n), -INFINITY);
        double m = -INFINITY, spread = 0, vmax = 0;
        for (int64_t j = lo; j < n; j++) {
          double dot = 0, mag = 0;
          for (int64_t e = 0; e < d; e++) {
            dot += q.at({bi, hi, ti, e}) * kc.at({bi, kh, j, e});
            mag += std::abs(q.at({bi, hi, ti, e}) * kc.at({bi, kh, j, e}));
            vmax = std::max(vmax, std::abs(vc.at({bi, kh, j, e})));
          }
          if (softcap > 0) dot = softcap * std::tanh(dot / softcap);
          s[static_cast<size_t>(j)] = dot;
          m = std::max(m, dot);
          spread = std::max(spread, mag);
        }
        double l = 0;
        for (double& v : s) l += v = std::exp(v - m);
        for (int64_t e = 0; e < d; e++) {
          double acc = 0;
          for (int64_t j = lo; j < n; j++) acc += s[static_cast<size_t>(j)] * vc.at({bi, kh, j, e});
          y.v[static_cast<size_t>(y.index({bi, hi, ti, e}))] = acc / l;
        }
        const double u = compute_roundoff(dt);
        widest = std::max(widest, spread);
        worst = std::max(
            worst, (4 * (d + 2) * spread + 16 * softcap + static_cast<double>(n) + 16) * u * vmax);
      }
  return {y, {worst, 2 * unit_roundoff(dt)}, widest};
}

// The unfused ops the model ran before: one batched matmul per kv head over its g query heads,
// the causal mask for prompts, softmax, matmul.
Tensor unfused_attention(const Tensor& q, const Tensor& kc, const Tensor& vc, int64_t pos) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3), kvh = kc.dim(1);
  const int64_t g = h / kvh, total = pos + t;
  const Tensor keys = kc.narrow(2, 0, total), values = vc.narrow(2, 0, total);
  Tensor att = q.contiguous().reshape({b, kvh, g * t, d}).matmul(keys.t());
  if (t > 1) {
    std::vector<double> mask(static_cast<size_t>(t * total), 0.0);
    for (int64_t i = 0; i < t; i++)
      for (int64_t j = pos + i + 1; j < total; j++)
        mask[static_cast<size_t>(i * total + j)] = -INFINITY;
    const Tensor m = Tensor::from_vec(mask, {t, total}, q.device()).to_dtype(q.dtype());
    att = (att.reshape({b, kvh, g, t, total}) + m).reshape({b, kvh, g * t, total});
  }
  return att.softmax_last_dim().matmul(values).reshape({b, h, t, d});
}

struct AttentionCase {
  Dims x;
  Ref q, kc, vc;
};

// q scaled so that scores are of order one; cache rows from pos + t on are NaN: a kernel that
// reads a row it must not see turns its output NaN.
AttentionCase random_attention_case(Rng& rng, const Dims& x, DType dt) {
  AttentionCase c{x, {}, {}, {}};
  const double lim = 3.0 / std::sqrt(static_cast<double>(x.d));
  c.q = round_ref(random_ref(rng, {x.b, x.h, x.t, x.d}, -lim, lim), dt);
  c.kc = round_ref(random_ref(rng, {x.b, x.kvh, x.max_seq, x.d}, -1.5, 1.5), dt);
  c.vc = round_ref(random_ref(rng, {x.b, x.kvh, x.max_seq, x.d}), dt);
  for (Ref* r : {&c.kc, &c.vc})
    for_each_index(r->shape, [&](const std::vector<int64_t>& i) {
      if (i[2] >= x.pos + x.t) r->v[static_cast<size_t>(r->index(i))] = NAN;
    });
  return c;
}

// ---- positions and cache slots per batch item ---------------------------------------------

// b items at positions of their own in distinct cache slots of S (with slots: a random choice,
// in a random order, S >= b; without: slot i of b). one_pos: every item at one position, given
// as a one-element pos.
struct Items {
  int64_t slots = 0;
  std::vector<int64_t> slot, pos;
  bool with_slots = false, one_pos = false;
};

Items random_items(Rng& rng, int64_t b, int64_t max_seq, int64_t t, bool with_slots, bool one_pos) {
  Items it;
  it.with_slots = with_slots;
  it.one_pos = one_pos;
  it.slots = with_slots ? b + rng.integer(0, 2) : b;
  std::vector<int64_t> all(static_cast<size_t>(it.slots));
  for (size_t i = 0; i < all.size(); i++) all[i] = static_cast<int64_t>(i);
  if (with_slots)
    for (size_t i = all.size(); i > 1; i--)
      std::swap(all[i - 1], all[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(i) - 1))]);
  const int64_t shared = rng.integer(0, max_seq - t);
  for (int64_t i = 0; i < b; i++) {
    it.slot.push_back(all[static_cast<size_t>(i)]);
    it.pos.push_back(one_pos ? shared : rng.integer(0, max_seq - t));
  }
  return it;
}

Tensor u32_tensor(const std::vector<int64_t>& v, const Device& dev) {
  std::vector<uint32_t> u(v.begin(), v.end());
  const auto n = static_cast<int64_t>(u.size());
  return Tensor::from_vec(u, Shape{n}, dev);
}
Tensor pos_of(const Items& it, const Device& dev) {
  return it.one_pos ? pos_tensor(it.pos[0], dev) : u32_tensor(it.pos, dev);
}
Tensor slots_of(const Items& it, const Device& dev) {
  return it.with_slots ? u32_tensor(it.slot, dev) : Tensor();
}
// q (b, h, t, d) and caches (slots, kvh, max_seq, d) for items `it`, rounded to dt and kv, with
// the cache rows no item's query reads (past its keys, unused slots) NaN.
struct ItemCase {
  Ref q, kc, vc;
};
ItemCase random_item_case(Rng& rng, const Dims& x, const Items& it, DType dt, DType kv) {
  const double lim = 3.0 / std::sqrt(static_cast<double>(x.d));
  ItemCase c{round_ref(random_ref(rng, {x.b, x.h, x.t, x.d}, -lim, lim), dt),
             round_ref(random_ref(rng, {it.slots, x.kvh, x.max_seq, x.d}, -1.5, 1.5), kv),
             round_ref(random_ref(rng, {it.slots, x.kvh, x.max_seq, x.d}), kv)};
  for (Ref* r : {&c.kc, &c.vc})
    for_each_index(r->shape, [&](const std::vector<int64_t>& i) {
      const auto at = std::find(it.slot.begin(), it.slot.end(), i[0]);
      const bool used =
          at != it.slot.end() && i[2] < it.pos[static_cast<size_t>(at - it.slot.begin())] + x.t;
      if (!used) r->v[static_cast<size_t>(r->index(i))] = NAN;
    });
  return c;
}

std::string str(const Items& it) {
  std::ostringstream os;
  os << (it.with_slots ? "slots" : "no slots") << " of " << it.slots
     << (it.one_pos ? ", one pos" : "");
  for (size_t i = 0; i < it.slot.size(); i++) os << " [" << it.slot[i] << " @ " << it.pos[i] << "]";
  return os.str();
}

// Row block i (along dim 0) of a reference.
Ref block(const Ref& r, int64_t i) {
  Shape s = r.shape;
  s[0] = 1;
  const int64_t n = s.numel();
  return {s, std::vector<double>(r.v.begin() + i * n, r.v.begin() + (i + 1) * n)};
}

// ---- rope_kv_cache -------------------------------------------------------------------------

class RopeKvCache : public DeviceTest {};

TEST_P(RopeKvCache, EveryDTypeAndLayoutAgainstFloat64) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  int n = 0;
  for (DType dt : kFloatDTypes)
    for (int layout = 0; layout < kLayouts; layout++)
      for (bool interleaved : {false, true}) {
        const Dims x = random_dims(rng, dev.is_cpu());
        SCOPED_TRACE(::testing::Message() << dt << " " << layout_name(layout)
                                          << (interleaved ? " interleaved " : " ") << str(x));
        const RopeCase c = random_rope_case(rng, x, dt);
        const Qkv in = make_qkv(c.q, c.k, c.v, dt, dev, layout);
        const Tensor kc = make_cache(c.kc, dt, dev, n % 2), vc = make_cache(c.vc, dt, dev, n % 3);
        const RotaryTables tab{make_table(c.cos_q, dt, dev, n % 2), make_table(c.sin_q, dt, dev, 0),
                               make_table(c.cos_k, dt, dev, 0),
                               make_table(c.sin_k, dt, dev, n % 2)};
        n++;
        const Tensor qo =
            rope_kv_cache(in.q, in.k, in.v, kc, vc, tab, pos_tensor(x.pos, dev), interleaved);
        EXPECT_EQ(qo.dtype(), dt);
        EXPECT_TRUE(qo.is_contiguous());
        const Tol tol{8 * compute_roundoff(dt), unit_roundoff(dt)};
        WICK_EXPECT_CLOSE(qo, rope_ref(c.q, c.cos_q, c.sin_q, x.pos, interleaved), tol);
        // The new rows hold rotated k and v as given; every other row keeps its value exactly.
        WICK_EXPECT_CLOSE(
            kc, with_rows(c.kc, rope_ref(c.k, c.cos_k, c.sin_k, x.pos, interleaved), x.pos), tol);
        WICK_EXPECT_CLOSE(vc, with_rows(c.vc, c.v, x.pos), Tol{0, 0});
        const Ref got_k = to_ref(kc);
        for_each_index(c.kc.shape, [&](const std::vector<int64_t>& i) {
          if (i[2] < x.pos || i[2] >= x.pos + x.t) {
            const double g = got_k.at(i), w = c.kc.at(i);
            if (g != w) ADD_FAILURE() << "k_cache row " << i[2] << " changed: " << g << " != " << w;
          }
        });
      }
}

TEST_P(RopeKvCache, BitIdenticalToRopeAndSliceSet) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  int n = 0;
  for (DType dt : kFloatDTypes)
    for (int layout : {0, 1, 4, kFused})
      for (bool interleaved : {false, true}) {
        Dims x = random_dims(rng, dev.is_cpu());
        if (n++ % 4 == 0) x = {1, 9, 3, 1, 64, 40, 17};  // SmolLM2-135M's decode step
        SCOPED_TRACE(::testing::Message() << dt << " " << layout_name(layout)
                                          << (interleaved ? " interleaved " : " ") << str(x));
        const RopeCase c = random_rope_case(rng, x, dt);
        const Qkv in = make_qkv(c.q, c.k, c.v, dt, dev, layout);
        const Tensor kc = make_cache(c.kc, dt, dev, false), vc = make_cache(c.vc, dt, dev, true);
        const Tensor kc2 = kc.copy(), vc2 = vc.copy();
        const RotaryTables tab{
            make_table(c.cos_q, dt, dev, false), make_table(c.sin_q, dt, dev, n % 2),
            make_table(c.cos_k, dt, dev, false), make_table(c.sin_k, dt, dev, false)};
        const Tensor qo =
            rope_kv_cache(in.q, in.k, in.v, kc, vc, tab, pos_tensor(x.pos, dev), interleaved);
        auto rot = [&](const Tensor& y, const Tensor& cs, const Tensor& sn) {
          const Tensor ct = cs.narrow(0, x.pos, x.t), st = sn.narrow(0, x.pos, x.t);
          return interleaved ? y.rope_i(ct, st) : y.rope(ct, st);
        };
        kc2.slice_set(rot(in.k, tab.cos_k, tab.sin_k), 2, x.pos);
        vc2.slice_set(in.v, 2, x.pos);
        EXPECT_TRUE(same_bits(qo, rot(in.q, tab.cos_q, tab.sin_q)));
        EXPECT_TRUE(same_bits(kc, kc2));
        EXPECT_TRUE(same_bits(vc, vc2));
      }
}

// f16 / bf16 caches under f32 q, k and v (the model's default cache): the new rows hold the
// rotated k and v rounded once to the cache's dtype; every other row keeps its value.
TEST_P(RopeKvCache, CompactCachesAgainstFloat64) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const DType dt = DType::F32;
  int n = 0;
  for (DType kv : {DType::F16, DType::BF16})
    for (int layout : {0, 1, 3, kFused})
      for (bool interleaved : {false, true}) {
        Dims x = random_dims(rng, dev.is_cpu());
        if (n % 4 == 0) x = {1, 9, 3, 1, 64, 40, 17};  // SmolLM2-135M's decode step
        SCOPED_TRACE(::testing::Message() << kv << " cache " << layout_name(layout)
                                          << (interleaved ? " interleaved " : " ") << str(x));
        RopeCase c = random_rope_case(rng, x, dt);
        c.kc = round_ref(c.kc, kv);
        c.vc = round_ref(c.vc, kv);
        const Qkv in = make_qkv(c.q, c.k, c.v, dt, dev, layout);
        const Tensor kc = make_cache(c.kc, kv, dev, n % 2), vc = make_cache(c.vc, kv, dev, n % 3);
        const RotaryTables tab{make_table(c.cos_q, dt, dev, n % 2), make_table(c.sin_q, dt, dev, 0),
                               make_table(c.cos_k, dt, dev, 0),
                               make_table(c.sin_k, dt, dev, n % 2)};
        n++;
        const Tensor qo =
            rope_kv_cache(in.q, in.k, in.v, kc, vc, tab, pos_tensor(x.pos, dev), interleaved);
        EXPECT_EQ(qo.dtype(), dt);
        EXPECT_EQ(kc.dtype(), kv);
        const Tol tol{8 * compute_roundoff(dt), unit_roundoff(dt)};
        WICK_EXPECT_CLOSE(qo, rope_ref(c.q, c.cos_q, c.sin_q, x.pos, interleaved), tol);
        // k: the f32 rotation's error, then one rounding to the cache's dtype.
        const Tol ktol{8 * compute_roundoff(dt), unit_roundoff(kv)};
        WICK_EXPECT_CLOSE(
            kc, with_rows(c.kc, rope_ref(c.k, c.cos_k, c.sin_k, x.pos, interleaved), x.pos), ktol);
        WICK_EXPECT_CLOSE(vc, with_rows(c.vc, round_ref(c.v, kv), x.pos), Tol{0, 0});
        const Ref got_k = to_ref(kc);
        for_each_index(c.kc.shape, [&](const std::vector<int64_t>& i) {
          if (i[2] < x.pos || i[2] >= x.pos + x.t) {
            const double g = got_k.at(i), w = c.kc.at(i);
            if (g != w) ADD_FAILURE() << "k_cache row " << i[2] << " changed: " << g << " != " << w;
          }
        });
      }
}

TEST_P(RopeKvCache, PositionIsReadFromTheDeviceTensorAtRunTime) {
  // One pos tensor, rewritten between calls (as a replayed decode step would be): each call
  // writes at the position pos holds when it runs.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const DType dt = DType::F32;
  const Dims x{1, 4, 2, 1, 8, 12, 0};
  const RopeCase c = random_rope_case(rng, x, dt);
  const Tensor kc = make_cache(c.kc, dt, dev, false), vc = make_cache(c.vc, dt, dev, false);
  const RotaryTables tab{make_tensor(c.cos_q, dt, dev), make_tensor(c.sin_q, dt, dev),
                         make_tensor(c.cos_k, dt, dev), make_tensor(c.sin_k, dt, dev)};
  const Tensor pos = pos_tensor(0, dev);
  Ref want_k = c.kc, want_v = c.vc;
  std::vector<Tensor> outs;
  std::vector<Ref> want_q;
  for (int64_t p : {3, 7, 0, 11}) {
    pos.const_set(static_cast<double>(p));
    const Ref q = round_ref(random_ref(rng, {1, 4, 1, 8}), dt);
    const Ref k = round_ref(random_ref(rng, {1, 2, 1, 8}), dt);
    const Ref v = round_ref(random_ref(rng, {1, 2, 1, 8}), dt);
    outs.push_back(rope_kv_cache(make_tensor(q, dt, dev), make_tensor(k, dt, dev),
                                 make_tensor(v, dt, dev), kc, vc, tab, pos, true));
    want_q.push_back(rope_ref(q, c.cos_q, c.sin_q, p, true));
    want_k = with_rows(want_k, rope_ref(k, c.cos_k, c.sin_k, p, true), p);
    want_v = with_rows(want_v, v, p);
  }
  const Tol tol{8 * compute_roundoff(dt), unit_roundoff(dt)};
  for (size_t i = 0; i < outs.size(); i++) WICK_EXPECT_CLOSE(outs[i], want_q[i], tol);
  WICK_EXPECT_CLOSE(kc, want_k, tol);
  WICK_EXPECT_CLOSE(vc, want_v, Tol{0, 0});
}

TEST_P(RopeKvCache, InputsSharingTheCacheStorageAreReadBeforeAnyWrite) {
  // k and v read rows 0 .. t - 1 of the caches they are written into at rows 1 .. t.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const DType dt = DType::F32;
  const Dims x{1, 2, 1, 3, 6, 8, 1};
  const RopeCase c = random_rope_case(rng, x, dt);
  const Tensor kc = make_cache(c.kc, dt, dev, false), vc = make_cache(c.vc, dt, dev, false);
  const Tensor kc2 = kc.copy(), vc2 = vc.copy();
  const RotaryTables tab{make_tensor(c.cos_q, dt, dev), make_tensor(c.sin_q, dt, dev),
                         make_tensor(c.cos_k, dt, dev), make_tensor(c.sin_k, dt, dev)};
  const Tensor q = make_tensor(c.q, dt, dev);
  rope_kv_cache(q, kc.narrow(2, 0, 3), vc.narrow(2, 0, 3), kc, vc, tab, pos_tensor(1, dev), true);
  const Tensor ct = tab.cos_k.narrow(0, 1, 3), st = tab.sin_k.narrow(0, 1, 3);
  kc2.slice_set(kc2.narrow(2, 0, 3).rope_i(ct, st), 2, 1);
  vc2.slice_set(vc2.narrow(2, 0, 3), 2, 1);
  EXPECT_TRUE(same_bits(kc, kc2));
  EXPECT_TRUE(same_bits(vc, vc2));
}

// pos + t > max_seq: the CPU throws at the op; a GPU at the next read-back, having written
// nothing (the caches keep every value). The device stays usable.
TEST_P(RopeKvCache, PositionBeyondTheCacheIsOutOfRangeAndWritesNothing) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const DType dt = DType::F32;
  const Dims x{1, 2, 1, 3, 4, 10, 0};
  const RopeCase c = random_rope_case(rng, x, dt);
  const Tensor kc = make_cache(c.kc, dt, dev, false), vc = make_cache(c.vc, dt, dev, false);
  const RotaryTables tab{make_tensor(c.cos_q, dt, dev), make_tensor(c.sin_q, dt, dev),
                         make_tensor(c.cos_k, dt, dev), make_tensor(c.sin_k, dt, dev)};
  const Tensor q = make_tensor(c.q, dt, dev), k = make_tensor(c.k, dt, dev),
               v = make_tensor(c.v, dt, dev);
  for (int64_t p : {int64_t{8}, int64_t{10}, int64_t{11}, int64_t{4000000000}}) {
    SCOPED_TRACE(p);
    Tensor out;
    auto call = [&] { out = rope_kv_cache(q, k, v, kc, vc, tab, pos_tensor(p, dev), false); };
    if (dev.is_cpu()) {
      expect_error(call, ErrorKind::OutOfRange,
                   {"rope_kv_cache", "position " + std::to_string(p), "3 tokens", "10 positions"});
    } else {
      EXPECT_NO_THROW(call());  // found on the device: the op does not wait
      expect_error([&] { out.to_vec<float>(); }, ErrorKind::OutOfRange,
                   {"rope_kv_cache", "position " + std::to_string(p), "3 tokens", "10 positions"});
    }
    EXPECT_TRUE(close(kc, c.kc, Tol{0, 0}));
    EXPECT_TRUE(close(vc, c.vc, Tol{0, 0}));
  }
  // Still usable: a good call works and raises nothing.
  rope_kv_cache(q, k, v, kc, vc, tab, pos_tensor(7, dev), false);
  EXPECT_NO_THROW(dev.synchronize());
  WICK_EXPECT_CLOSE(vc, with_rows(c.vc, c.v, 7), Tol{0, 0});
}

// Items at positions of their own, in cache slots: each item's q, k and v rows, bit for bit, as
// the one-item op on its slot of the caches at its position; other rows and slots unchanged.
TEST_P(RopeKvCache, PositionsAndSlotsPerItemAsEachItemAlone) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  int n = 0;
  struct Pair {
    DType q, kv;
  };
  std::vector<Pair> pairs = {{DType::F32, DType::F16}, {DType::F32, DType::BF16}};
  for (DType dt : kFloatDTypes) pairs.push_back({dt, dt});
  for (const Pair& p : pairs)
    for (bool with_slots : {true, false})
      for (bool one_pos : {false, true}) {
        const DType dt = p.q;
        Dims x = random_dims(rng, dev.is_cpu());
        x.b = rng.integer(2, 4);
        if (n % 4 == 0) x = {3, 9, 3, 1, 64, 40, 0};  // SmolLM2-135M's decode step, 3 sequences
        const Items it = random_items(rng, x.b, x.max_seq, x.t, with_slots, one_pos);
        const bool interleaved = n % 2;
        SCOPED_TRACE(::testing::Message()
                     << p.q << " q " << p.kv << " cache " << str(x) << " " << str(it));
        RopeCase c = random_rope_case(rng, x, dt);
        const Ref kc_ref = round_ref(random_ref(rng, {it.slots, x.kvh, x.max_seq, x.d}), p.kv);
        const Ref vc_ref = round_ref(random_ref(rng, {it.slots, x.kvh, x.max_seq, x.d}), p.kv);
        const Qkv in = make_qkv(c.q, c.k, c.v, dt, dev, n % kLayouts);
        const Tensor kc = make_cache(kc_ref, p.kv, dev, n % 2),
                     vc = make_cache(vc_ref, p.kv, dev, 0);
        const Tensor kc2 = kc.copy(), vc2 = vc.copy();
        const RotaryTables tab{make_table(c.cos_q, dt, dev, n % 3 == 1),
                               make_table(c.sin_q, dt, dev, 0), make_table(c.cos_k, dt, dev, 0),
                               make_table(c.sin_k, dt, dev, 0)};
        n++;
        const Tensor qo = rope_kv_cache(in.q, in.k, in.v, kc, vc, tab, pos_of(it, dev), interleaved,
                                        slots_of(it, dev));
        std::vector<Tensor> alone;
        for (int64_t i = 0; i < x.b; i++) {
          const int64_t slot = it.slot[static_cast<size_t>(i)];
          alone.push_back(
              rope_kv_cache(in.q.narrow(0, i, 1), in.k.narrow(0, i, 1), in.v.narrow(0, i, 1),
                            kc2.narrow(0, slot, 1), vc2.narrow(0, slot, 1), tab,
                            pos_tensor(it.pos[static_cast<size_t>(i)], dev), interleaved));
        }
        EXPECT_TRUE(same_bits(qo, Tensor::cat(alone, 0)));
        EXPECT_TRUE(same_bits(kc, kc2));
        EXPECT_TRUE(same_bits(vc, vc2));
        // And the one-item op's values, against float64: item 0's q.
        const Tol tol{8 * compute_roundoff(dt), unit_roundoff(dt)};
        WICK_EXPECT_CLOSE(qo.narrow(0, 0, 1),
                          rope_ref(block(c.q, 0), c.cos_q, c.sin_q, it.pos[0], interleaved), tol);
      }
}

// A slot beyond the caches: the CPU throws at the op; a GPU at the next read-back, having
// written nothing for that item. Two items writing one slot's row: the CPU refuses them; one slot
// at two positions (a prompt's tokens as items) takes both rows.
TEST_P(RopeKvCache, SlotBeyondTheCachesIsOutOfRange) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const DType dt = DType::F32;
  const Dims x{2, 2, 1, 1, 4, 10, 0};
  const RopeCase c = random_rope_case(rng, x, dt);
  const Ref kc_ref = round_ref(random_ref(rng, {3, 1, 10, 4}), dt);
  const Ref vc_ref = round_ref(random_ref(rng, {3, 1, 10, 4}), dt);
  const Tensor kc = make_tensor(kc_ref, dt, dev), vc = make_tensor(vc_ref, dt, dev);
  const RotaryTables tab{make_tensor(c.cos_q, dt, dev), make_tensor(c.sin_q, dt, dev),
                         make_tensor(c.cos_k, dt, dev), make_tensor(c.sin_k, dt, dev)};
  const Tensor q = make_tensor(c.q, dt, dev), k = make_tensor(c.k, dt, dev),
               v = make_tensor(c.v, dt, dev);
  const Tensor pos = u32_tensor({4, 5}, dev);
  for (int64_t bad : {int64_t{3}, int64_t{4000000000}}) {
    SCOPED_TRACE(bad);
    Tensor out;
    auto call = [&] {
      out = rope_kv_cache(q, k, v, kc, vc, tab, pos, false, u32_tensor({bad, bad}, dev));
    };
    const std::vector<std::string> needles = {"rope_kv_cache", "cache slot " + std::to_string(bad),
                                              "3 slots"};
    if (dev.is_cpu()) {
      expect_error(call, ErrorKind::OutOfRange, needles);
    } else {
      EXPECT_NO_THROW(call());
      expect_error([&] { out.to_vec<float>(); }, ErrorKind::OutOfRange, needles);
    }
    EXPECT_TRUE(close(kc, kc_ref, Tol{0, 0}));
    EXPECT_TRUE(close(vc, vc_ref, Tol{0, 0}));
  }
  if (dev.is_cpu())
    expect_error(
        [&] {
          rope_kv_cache(q, k, v, kc, vc, tab, u32_tensor({4, 4}, dev), false,
                        u32_tensor({1, 1}, dev));
        },
        ErrorKind::Shape, {"rope_kv_cache", "both write cache slot 1 at position 4"});
  // Still usable: items in slots 2 and 0.
  rope_kv_cache(q, k, v, kc, vc, tab, pos, false, u32_tensor({2, 0}, dev));
  EXPECT_NO_THROW(dev.synchronize());
  const Ref vb = block(c.v, 1);
  Ref want_v = vc_ref;
  for (int64_t e = 0; e < 4; e++) {
    want_v.v[static_cast<size_t>(want_v.index({2, 0, 4, e}))] = c.v.at({0, 0, 0, e});
    want_v.v[static_cast<size_t>(want_v.index({0, 0, 5, e}))] = vb.at({0, 0, 0, e});
  }
  WICK_EXPECT_CLOSE(vc, want_v, Tol{0, 0});
  rope_kv_cache(q, k, v, kc, vc, tab, pos, false, u32_tensor({1, 1}, dev));  // positions 4, 5
  for (int64_t e = 0; e < 4; e++) {
    want_v.v[static_cast<size_t>(want_v.index({1, 0, 4, e}))] = c.v.at({0, 0, 0, e});
    want_v.v[static_cast<size_t>(want_v.index({1, 0, 5, e}))] = vb.at({0, 0, 0, e});
  }
  WICK_EXPECT_CLOSE(vc, want_v, Tol{0, 0});
}

TEST_P(RopeKvCache, Errors) {
  const Device dev = device();
  const DType f = DType::F32;
  auto z = [&](const Shape& s, DType dt = DType::F32) { return Tensor::zeros(s, dt, dev); };
  const Tensor q = z({1, 4, 2, 6}), k = z({1, 2, 2, 6}), v = z({1, 2, 2, 6});
  const Tensor kc = z({1, 2, 8, 6}), vc = z({1, 2, 8, 6}), pos = pos_tensor(0, dev);
  const RotaryTables tab{z({8, 3}), z({8, 3}), z({9, 3}), z({8, 3})};
  auto call = [&](const Tensor& q_, const Tensor& k_, const Tensor& v_, const Tensor& kc_,
                  const Tensor& vc_, const RotaryTables& tab_, const Tensor& pos_) {
    return [=] { rope_kv_cache(q_, k_, v_, kc_, vc_, tab_, pos_, true); };
  };
  const std::string op = "rope_kv_cache";
  EXPECT_NO_THROW(call(q, k, v, kc, vc, tab, pos)());
  // dtypes
  expect_error(call(z({1, 4, 2, 6}, DType::U32), k, v, kc, vc, tab, pos), ErrorKind::DType,
               {op, "float"});
  expect_error(call(q, z({1, 2, 2, 6}, DType::F16), v, kc, vc, tab, pos), ErrorKind::DType,
               {op, "f16"});
  expect_error(call(q, k, v, z({1, 2, 8, 6}, DType::BF16), vc, tab, pos), ErrorKind::DType,
               {op, "bf16", "share one dtype"});
  EXPECT_NO_THROW(
      call(q, k, v, z({1, 2, 8, 6}, DType::F16), z({1, 2, 8, 6}, DType::F16), tab, pos)());
  expect_error(call(q, k, v, z({1, 2, 8, 6}, DType::F64), z({1, 2, 8, 6}, DType::F64), tab, pos),
               ErrorKind::DType, {op, "f64 under f32"});
  expect_error(call(q, k, v, kc, vc, {z({8, 3}), z({8, 3}, DType::F64), z({8, 3}), z({8, 3})}, pos),
               ErrorKind::DType, {op, "f64"});
  expect_error(call(q, k, v, kc, vc, tab, Tensor::zeros({1}, DType::I64, dev)), ErrorKind::DType,
               {op, "pos", "u32"});
  expect_error(call(q, k, v, kc, vc, tab, Tensor::zeros({2}, DType::U32, dev)), ErrorKind::Shape,
               {op, "pos", "1 or b = 1"});
  // shapes
  expect_error(call(z({4, 2, 6}), k, v, kc, vc, tab, pos), ErrorKind::Shape, {op, "q must be"});
  expect_error(call(z({1, 4, 2, 5}), z({1, 2, 2, 5}), z({1, 2, 2, 5}), z({1, 2, 8, 5}),
                    z({1, 2, 8, 5}), tab, pos),
               ErrorKind::Shape, {op, "even"});
  expect_error(call(q, z({2, 2, 2, 6}), v, kc, vc, tab, pos), ErrorKind::Shape, {op, "k must be"});
  expect_error(call(q, z({1, 2, 3, 6}), v, kc, vc, tab, pos), ErrorKind::Shape, {op, "k must be"});
  expect_error(call(q, z({1, 2, 2, 4}), v, kc, vc, tab, pos), ErrorKind::Shape, {op, "k must be"});
  expect_error(call(q, k, z({1, 1, 2, 6}), kc, vc, tab, pos), ErrorKind::Shape, {op, "v "});
  expect_error(
      call(q, z({1, 3, 2, 6}), z({1, 3, 2, 6}), z({1, 3, 8, 6}), z({1, 3, 8, 6}), tab, pos),
      ErrorKind::Shape, {op, "multiple of the kv heads 3"});
  expect_error(call(z({1, 0, 2, 6}), k, v, kc, vc, tab, pos), ErrorKind::Shape,
               {op, "positive multiple"});
  expect_error(call(q, k, v, z({1, 3, 8, 6}), vc, tab, pos), ErrorKind::Shape, {op, "k_cache"});
  expect_error(call(q, k, v, kc, z({1, 2, 8, 4}), tab, pos), ErrorKind::Shape, {op, "v_cache"});
  expect_error(call(q, k, v, kc, z({1, 2, 9, 6}), tab, pos), ErrorKind::Shape, {op, "differ"});
  expect_error(call(q, k, v, z({1, 2, 6, 8}).transpose(2, 3), vc, tab, pos), ErrorKind::Shape,
               {op, "contiguous"});
  expect_error(call(q, k, v, kc, kc, tab, pos), ErrorKind::Shape, {op, "overlap"});
  const Tensor both = z({2, 1, 2, 8, 6});  // k and v caches side by side in one storage: fine
  EXPECT_NO_THROW(call(q, k, v, both.get(0), both.get(1), tab, pos)());
  expect_error(call(q, k, v, kc, vc, {z({8, 3}), z({7, 3}), z({8, 3}), z({8, 3})}, pos),
               ErrorKind::Shape, {op, "sin_q", "max_seq 8"});
  expect_error(call(q, k, v, kc, vc, {z({8, 3}), z({8, 3}), z({8, 2}), z({8, 3})}, pos),
               ErrorKind::Shape, {op, "cos_k"});
  expect_error(call(q, k, v, kc, vc, {z({8, 3}), z({8, 3}), z({8, 3}), z({24})}, pos),
               ErrorKind::Shape, {op, "sin_k"});
  expect_error(call(z({1, 4, 9, 6}), z({1, 2, 9, 6}), z({1, 2, 9, 6}), kc, vc, tab, pos),
               ErrorKind::OutOfRange, {op, "9 tokens", "8 positions"});
  // devices
  if (!dev.is_cpu()) {
    const Device cpu = Device::cpu();
    expect_error(call(q, k, v, kc, vc, tab, pos_tensor(0, cpu)), ErrorKind::Device, {op});
    expect_error(call(q, Tensor::zeros({1, 2, 2, 6}, f, cpu), v, kc, vc, tab, pos),
                 ErrorKind::Device, {op});
    expect_error(call(q, k, v, kc, vc,
                      {z({8, 3}), z({8, 3}), z({8, 3}), Tensor::zeros({8, 3}, f, cpu)}, pos),
                 ErrorKind::Device, {op});
  }
  // Nothing to do: no tokens.
  EXPECT_NO_THROW(
      call(z({1, 4, 0, 6}), z({1, 2, 0, 6}), z({1, 2, 0, 6}), kc, vc, tab, pos_tensor(100, dev))());
}

WICK_INSTANTIATE_DEVICES(RopeKvCache);

// ---- attention_cached ----------------------------------------------------------------------

class AttentionCached : public DeviceTest {};

void expect_attention(const Device& dev, const AttentionCase& c, DType dt, Variant qv,
                      bool cache_offset) {
  const Tensor q = make_tensor(c.q, dt, dev, qv);
  const Tensor kc = make_cache(c.kc, dt, dev, cache_offset), vc = make_cache(c.vc, dt, dev, false);
  const Tensor y = attention_cached(q, kc, vc, pos_tensor(c.x.pos, dev));
  EXPECT_EQ(y.dtype(), dt);
  EXPECT_TRUE(y.is_contiguous());
  const AttentionRef want = attention_ref(c.q, c.kc, c.vc, c.x.pos, dt);
  WICK_EXPECT_CLOSE(y, want.y, want.tol);
}

TEST_P(AttentionCached, EveryDTypeAndLayoutAgainstFloat64) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  int n = 0;
  for (DType dt : kFloatDTypes)
    for (Variant qv : kAllVariants) {
      const Dims x = random_dims(rng, dev.is_cpu());
      SCOPED_TRACE(::testing::Message() << dt << " " << variant_name(qv) << " " << str(x));
      expect_attention(dev, random_attention_case(rng, x, dt), dt, qv, n++ % 2);
    }
}

// Shapes that take each path of the GPU kernels (at 128 keys per chunk, lavapipe's
// attention_block; GpuAttentionBlocks below tries every size; about 256 workgroups):
// several splits and the combine; one split of several chunks (its online softmax rescaling);
// several splits of several chunks; head dims above the workgroup and above the accumulator's
// registers; no GQA. On the CPU also the long caches of a real decode.
TEST_P(AttentionCached, EveryKernelPathAndLongCaches) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  std::vector<Dims> cases = {
      {1, 9, 3, 1, 64, 300, 290},   // decode: 3 splits, combined
      {1, 8, 2, 32, 16, 300, 200},  // 256 rows: 1 split of 3 chunks
      {1, 5, 1, 30, 8, 600, 500},   // 150 rows: 2 splits of 3 chunks
      {1, 2, 2, 2, 160, 200, 100},  // d > 128
      {1, 2, 1, 1, 520, 140, 135},  // d > 4 x 128: the accumulator in the scratch slot
      {2, 3, 3, 3, 2, 130, 127},    // tiny d, the last rows of the cache
      {1, 4, 2, 1, 128, 300, 250},  // the vector form's 16 and 32 lanes a row (f16, f32)
      {1, 2, 1, 3, 256, 140, 130},  // 32 lanes of f16, 64 of f32 (too many: the scalar form)
  };
  if (dev.is_cpu()) {
    cases.push_back({1, 9, 3, 1, 64, 2048, 1500});
    cases.push_back({1, 9, 3, 4, 64, 1200, 1196});
    cases.push_back({1, 4, 1, 2, 128, 1100, 1000});
  }
  int n = 0;
  for (const Dims& x : cases)
    for (DType dt : kFloatDTypes) {
      if (x.max_seq > 300 && (dt == DType::F16 || dt == DType::F64) && x.t > 2) continue;
      SCOPED_TRACE(::testing::Message() << dt << " " << str(x));
      expect_attention(dev, random_attention_case(rng, x, dt), dt,
                       n % 3 == 0 ? Variant::Contiguous : kAllVariants[n % 5], n % 2);
      n++;
    }
}

// f32 q over f16 / bf16 caches, read as stored: random shapes (GQA among them) and the shapes of
// every GPU kernel path, against float64 on the caches' rounded values.
TEST_P(AttentionCached, CompactCachesAgainstFloat64) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const DType dt = DType::F32;
  std::vector<Dims> cases = {
      {1, 9, 3, 1, 64, 300, 290},   // decode: 3 splits, combined
      {1, 8, 2, 32, 16, 300, 200},  // 1 split of 3 chunks
      {1, 2, 2, 2, 160, 200, 100},  // d > 128
      {1, 2, 1, 1, 520, 140, 135},  // the accumulator in the scratch slot
  };
  for (int i = 0; i < 4; i++) cases.push_back(random_dims(rng, dev.is_cpu()));
  if (dev.is_cpu()) cases.push_back({1, 9, 3, 1, 64, 2048, 1500});
  int n = 0;
  for (DType kv : {DType::F16, DType::BF16})
    for (const Dims& x : cases) {
      SCOPED_TRACE(::testing::Message() << kv << " cache " << str(x));
      AttentionCase c = random_attention_case(rng, x, dt);
      c.kc = round_ref(c.kc, kv);
      c.vc = round_ref(c.vc, kv);
      const Tensor q = make_tensor(c.q, dt, dev, kAllVariants[n % 5]);
      const Tensor kc = make_cache(c.kc, kv, dev, n % 2), vc = make_cache(c.vc, kv, dev, n % 3);
      n++;
      const Tensor y = attention_cached(q, kc, vc, pos_tensor(x.pos, dev));
      EXPECT_EQ(y.dtype(), dt);
      const AttentionRef want = attention_ref(c.q, c.kc, c.vc, x.pos, dt);
      WICK_EXPECT_CLOSE(y, want.y, want.tol);
    }
}

TEST_P(AttentionCached, MatchesTheUnfusedComposition) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : kFloatDTypes)
    for (int rep = 0; rep < 3; rep++) {
      Dims x = random_dims(rng, dev.is_cpu());
      if (rep == 0) x = {1, 9, 3, 1, 64, 200, 150};
      SCOPED_TRACE(::testing::Message() << dt << " " << str(x));
      const AttentionCase c = random_attention_case(rng, x, dt);
      const Tensor q = make_tensor(c.q, dt, dev, Variant::Transposed);
      const Tensor kc = make_cache(c.kc, dt, dev, false), vc = make_cache(c.vc, dt, dev, true);
      const Tensor fused = attention_cached(q, kc, vc, pos_tensor(x.pos, dev));
      const Tensor unfused = unfused_attention(q, kc, vc, x.pos);
      // The unfused ops round the scores (|s| <= spread) and the weights to dt: a relative error
      // of the weights up to (spread + 2) u, on values up to 2; plus the fused op's error.
      const AttentionRef want = attention_ref(c.q, c.kc, c.vc, x.pos, dt);
      const double uo = unit_roundoff(dt);
      const Tol tol{want.tol.atol * 2 + 8 * (want.spread + 2) * uo, 8 * uo};
      WICK_EXPECT_CLOSE(fused, to_ref(unfused), tol);
    }
}

TEST_P(AttentionCached, PositionIsReadFromTheDeviceTensorAtRunTime) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const DType dt = DType::F32;
  const Dims x{1, 4, 2, 2, 16, 180, 170};
  AttentionCase c = random_attention_case(rng, x, dt);
  const Tensor q = make_tensor(c.q, dt, dev);
  const Tensor kc = make_cache(c.kc, dt, dev, false), vc = make_cache(c.vc, dt, dev, false);
  const Tensor pos = pos_tensor(0, dev);
  std::vector<Tensor> outs;
  const std::vector<int64_t> ps = {5, 170, 0, 131};
  for (int64_t p : ps) {
    pos.const_set(static_cast<double>(p));
    outs.push_back(attention_cached(q, kc, vc, pos));
  }
  for (size_t i = 0; i < ps.size(); i++) {
    const AttentionRef want = attention_ref(c.q, c.kc, c.vc, ps[i], dt);
    WICK_EXPECT_CLOSE(outs[i], want.y, want.tol);
  }
}

TEST_P(AttentionCached, PositionBeyondTheCacheIsOutOfRange) {
  const Device dev = device();
  const Tensor q = Tensor::ones({1, 2, 3, 4}, DType::F32, dev);
  const Tensor kc = Tensor::ones({1, 1, 10, 4}, DType::F32, dev), vc = kc.copy();
  for (int64_t p : {int64_t{8}, int64_t{10}, int64_t{4000000000}}) {
    SCOPED_TRACE(p);
    Tensor out;
    auto call = [&] { out = attention_cached(q, kc, vc, pos_tensor(p, dev)); };
    const std::vector<std::string> needles = {"attention_cached", "position " + std::to_string(p),
                                              "3 tokens", "10 positions"};
    if (dev.is_cpu()) {
      expect_error(call, ErrorKind::OutOfRange, needles);
    } else {
      EXPECT_NO_THROW(call());
      expect_error([&] { dev.synchronize(); }, ErrorKind::OutOfRange, needles);
    }
  }
  const Tensor y = attention_cached(q, kc, vc, pos_tensor(7, dev));
  WICK_EXPECT_CLOSE(y, to_ref(Tensor::ones({1, 2, 3, 4}, DType::F32, Device::cpu())), Tol{1e-6, 0});
}

// Gemma 2's options: scores soft-capped, a sliding window; against float64, with the rows before
// each window and after each position NaN (a kernel reading one turns its output NaN). Shapes
// that take every GPU path (several splits, some wholly before the window; the vector form;
// prompts of several rows, each with its own window).
TEST_P(AttentionCached, SoftcapAndSlidingWindowAgainstFloat64) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  struct Case {
    Dims x;
    double softcap;
    int64_t window;
  };
  std::vector<Case> cases = {
      {{1, 9, 3, 1, 64, 300, 290}, 50, 100},  // decode: 3 splits, the first outside the window
      {{1, 8, 2, 5, 16, 300, 200}, 0, 37},    // a window only, 5 rows
      {{2, 4, 2, 1, 128, 300, 250}, 2, 0},    // a cap small enough to bite, the vector form
      {{1, 2, 1, 3, 8, 40, 30}, 1.5, 1},      // a window of one row
      {{1, 2, 1, 2, 8, 40, 3}, 30, 500},      // a window longer than the cache
  };
  for (int i = 0; i < 3; i++)
    cases.push_back({random_dims(rng, dev.is_cpu()), static_cast<double>(rng.integer(0, 3)) * 10,
                     rng.integer(0, 40)});
  int n = 0;
  for (const Case& cs : cases)
    for (DType dt : {DType::F32, DType::F64, DType::BF16})
      for (DType kv : {dt, DType::F16}) {
        if (kv == DType::F16 && dt != DType::F32) continue;
        const Dims& x = cs.x;
        SCOPED_TRACE(::testing::Message() << dt << " q " << kv << " cache softcap " << cs.softcap
                                          << " window " << cs.window << " " << str(x));
        AttentionCase c = random_attention_case(rng, x, dt);
        // q scaled up: scores of order ten, which a cap of 2 or 10 changes.
        for (double& v : c.q.v) v *= 4;
        c.q = round_ref(c.q, dt);
        c.kc = round_ref(c.kc, kv);
        c.vc = round_ref(c.vc, kv);
        if (cs.window > 0)  // rows no query of this case sees
          for (Ref* r : {&c.kc, &c.vc})
            for_each_index(r->shape, [&](const std::vector<int64_t>& i) {
              if (i[2] + cs.window <= x.pos) r->v[static_cast<size_t>(r->index(i))] = NAN;
            });
        const Tensor q = make_tensor(c.q, dt, dev, kAllVariants[n % 5]);
        const Tensor kc = make_cache(c.kc, kv, dev, n % 2), vc = make_cache(c.vc, kv, dev, false);
        n++;
        const Tensor y =
            attention_cached(q, kc, vc, pos_tensor(x.pos, dev), {}, {cs.softcap, cs.window});
        const AttentionRef want = attention_ref(c.q, c.kc, c.vc, x.pos, dt, cs.softcap, cs.window);
        WICK_EXPECT_CLOSE(y, want.y, want.tol);
      }
  expect_error(
      [&] {
        attention_cached(Tensor::zeros({1, 1, 1, 4}, DType::F32, dev),
                         Tensor::zeros({1, 1, 4, 4}, DType::F32, dev),
                         Tensor::zeros({1, 1, 4, 4}, DType::F32, dev), pos_tensor(0, dev), {},
                         {-1, 0});
      },
      ErrorKind::Unsupported, {"attention_cached", "softcap -1"});
  expect_error(
      [&] {
        attention_cached(Tensor::zeros({1, 1, 1, 4}, DType::F32, dev),
                         Tensor::zeros({1, 1, 4, 4}, DType::F32, dev),
                         Tensor::zeros({1, 1, 4, 4}, DType::F32, dev), pos_tensor(0, dev), {},
                         {0, -3});
      },
      ErrorKind::Unsupported, {"attention_cached", "window -3"});
}

// Items at positions of their own, in cache slots: each item's rows, bit for bit, as the
// one-item op on its slot at its position (an item's sums do not depend on its batch), and
// against float64. Rows past each item's keys and the unused slots are NaN.
TEST_P(AttentionCached, PositionsAndSlotsPerItemAsEachItemAlone) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  std::vector<Dims> shapes = {{3, 9, 3, 1, 64, 300, 0},  // SmolLM2's decode: splits, vector form
                              {2, 4, 2, 3, 16, 140, 0}};
  for (int i = 0; i < 2; i++) {
    Dims x = random_dims(rng, dev.is_cpu());
    x.b = rng.integer(2, 4);
    shapes.push_back(x);
  }
  int n = 0;
  for (const Dims& x : shapes)
    for (DType kv : {DType::F32, DType::F16})
      for (bool with_slots : {true, false}) {
        const DType dt = DType::F32;
        const Items it = random_items(rng, x.b, x.max_seq, x.t, with_slots, n % 3 == 2);
        SCOPED_TRACE(::testing::Message() << kv << " cache " << str(x) << " " << str(it));
        const auto [q, kc_ref, vc_ref] = random_item_case(rng, x, it, dt, kv);
        const Tensor qt = make_tensor(q, dt, dev, kAllVariants[n % 5]);
        const Tensor kc = make_cache(kc_ref, kv, dev, n % 2), vc = make_cache(vc_ref, kv, dev, 0);
        n++;
        const Tensor y = attention_cached(qt, kc, vc, pos_of(it, dev), slots_of(it, dev));
        std::vector<Tensor> alone;
        for (int64_t i = 0; i < x.b; i++) {
          const auto ii = static_cast<size_t>(i);
          const int64_t slot = it.slot[ii], p = it.pos[ii];
          alone.push_back(attention_cached(qt.narrow(0, i, 1), kc.narrow(0, slot, 1),
                                           vc.narrow(0, slot, 1), pos_tensor(p, dev)));
          const AttentionRef want =
              attention_ref(block(q, i), block(kc_ref, slot), block(vc_ref, slot), p, dt);
          WICK_EXPECT_CLOSE(y.narrow(0, i, 1), want.y, want.tol);
        }
        EXPECT_TRUE(same_bits(y, Tensor::cat(alone, 0)));
      }
}

// options.max_keys: with the bound at the most keys any query reads (and above it), the same
// bits as without it, for items in slots, prompts and decode over long caches (several splits
// without the bound), rows past each item's keys NaN; a query beyond the bound is OutOfRange
// (the CPU at the op, a GPU at the next wait), and the device stays usable.
TEST_P(AttentionCached, MaxKeysGivesTheSameBitsAndRefusesQueriesBeyondIt) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  std::vector<Dims> shapes = {{5, 9, 3, 1, 64, 700, 0},   // items of one row: SmolLM2's heads
                              {1, 9, 3, 34, 64, 512, 0},  // a prompt of 34 rows
                              {3, 4, 2, 3, 16, 300, 0}};
  Dims x = random_dims(rng, dev.is_cpu());
  x.b = rng.integer(1, 4);
  shapes.push_back(x);
  int n = 0;
  for (const Dims& x : shapes)
    for (DType kv : {DType::F32, DType::F16}) {
      const DType dt = DType::F32;
      // Positions in the first quarter of the cache: without the bound most splits are idle.
      const Items it = random_items(rng, x.b, std::max(x.t, x.max_seq / 4), x.t, n % 2 == 0, false);
      SCOPED_TRACE(::testing::Message() << kv << " cache " << str(x) << " " << str(it));
      int64_t keys = 0;
      for (int64_t p : it.pos) keys = std::max(keys, p + x.t);
      const auto [q, kc_ref, vc_ref] = random_item_case(rng, x, it, dt, kv);
      const Tensor qt = make_tensor(q, dt, dev, kAllVariants[n % 5]);
      const Tensor kc = make_cache(kc_ref, kv, dev, n % 2), vc = make_cache(vc_ref, kv, dev, 0);
      n++;
      const Tensor pos = pos_of(it, dev), slots = slots_of(it, dev);
      const Tensor free = attention_cached(qt, kc, vc, pos, slots);
      for (int64_t bound : {keys, keys + 1, keys + 129, x.max_seq, x.max_seq + 5}) {
        SCOPED_TRACE(bound);
        AttentionOptions o;
        o.max_keys = bound;
        EXPECT_TRUE(same_bits(attention_cached(qt, kc, vc, pos, slots, o), free));
      }
      for (int64_t i = 0; i < x.b; i++) {
        const auto ii = static_cast<size_t>(i);
        const AttentionRef want = attention_ref(block(q, i), block(kc_ref, it.slot[ii]),
                                                block(vc_ref, it.slot[ii]), it.pos[ii], dt);
        WICK_EXPECT_CLOSE(free.narrow(0, i, 1), want.y, want.tol);
      }
      // One key short: the item with the most keys reads past the bound.
      AttentionOptions short_by_one;
      short_by_one.max_keys = keys - 1;
      if (keys - 1 == 0) continue;
      const std::vector<std::string> needles = {
          "attention_cached", "attends to " + std::to_string(keys) + " cache rows",
          "max_keys = " + std::to_string(keys - 1)};
      auto call = [&] { attention_cached(qt, kc, vc, pos, slots, short_by_one); };
      if (dev.is_cpu()) {
        expect_error(call, ErrorKind::OutOfRange, needles);
      } else {
        EXPECT_NO_THROW(call());
        expect_error([&] { dev.synchronize(); }, ErrorKind::OutOfRange, needles);
      }
      EXPECT_TRUE(same_bits(attention_cached(qt, kc, vc, pos, slots), free));  // still usable
    }
  AttentionOptions negative;
  negative.max_keys = -1;
  expect_error(
      [&] {
        attention_cached(Tensor::zeros({1, 1, 1, 4}, DType::F32, dev),
                         Tensor::zeros({1, 1, 4, 4}, DType::F32, dev),
                         Tensor::zeros({1, 1, 4, 4}, DType::F32, dev), pos_tensor(0, dev), {},
                         negative);
      },
      ErrorKind::Unsupported, {"attention_cached", "max_keys -1"});
}

// A slot beyond the caches is OutOfRange (the CPU at the op, a GPU at the next wait); the
// device stays usable.
TEST_P(AttentionCached, SlotBeyondTheCachesIsOutOfRange) {
  const Device dev = device();
  const Tensor q = Tensor::ones({2, 2, 1, 4}, DType::F32, dev);
  const Tensor kc = Tensor::ones({3, 1, 10, 4}, DType::F32, dev), vc = kc.copy();
  const Tensor pos = u32_tensor({3, 7}, dev);
  for (int64_t bad : {int64_t{3}, int64_t{4000000000}}) {
    SCOPED_TRACE(bad);
    Tensor out;
    auto call = [&] { out = attention_cached(q, kc, vc, pos, u32_tensor({0, bad}, dev)); };
    const std::vector<std::string> needles = {"attention_cached",
                                              "cache slot " + std::to_string(bad), "3 slots"};
    if (dev.is_cpu()) {
      expect_error(call, ErrorKind::OutOfRange, needles);
    } else {
      EXPECT_NO_THROW(call());
      expect_error([&] { dev.synchronize(); }, ErrorKind::OutOfRange, needles);
    }
  }
  const Tensor y = attention_cached(q, kc, vc, pos, u32_tensor({2, 1}, dev));
  WICK_EXPECT_CLOSE(y, to_ref(Tensor::ones({2, 2, 1, 4}, DType::F32, Device::cpu())), Tol{1e-6, 0});
}

// The errors of pos and slots of a batch.
TEST_P(AttentionCached, PositionAndSlotErrors) {
  const Device dev = device();
  auto z = [&](const Shape& s, DType dt = DType::F32) { return Tensor::zeros(s, dt, dev); };
  const Tensor q = z({2, 4, 1, 6}), kc = z({3, 2, 8, 6}), vc = z({3, 2, 8, 6});
  const Tensor pos = u32_tensor({1, 2}, dev), slots = u32_tensor({2, 0}, dev);
  const std::string op = "attention_cached";
  EXPECT_NO_THROW(attention_cached(q, kc, vc, pos, slots));
  EXPECT_NO_THROW(attention_cached(q, kc.narrow(0, 0, 2), vc.narrow(0, 1, 2), pos));
  // Strided positions and slots are read as given.
  EXPECT_NO_THROW(attention_cached(q, kc, vc,
                                   u32_tensor({1, 9, 2, 9}, dev).reshape({2, 2}).narrow(1, 0, 1),
                                   u32_tensor({2, 9, 0, 9}, dev).reshape({2, 2}).narrow(1, 0, 1)));
  expect_error(
      [&] {
        attention_cached(q, kc, vc, u32_tensor({1, 2, 3}, dev), slots);
      },
      ErrorKind::Shape, {op, "pos", "1 or b = 2"});
  expect_error([&] { attention_cached(q, kc, vc, pos, u32_tensor({1}, dev)); }, ErrorKind::Shape,
               {op, "slots", "b = 2"});
  expect_error([&] { attention_cached(q, kc, vc, pos, z({2}, DType::I64)); }, ErrorKind::DType,
               {op, "slots", "u32"});
  expect_error([&] { attention_cached(q, kc, vc, pos); }, ErrorKind::Shape, {op, "k_cache"});
  expect_error(
      [&] {
        attention_cached(q, z({0, 2, 8, 6}), z({0, 2, 8, 6}), pos, slots);
      },
      ErrorKind::Shape, {op, "slots >= 1"});
  expect_error(
      [&] {
        attention_cached(q, kc, z({2, 2, 8, 6}), pos, slots);
      },
      ErrorKind::Shape, {op, "differ"});
  expect_error(
      [&] {
        rope_kv_cache(q, z({2, 2, 1, 6}), z({2, 2, 1, 6}), kc, vc,
                      {z({8, 3}), z({8, 3}), z({8, 3}), z({8, 3})}, pos, false, z({2}, DType::F32));
      },
      ErrorKind::DType, {"rope_kv_cache", "slots", "u32"});
  if (!dev.is_cpu()) {
    const Device cpu = Device::cpu();
    expect_error(
        [&] {
          attention_cached(q, kc, vc, pos, u32_tensor({2, 0}, cpu));
        },
        ErrorKind::Device, {op});
  }
}

TEST_P(AttentionCached, Errors) {
  const Device dev = device();
  auto z = [&](const Shape& s, DType dt = DType::F32) { return Tensor::zeros(s, dt, dev); };
  const Tensor q = z({1, 4, 2, 6}), kc = z({1, 2, 8, 6}), vc = z({1, 2, 8, 6});
  const Tensor pos = pos_tensor(0, dev);
  const std::string op = "attention_cached";
  auto call = [&](const Tensor& q_, const Tensor& kc_, const Tensor& vc_, const Tensor& pos_) {
    return [=] { attention_cached(q_, kc_, vc_, pos_); };
  };
  EXPECT_NO_THROW(call(q, kc, vc, pos)());
  expect_error(call(z({1, 4, 2, 6}, DType::I64), kc, vc, pos), ErrorKind::DType, {op, "float"});
  expect_error(call(q, z({1, 2, 8, 6}, DType::F16), vc, pos), ErrorKind::DType,
               {op, "f16", "share one dtype"});
  expect_error(call(q, kc, z({1, 2, 8, 6}, DType::F64), pos), ErrorKind::DType, {op, "f64"});
  // 16-bit caches go with f32 q only.
  EXPECT_NO_THROW(call(q, z({1, 2, 8, 6}, DType::BF16), z({1, 2, 8, 6}, DType::BF16), pos)());
  expect_error(call(z({1, 4, 2, 6}, DType::F16), kc, vc, pos), ErrorKind::DType,
               {op, "k_cache is f32 under f16 q"});
  expect_error(call(z({1, 4, 2, 6}, DType::F64), z({1, 2, 8, 6}, DType::F16),
                    z({1, 2, 8, 6}, DType::F16), pos),
               ErrorKind::DType, {op, "f16 under f64"});
  expect_error(call(q, kc, vc, Tensor::zeros({}, DType::F32, dev)), ErrorKind::DType,
               {op, "pos", "u32"});
  expect_error(call(q, kc, vc, Tensor::zeros({1, 2}, DType::U32, dev)), ErrorKind::Shape,
               {op, "pos"});
  EXPECT_NO_THROW(call(q, kc, vc, Tensor::zeros({1, 1}, DType::U32, dev))());
  expect_error(call(z({4, 2, 6}), kc, vc, pos), ErrorKind::Shape, {op, "q must be"});
  expect_error(call(q, z({2, 8, 6}), vc, pos), ErrorKind::Shape, {op, "k_cache"});
  expect_error(call(q, z({2, 2, 8, 6}), vc, pos), ErrorKind::Shape, {op, "k_cache"});
  expect_error(call(q, z({1, 2, 8, 4}), vc, pos), ErrorKind::Shape, {op, "k_cache"});
  expect_error(call(q, kc, z({1, 1, 8, 6}), pos), ErrorKind::Shape, {op, "v_cache"});
  expect_error(call(q, kc, z({1, 2, 7, 6}), pos), ErrorKind::Shape, {op, "differ"});
  expect_error(call(q, z({1, 3, 8, 6}), z({1, 3, 8, 6}), pos), ErrorKind::Shape,
               {op, "multiple of the kv heads 3"});
  expect_error(call(q, z({1, 2, 6, 8}).transpose(2, 3), vc, pos), ErrorKind::Shape,
               {op, "contiguous"});
  expect_error(call(q, kc, kc, pos), ErrorKind::Shape, {op, "overlap"});
  expect_error(call(z({1, 4, 9, 6}), kc, vc, pos), ErrorKind::OutOfRange,
               {op, "9 tokens", "8 positions"});
  if (!dev.is_cpu()) {
    const Device cpu = Device::cpu();
    expect_error(call(q, kc, vc, pos_tensor(0, cpu)), ErrorKind::Device, {op});
    expect_error(call(q, Tensor::zeros({1, 2, 8, 6}, DType::F32, cpu), vc, pos), ErrorKind::Device,
                 {op});
  }
  const Tensor empty = attention_cached(z({1, 4, 0, 6}), kc, vc, pos_tensor(100, dev));
  EXPECT_EQ(empty.shape(), Shape({1, 4, 0, 6}));
}

WICK_INSTANTIATE_DEVICES(AttentionCached);

// A GPU's attention on every decode workgroup size (GpuOptions::attention_block: the keys a
// split's step scores, so also how the keys split), with the softmax's reductions in subgroups
// and (at both ends) in the shared-memory tree: one query of 9 heads over 3 kv heads (decode;
// head size 64, and 128 whose f16 rows outgrow the vector form's prefetched registers) and 3
// queries a head (a short prompt, which takes 128 whatever the option); f32 q over f32 and f16
// caches, against float64 on the caches' values.
class GpuAttentionBlocks : public GpuDeviceTest {};

TEST_P(GpuAttentionBlocks, EveryBlockAgainstFloat64) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const DType dt = DType::F32;
  for (bool subgroups : {true, false})
    for (uint32_t block : {32u, 64u, 128u, 256u}) {
      if (!subgroups && block != 32 && block != 256) continue;  // the tree at both ends
      const Device dev = private_device([&](gpu::GpuOptions& o) {
        o.attention_block = block;
        o.subgroups = subgroups;
      });
      for (DType kv : {DType::F32, DType::F16})
        for (int64_t t : {1, 3})
          for (int64_t d : {64, 128}) {
            // f16 rows of 128 outgrow the prefetched registers (f32 rows of 64 do already).
            if (d == 128 && (kv != DType::F16 || t != 1 || !subgroups)) continue;
            const Dims x{1, 9, 3, t, d, 200, rng.integer(t == 1 ? 100 : 20, 200 - t)};
            SCOPED_TRACE(::testing::Message() << (subgroups ? "subgroups, " : "tree, ") << "block "
                                              << block << " " << kv << " cache " << str(x));
            AttentionCase c = random_attention_case(rng, x, dt);
            c.kc = round_ref(c.kc, kv);
            c.vc = round_ref(c.vc, kv);
            const Tensor y =
                attention_cached(make_tensor(c.q, dt, dev), make_cache(c.kc, kv, dev, false),
                                 make_cache(c.vc, kv, dev, false), pos_tensor(x.pos, dev));
            const AttentionRef want = attention_ref(c.q, c.kc, c.vc, x.pos, dt);
            WICK_EXPECT_CLOSE(y, want.y, want.tol);
          }
    }
}

WICK_INSTANTIATE_GPU_DEVICES(GpuAttentionBlocks);

// The CPU's AVX-512 loops read f32/f16/bf16 cache rows as stored (16-bit ones widened in
// registers) and sum four keys' lanes at once; elsewhere 16-bit rows are widened a block at a
// time (vcvtph2ps where it can, else portably). All give the same bits.
TEST(AttentionCachedCpu, CachesGiveTheSameBitsOnEveryIsa) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = Device::cpu();
  for (DType kv : {DType::F16, DType::BF16, DType::F32}) {
    // 150 keys: blocks of 64 and 22, whose 4-key steps leave 2 single keys.
    const Dims x = {2, 9, 3, 1, 64, 200, 150};
    AttentionCase c = random_attention_case(rng, x, DType::F32);
    const Tensor q = make_tensor(c.q, DType::F32, dev);
    const Tensor kc = make_cache(round_ref(c.kc, kv), kv, dev, false);
    const Tensor vc = make_cache(round_ref(c.vc, kv), kv, dev, true);
    const std::vector<float> best =
        attention_cached(q, kc, vc, pos_tensor(x.pos, dev)).to_vec<float>();
    std::vector<float> base;
    {
      IsaCap capped(cpu::Isa::Baseline);
      base = attention_cached(q, kc, vc, pos_tensor(x.pos, dev)).to_vec<float>();
    }
    ASSERT_EQ(best.size(), base.size());
    for (size_t i = 0; i < best.size(); i++)
      ASSERT_EQ(std::bit_cast<uint32_t>(best[i]), std::bit_cast<uint32_t>(base[i]))
          << kv << " cache, element " << i << ": " << best[i] << " against " << base[i];
  }
}

}  // namespace
}  // namespace wick::testing
