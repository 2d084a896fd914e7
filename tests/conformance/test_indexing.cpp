// Indexing (index_select, gather, scatter_add, index_add, embedding) and the ops that place
// tensors side by side (cat, stack, slice_set), against float64 references.
#include <cmath>
#include <cstdint>

#include "harness.h"

namespace wick::testing {
namespace {

const std::vector<DType> kIdDTypes = {DType::U8, DType::U32, DType::I64};

// The ids dtype for one (src, ids) layout pair: cycling through the three over the 25 pairs
// gives every ids dtype with every value dtype and with most layouts, at a third of the cost.
DType id_dtype_for(Variant vs, Variant vi) {
  return kIdDTypes[(static_cast<size_t>(vs) * 5 + static_cast<size_t>(vi)) % kIdDTypes.size()];
}

// Values for dt: floats in [-2, 2], integers small enough that sums of a few never wrap.
Ref random_values(Rng& rng, const Shape& s, DType dt) {
  switch (dt) {
    case DType::U8:
      return random_int_ref(rng, s, 0, 40);
    case DType::U32:
      return random_int_ref(rng, s, 0, 100000);
    case DType::I64:
    case DType::I32:
      return random_int_ref(rng, s, -100000, 100000);
    default:
      return round_ref(random_ref(rng, s), dt);
  }
}

// A random dim of a rank-r tensor, negative half of the time.
int64_t random_dim(Rng& rng, size_t r) {
  const int64_t d = rng.integer(0, static_cast<int64_t>(r) - 1);
  return rng.integer(0, 1) ? d - static_cast<int64_t>(r) : d;
}

size_t resolve(int64_t d, size_t r) {
  return static_cast<size_t>(d < 0 ? d + static_cast<int64_t>(r) : d);
}

// Ids as a tensor laid out as `v`. 1-D ids have no transposed or permuted form, so those
// variants give every other element of a wider tensor whose other elements are out of range
// (a kernel that ignores the ids' stride reads them and fails).
Tensor make_ids(const Ref& ids, DType dt, const Device& dev, Variant v) {
  if (ids.shape.rank() != 1 || (v != Variant::Transposed && v != Variant::Permuted))
    return make_tensor(ids, dt, dev, v);
  const int64_t n = ids.shape[0];
  // Transposed: column 0 of a row-major (n, 2) tensor (stride 2); permuted: column 1 of a
  // column-major one (stride 1, offset n).
  const bool col0 = v == Variant::Transposed;
  Ref wide{{n, 2}, {}};
  for (int64_t i = 0; i < n; i++) {
    const double id = ids.v[static_cast<size_t>(i)];
    wide.v.insert(wide.v.end(), {col0 ? id : 250.0, col0 ? 250.0 : id});
  }
  return make_tensor(wide, dt, dev, col0 ? Variant::Contiguous : Variant::Transposed)
      .narrow(1, col0 ? 0 : 1, 1)
      .squeeze(1);
}

// The references rewrite one index of a multi-index in a reused buffer (no allocation per
// element: the parallel tests walk ~100k elements).
Ref ref_index_select(const Ref& src, const Ref& ids, size_t dim) {
  std::vector<int64_t> od = src.shape.dims();
  od[dim] = ids.shape[0];
  Ref out{Shape(od), {}};
  std::vector<int64_t> j;
  for_each_index(out.shape, [&](const std::vector<int64_t>& i) {
    j = i;
    j[dim] = static_cast<int64_t>(ids.v[static_cast<size_t>(i[dim])]);
    out.v.push_back(src.at(j));
  });
  return out;
}

Ref ref_gather(const Ref& src, const Ref& ids, size_t dim) {
  Ref out{ids.shape, {}};
  std::vector<int64_t> j;
  for_each_index(ids.shape, [&](const std::vector<int64_t>& i) {
    j = i;
    j[dim] = static_cast<int64_t>(ids.at(i));
    out.v.push_back(src.at(j));
  });
  return out;
}

// self + src scattered along dim; `target(i)` is the index along dim for src element i.
template <typename Target>
Ref ref_scatter(const Ref& self, const Ref& src, size_t dim, Target&& target) {
  Ref out = self;
  std::vector<int64_t> j;
  for_each_index(src.shape, [&](const std::vector<int64_t>& i) {
    j = i;
    j[dim] = target(i);
    out.v[static_cast<size_t>(out.index(j))] += src.at(i);
  });
  return out;
}

Ref ref_scatter_add(const Ref& self, const Ref& ids, const Ref& src, size_t dim) {
  return ref_scatter(self, src, dim, [&](const std::vector<int64_t>& i) {
    return static_cast<int64_t>(ids.at(i));
  });
}

Ref ref_index_add(const Ref& self, const Ref& ids, const Ref& src, size_t dim) {
  return ref_scatter(self, src, dim, [&](const std::vector<int64_t>& i) {
    return static_cast<int64_t>(ids.v[static_cast<size_t>(i[dim])]);
  });
}

// Accumulating `adds` values of magnitude <= 2 into one of magnitude <= 2: floats add in f32
// (f64 for f64), each add rounding by at most u_acc of a partial sum <= 2 * (adds + 1); f16 and
// bf16 then round once (relative u_out). Integers are exact.
Tol accumulate_tol(DType dt, int64_t adds) {
  if (is_int(dt)) return {0, 0};
  const double u_acc = dt == DType::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  double u_out = u_acc;
  if (dt == DType::F16) u_out = std::ldexp(1.0, -11);
  if (dt == DType::BF16) u_out = std::ldexp(1.0, -8);
  return {static_cast<double>(adds) * u_acc * 2.0 * static_cast<double>(adds + 1), u_out};
}

std::string trace(DType dt, DType it, Variant vs, Variant vi, const Shape& s, int64_t dim) {
  return std::string(dtype_name(dt)) + " ids " + dtype_name(it) + " src " + variant_name(vs) +
         " ids " + variant_name(vi) + " shape " + s.str() + " dim " + std::to_string(dim);
}

class Indexing : public DeviceTest {};

TEST_P(Indexing, IndexSelect) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : compute_dtypes(dev))
    for (Variant vs : kAllVariants)
      for (Variant vi : kAllVariants) {
        const DType it = id_dtype_for(vs, vi);
        const Shape s = random_shape(rng, 1, 4, 5);
        const int64_t dim = random_dim(rng, s.rank());
        const size_t d = resolve(dim, s.rank());
        SCOPED_TRACE(trace(dt, it, vs, vi, s, dim));
        const Ref src = random_values(rng, s, dt);
        const Ref ids = random_int_ref(rng, {rng.integer(1, 6)}, 0, s[d] - 1);
        const Tensor got =
            make_tensor(src, dt, dev, vs).index_select(make_ids(ids, it, dev, vi), dim);
        EXPECT_EQ(got.dtype(), dt);
        WICK_EXPECT_CLOSE(got, ref_index_select(src, ids, d), Tol{0, 0});
      }
}

TEST_P(Indexing, Gather) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : compute_dtypes(dev))
    for (Variant vs : kAllVariants)
      for (Variant vi : kAllVariants) {
        const DType it = id_dtype_for(vs, vi);
        const Shape s = random_shape(rng, 1, 4, 5);
        const int64_t dim = random_dim(rng, s.rank());
        const size_t d = resolve(dim, s.rank());
        SCOPED_TRACE(trace(dt, it, vs, vi, s, dim));
        Shape is = s;
        is[d] = rng.integer(1, 5);
        const Ref src = random_values(rng, s, dt);
        const Ref ids = random_int_ref(rng, is, 0, s[d] - 1);
        const Tensor got = make_tensor(src, dt, dev, vs).gather(make_ids(ids, it, dev, vi), dim);
        WICK_EXPECT_CLOSE(got, ref_gather(src, ids, d), Tol{0, 0});
      }
}

// Ids with stride-0 dims, as a broadcast index tensor arrives.
TEST_P(Indexing, GatherBroadcastIds) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType it : kIdDTypes) {
    const Ref src = random_values(rng, {4, 6, 3}, DType::F32);
    const Ref ids_row = random_int_ref(rng, {1, 5, 3}, 0, 5);  // broadcast along dim 0
    Ref ids{{4, 5, 3}, {}};
    for (int r = 0; r < 4; r++) ids.v.insert(ids.v.end(), ids_row.v.begin(), ids_row.v.end());
    const Tensor got =
        make_tensor(src, DType::F32, dev).gather(make_broadcast(ids_row, {4, 5, 3}, it, dev), 1);
    WICK_EXPECT_CLOSE(got, ref_gather(src, ids, 1), Tol{0, 0});
  }
}

TEST_P(Indexing, ScatterAdd) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : compute_dtypes(dev))
    for (Variant vs : kAllVariants)
      for (Variant vi : kAllVariants) {
        const DType it = id_dtype_for(vs, vi);
        const Shape s = random_shape(rng, 1, 4, 5);
        const int64_t dim = random_dim(rng, s.rank());
        const size_t d = resolve(dim, s.rank());
        SCOPED_TRACE(trace(dt, it, vs, vi, s, dim));
        Shape ss = s;
        ss[d] = rng.integer(1, 5);
        const Ref self = random_values(rng, s, dt);
        const Ref src = random_values(rng, ss, dt);
        // Few targets for up to 5 sources along dim: indices repeat.
        const Ref ids = random_int_ref(rng, ss, 0, std::min<int64_t>(s[d] - 1, 2));
        const Variant vself = kAllVariants[rng.integer(0, 4)];
        const Tensor tself = make_tensor(self, dt, dev, vself);
        const Tensor got =
            tself.scatter_add(make_ids(ids, it, dev, vi), make_tensor(src, dt, dev, vs), dim);
        WICK_EXPECT_CLOSE(got, round_ref(ref_scatter_add(self, ids, src, d), dt),
                          accumulate_tol(dt, ss[d]));
        WICK_EXPECT_CLOSE(tself, self, Tol{0, 0});  // not in place on self
      }
}

TEST_P(Indexing, IndexAdd) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : compute_dtypes(dev))
    for (Variant vs : kAllVariants)
      for (Variant vi : kAllVariants) {
        const DType it = id_dtype_for(vs, vi);
        const Shape s = random_shape(rng, 1, 4, 5);
        const int64_t dim = random_dim(rng, s.rank());
        const size_t d = resolve(dim, s.rank());
        SCOPED_TRACE(trace(dt, it, vs, vi, s, dim));
        Shape ss = s;
        ss[d] = rng.integer(1, 5);
        const Ref self = random_values(rng, s, dt);
        const Ref src = random_values(rng, ss, dt);
        const Ref ids = random_int_ref(rng, {ss[d]}, 0, std::min<int64_t>(s[d] - 1, 2));
        const Tensor tself = make_tensor(self, dt, dev, kAllVariants[rng.integer(0, 4)]);
        const Tensor got =
            tself.index_add(make_ids(ids, it, dev, vi), make_tensor(src, dt, dev, vs), dim);
        WICK_EXPECT_CLOSE(got, round_ref(ref_index_add(self, ids, src, d), dt),
                          accumulate_tol(dt, ss[d]));
        WICK_EXPECT_CLOSE(tself, self, Tol{0, 0});
      }
}

// Many contributions to few targets, on tensors large enough to be split over threads: every
// contribution must land exactly once.
TEST_P(Indexing, RepeatedIndicesAccumulateInParallel) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
    SCOPED_TRACE(dtype_name(dt));
    // 4096 lines of 16 elements each: two threads' worth of work (kParallelGrain).
    const Ref self = random_values(rng, {3, 4096}, dt);
    const Ref src = random_values(rng, {16, 4096}, dt);
    const Ref ids = random_int_ref(rng, {16}, 0, 2);
    const Tensor tself = make_tensor(self, dt, dev), tsrc = make_tensor(src, dt, dev);
    WICK_EXPECT_CLOSE(tself.index_add(make_tensor(ids, DType::U32, dev), tsrc, 0),
                      round_ref(ref_index_add(self, ids, src, 0), dt), accumulate_tol(dt, 16));
    const Ref sids = random_int_ref(rng, {16, 4096}, 0, 2);
    WICK_EXPECT_CLOSE(tself.scatter_add(make_tensor(sids, DType::I64, dev), tsrc, 0),
                      round_ref(ref_scatter_add(self, sids, src, 0), dt), accumulate_tol(dt, 16));
    // Along the last dim, with every source element hitting index 1.
    const Ref ones{{64, 6}, std::vector<double>(64 * 6, 1.0)};
    const Ref src2 = random_values(rng, {64, 6}, dt);
    const Ref self2 = random_values(rng, {64, 2}, dt);
    WICK_EXPECT_CLOSE(
        make_tensor(self2, dt, dev)
            .scatter_add(make_tensor(ones, DType::U8, dev), make_tensor(src2, dt, dev), -1),
        round_ref(ref_scatter_add(self2, ones, src2, 1), dt), accumulate_tol(dt, 6));
  }
}

// Integer accumulation wraps modulo 2^bits like integer matmul does.
TEST_P(Indexing, IntegerAddsWrap) {
  const Device dev = device();
  const Tensor ids = Tensor::from_vec(std::vector<int64_t>{0, 0, 1}, {3}, dev);
  const Tensor u8 = Tensor::from_vec(std::vector<uint8_t>{250, 7}, {2}, dev);
  EXPECT_EQ(u8.index_add(ids, Tensor::from_vec(std::vector<uint8_t>{5, 6, 9}, {3}, dev), 0)
                .to_vec<uint8_t>(),
            (std::vector<uint8_t>{5, 16}));
  const Tensor i64 = Tensor::from_vec(std::vector<int64_t>{INT64_MAX, INT64_MIN}, {2}, dev);
  EXPECT_EQ(i64.scatter_add(ids, Tensor::from_vec(std::vector<int64_t>{1, 1, -1}, {3}, dev), 0)
                .to_vec<int64_t>(),
            (std::vector<int64_t>{INT64_MIN + 1, INT64_MAX}));
}

TEST_P(Indexing, LargeGatherAndSelect) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  const Ref table = random_values(rng, {300, 96}, DType::F32);
  const Ref ids = random_int_ref(rng, {1000}, 0, 299);
  WICK_EXPECT_CLOSE(
      make_tensor(table, DType::F32, dev).index_select(make_tensor(ids, DType::U32, dev), 0),
      ref_index_select(table, ids, 0), Tol{0, 0});
  const Ref gids = random_int_ref(rng, {300, 400}, 0, 95);
  WICK_EXPECT_CLOSE(make_tensor(table, DType::F32, dev, Variant::Transposed)
                        .gather(make_tensor(gids, DType::I64, dev), 1),
                    ref_gather(table, gids, 1), Tol{0, 0});
}

TEST_P(Indexing, Embedding) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : compute_dtypes(dev))
    for (DType it : kIdDTypes)
      for (Variant vt : kAllVariants) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " ids " + dtype_name(it) + " table " +
                     variant_name(vt));
        const Ref table = random_values(rng, {7, 5}, dt);
        const Ref ids = random_int_ref(rng, {2, 3}, 0, 6);
        const Tensor got = make_tensor(table, dt, dev, vt)
                               .embedding(make_tensor(ids, it, dev, Variant::Transposed));
        Ref want{{2, 3, 5}, {}};
        for_each_index(want.shape, [&](const std::vector<int64_t>& i) {
          want.v.push_back(table.at({static_cast<int64_t>(ids.at({i[0], i[1]})), i[2]}));
        });
        WICK_EXPECT_CLOSE(got, want, Tol{0, 0});
      }
}

TEST_P(Indexing, Cat) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : compute_dtypes(dev))
    for (size_t rank = 1; rank <= 4; rank++)
      for (int64_t dim = 0; dim < static_cast<int64_t>(rank); dim++) {
        const Shape base = random_shape(rng, rank, rank, 4);
        const auto pieces = static_cast<size_t>(rng.integer(2, 4));
        std::vector<Ref> refs;
        std::vector<Tensor> ts;
        std::string layouts;
        for (size_t p = 0; p < pieces; p++) {
          Shape s = base;
          s[static_cast<size_t>(dim)] = rng.integer(0, 3);  // 0: an empty piece
          const Variant v = kAllVariants[rng.integer(0, 4)];
          layouts.append(" ").append(s.str()).append(variant_name(v));
          refs.push_back(random_values(rng, s, dt));
          ts.push_back(make_tensor(refs.back(), dt, dev, v));
        }
        SCOPED_TRACE(std::string(dtype_name(dt)) + " dim " + std::to_string(dim) + layouts);
        std::vector<int64_t> od = base.dims();
        od[static_cast<size_t>(dim)] = 0;
        for (const Ref& r : refs) od[static_cast<size_t>(dim)] += r.shape[static_cast<size_t>(dim)];
        Ref want{Shape(od), {}};
        for_each_index(want.shape, [&](std::vector<int64_t> i) {
          size_t p = 0;
          while (i[static_cast<size_t>(dim)] >= refs[p].shape[static_cast<size_t>(dim)])
            i[static_cast<size_t>(dim)] -= refs[p++].shape[static_cast<size_t>(dim)];
          want.v.push_back(refs[p].at(i));
        });
        // Every dim once as a negative index.
        const int64_t d = rng.integer(0, 1) ? dim - static_cast<int64_t>(rank) : dim;
        WICK_EXPECT_CLOSE(Tensor::cat(ts, d), want, Tol{0, 0});
      }
}

TEST_P(Indexing, Stack) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : compute_dtypes(dev))
    for (size_t rank = 0; rank <= 3; rank++)
      for (int64_t dim = -static_cast<int64_t>(rank) - 1; dim <= static_cast<int64_t>(rank);
           dim++) {
        const Shape s = random_shape(rng, rank, rank, 4);
        const auto pieces = static_cast<size_t>(rng.integer(1, 4));
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + s.str() + " dim " + std::to_string(dim));
        std::vector<Ref> refs;
        std::vector<Tensor> ts;
        for (size_t p = 0; p < pieces; p++) {
          refs.push_back(random_values(rng, s, dt));
          ts.push_back(make_tensor(refs.back(), dt, dev, kAllVariants[rng.integer(0, 4)]));
        }
        const size_t nd = static_cast<size_t>(dim < 0 ? dim + static_cast<int64_t>(rank) + 1 : dim);
        std::vector<int64_t> od = s.dims();
        od.insert(od.begin() + static_cast<long>(nd), static_cast<int64_t>(pieces));
        Ref want{Shape(od), {}};
        for_each_index(want.shape, [&](std::vector<int64_t> i) {
          const auto p = static_cast<size_t>(i[nd]);
          i.erase(i.begin() + static_cast<long>(nd));
          want.v.push_back(refs[p].at(i));
        });
        WICK_EXPECT_CLOSE(Tensor::stack(ts, dim), want, Tol{0, 0});
      }
}

// slice_set through a permuted and narrowed view of a larger tensor: the slice takes src, and
// every element outside it keeps its value.
TEST_P(Indexing, SliceSetIntoStridedDestination) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device dev = device();
  for (DType dt : compute_dtypes(dev))
    for (int64_t dim = -3; dim < 3; dim++) {
      const Ref base = random_values(rng, {4, 5, 6}, dt);
      const Tensor tbase = make_tensor(base, dt, dev);
      const Tensor view = tbase.permute({2, 0, 1}).narrow(1, 1, 2);  // (6, 2, 5)
      const size_t d = resolve(dim, 3);
      Shape ss = view.shape();
      const int64_t len = rng.integer(0, ss[d]);
      const int64_t offset = rng.integer(0, ss[d] - len);
      ss[d] = len;
      const Variant vs = kAllVariants[rng.integer(0, 4)];
      SCOPED_TRACE(std::string(dtype_name(dt)) + " dim " + std::to_string(dim) + " len " +
                   std::to_string(len) + " at " + std::to_string(offset) + " src " +
                   variant_name(vs));
      const Ref src = random_values(rng, ss, dt);
      view.slice_set(make_tensor(src, dt, dev, vs), dim, offset);
      Ref want = base;
      for_each_index(ss, [&](const std::vector<int64_t>& i) {
        std::vector<int64_t> vi = i;
        vi[d] += offset;
        want.v[static_cast<size_t>(want.index({vi[1] + 1, vi[2], vi[0]}))] = src.at(i);
      });
      WICK_EXPECT_CLOSE(tbase, want, Tol{0, 0});
    }
}

// A source overlapping the destination is read as it was before the write.
TEST_P(Indexing, SliceSetFromOverlappingSource) {
  const Device dev = device();
  const Tensor t = Tensor::arange(6, DType::F32, dev);
  t.slice_set(t.narrow(0, 0, 4), 0, 2);
  EXPECT_EQ(t.to_vec<float>(), (std::vector<float>{0, 1, 0, 1, 2, 3}));
}

TEST_P(Indexing, OutOfRangeIndices) {
  const Device dev = device();
  const Tensor src = Tensor::ones({3, 5}, DType::F32, dev);
  for (DType it : kIdDTypes) {
    SCOPED_TRACE(dtype_name(it));
    const Tensor bad = Tensor::from_vec(std::vector<double>{1, 5, 0}, {3}, dev).to_dtype(it);
    expect_error([&] { src.index_select(bad, 1); }, ErrorKind::OutOfRange,
                 {"index_select", "index 5", "size 5"});
    expect_error([&] { src.index_select(bad, 0); }, ErrorKind::OutOfRange,
                 {"index_select", "index 5", "size 3"});
    const Tensor bad2 =
        Tensor::from_vec(std::vector<double>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 9}, {3, 5},
                         dev)
            .to_dtype(it);
    expect_error([&] { src.gather(bad2, 1); }, ErrorKind::OutOfRange,
                 {"gather", "index 9", "size 5"});
    expect_error([&] { src.scatter_add(bad2, src, 1); }, ErrorKind::OutOfRange,
                 {"scatter_add", "index 9", "size 5"});
    expect_error(
        [&] {
          src.index_add(bad, Tensor::ones({3, 3}, DType::F32, dev), 1);
        },
        ErrorKind::OutOfRange, {"index_add", "index 5", "size 5"});
    expect_error(
        [&] {
          src.embedding(bad.reshape({1, 3}));
        },
        ErrorKind::OutOfRange, {"index_select", "index 5", "size 3"});
    // A failed in-place op leaves its input untouched.
    EXPECT_EQ(src.to_vec<float>(), std::vector<float>(15, 1.0f));
  }
  const Tensor neg = Tensor::from_vec(std::vector<int64_t>{0, -1}, {2}, dev);
  expect_error([&] { src.index_select(neg, 0); }, ErrorKind::OutOfRange,
               {"index_select", "index -1", "size 3"});
  expect_error(
      [&] {
        src.index_add(neg, Tensor::ones({2, 5}, DType::F32, dev), 0);
      },
      ErrorKind::OutOfRange, {"index_add", "index -1"});
  // An index that only a strided read would reach: the tensor's storage holds 7, the view does not.
  const Tensor wide =
      Tensor::from_vec(std::vector<uint32_t>{0, 7, 2, 7}, {2, 2}, dev).narrow(1, 0, 1).squeeze(1);
  EXPECT_EQ(src.index_select(wide, 0).shape(), (Shape{2, 5}));
}

TEST_P(Indexing, ArgumentErrors) {
  const Device dev = device();
  const Tensor src = Tensor::ones({3, 5}, DType::F32, dev);
  const Tensor fids = Tensor::zeros({3}, DType::F32, dev);
  const Tensor ids = Tensor::zeros({3}, DType::U32, dev);
  const Tensor ids2 = Tensor::zeros({3, 5}, DType::I64, dev);
  expect_error([&] { src.index_select(fids, 0); }, ErrorKind::DType, {"index_select", "[3] f32"});
  expect_error([&] { src.gather(fids.reshape({3, 1}), 0); }, ErrorKind::DType, {"gather", "f32"});
  expect_error([&] { src.scatter_add(ids2.to_dtype(DType::F16), src, 0); }, ErrorKind::DType,
               {"scatter_add", "f16"});
  expect_error([&] { src.index_add(fids, src, 0); }, ErrorKind::DType, {"index_add", "f32"});
  expect_error([&] { src.embedding(fids); }, ErrorKind::DType, {"index_select", "f32"});
  // Wrong ranks and shapes.
  expect_error([&] { src.index_select(ids2, 0); }, ErrorKind::Shape, {"index_select", "[3, 5]"});
  expect_error([&] { src.index_select(ids, 2); }, ErrorKind::OutOfRange, {"index_select"});
  expect_error([&] { src.gather(ids, 0); }, ErrorKind::Shape, {"gather", "[3]", "[3, 5]"});
  expect_error(
      [&] {
        src.gather(Tensor::zeros({2, 4}, DType::U8, dev), 0);
      },
      ErrorKind::Shape, {"gather", "[2, 4]", "[3, 5]"});
  expect_error(
      [&] {
        src.scatter_add(Tensor::zeros({3, 4}, DType::U8, dev), src, 1);
      },
      ErrorKind::Shape, {"scatter_add", "[3, 4]", "[3, 5]"});
  expect_error(
      [&] {
        src.scatter_add(Tensor::zeros({3, 4, 1}, DType::U8, dev),
                        Tensor::ones({3, 4, 1}, DType::F32, dev), 1);
      },
      ErrorKind::Shape, {"scatter_add", "[3, 4, 1]"});
  expect_error(
      [&] {
        src.scatter_add(Tensor::zeros({2, 4}, DType::U8, dev),
                        Tensor::ones({2, 4}, DType::F32, dev), 1);
      },
      ErrorKind::Shape, {"scatter_add", "[2, 4]", "[3, 5]"});
  expect_error([&] { src.index_add(ids2, src, 0); }, ErrorKind::Shape, {"index_add", "[3, 5]"});
  expect_error(
      [&] {
        src.index_add(ids, Tensor::ones({2, 5}, DType::F32, dev), 0);
      },
      ErrorKind::Shape, {"index_add", "[2, 5]", "[3, 5]"});
  expect_error(
      [&] {
        src.index_add(ids, Tensor::ones({3, 4}, DType::F32, dev), 0);
      },
      ErrorKind::Shape, {"index_add", "[3, 4]", "[3, 5]"});
  // Value dtypes that differ.
  expect_error([&] { src.scatter_add(ids2, src.to_dtype(DType::F64), 0); }, ErrorKind::DType,
               {"scatter_add", "f32", "f64"});
  expect_error([&] { src.index_add(ids, src.to_dtype(DType::BF16), 0); }, ErrorKind::DType,
               {"index_add", "f32", "bf16"});
  expect_error([&] { Tensor::ones({7}, DType::F32, dev).embedding(ids); }, ErrorKind::Shape,
               {"embedding", "[7]"});
}

TEST_P(Indexing, CatAndStackErrors) {
  const Device dev = device();
  const Tensor a = Tensor::ones({2, 3}, DType::F32, dev);
  expect_error([&] { Tensor::cat({}, 0); }, ErrorKind::Shape, {"cat"});
  expect_error(
      [&] {
        Tensor::cat({a, Tensor::ones({2, 4}, DType::F32, dev)}, 0);
      },
      ErrorKind::Shape, {"cat", "[2, 3]", "[2, 4]"});
  expect_error(
      [&] {
        Tensor::cat({a, Tensor::ones({2, 3, 1}, DType::F32, dev)}, 0);
      },
      ErrorKind::Shape, {"cat", "[2, 3]", "[2, 3, 1]"});
  expect_error(
      [&] {
        Tensor::cat({a, a.to_dtype(DType::F16)}, 0);
      },
      ErrorKind::DType, {"cat", "f32", "f16"});
  expect_error([&] { Tensor::cat({a, a}, 2); }, ErrorKind::OutOfRange, {"cat"});
  expect_error([&] { Tensor::cat({a, a}, -3); }, ErrorKind::OutOfRange, {"cat"});
  expect_error([&] { Tensor::stack({}, 0); }, ErrorKind::Shape, {"stack"});
  expect_error(
      [&] {
        Tensor::stack({a, Tensor::ones({3, 2}, DType::F32, dev)}, 0);
      },
      ErrorKind::Shape, {"stack", "[2, 3]", "[3, 2]"});
  expect_error(
      [&] {
        Tensor::stack({a, a.to_dtype(DType::U8)}, 1);
      },
      ErrorKind::DType, {"stack", "f32", "u8"});
  expect_error([&] { Tensor::stack({a, a}, 3); }, ErrorKind::OutOfRange, {"stack"});
  expect_error([&] { Tensor::stack({a, a}, -4); }, ErrorKind::OutOfRange, {"stack"});
  expect_error(
      [&] {
        a.slice_set(Tensor::ones({2, 2}, DType::F32, dev), 1, 2);
      },
      ErrorKind::OutOfRange, {"slice_set", "[2, 3]"});
}

WICK_INSTANTIATE_DEVICES(Indexing);

}  // namespace
}  // namespace wick::testing
