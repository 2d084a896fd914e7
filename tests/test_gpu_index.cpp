// The GPU runtime's indexing (index_select, embedding, gather, scatter_add, index_add) against a
// float64 reference on each GPU device under test, with every index dtype and strided sources and
// ids; out-of-range ids are refused.
#include "gpu_test_util.h"

namespace wick::testing {
namespace {

constexpr DType kIdDTypes[] = {DType::U8, DType::U32, DType::I64};

class GpuIndex : public GpuDeviceTest {};

TEST_P(GpuIndex, IndexSelectEveryDimAndIdDType) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
    for (DType id_dt : kIdDTypes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " by " + dtype_name(id_dt));
      const Shape s{3, 4, 5};
      const Ref r =
          is_float(dt) ? round_ref(random_ref(rng, s), dt) : random_int_ref(rng, s, -50, 50);
      for (size_t dim = 0; dim < 3; dim++) {
        const Ref ids = random_int_ref(rng, {6}, 0, s[dim] - 1);
        std::vector<int64_t> od = s.dims();
        od[dim] = 6;
        Ref want{Shape(od), {}};
        for_each_index(want.shape, [&](const std::vector<int64_t>& i) {
          std::vector<int64_t> j = i;
          j[dim] = static_cast<int64_t>(ids.v[static_cast<size_t>(i[dim])]);
          want.v.push_back(r.at(j));
        });
        const Tensor src = make_tensor(r, dt, d, kAllVariants[rng.integer(0, 4)]);
        const Tensor it = make_tensor(ids, id_dt, d, Variant::Offset);
        WICK_EXPECT_CLOSE(src.index_select(it, static_cast<int64_t>(dim)), want, Tol{0, 0});
      }
    }
  }
  // embedding: ids of any shape pick rows.
  const Ref table = round_ref(random_ref(rng, {10, 4}), DType::F32);
  const Ref ids = random_int_ref(rng, {2, 3}, 0, 9);
  Ref want{{2, 3, 4}, {}};
  for (double id : ids.v)
    for (int64_t c = 0; c < 4; c++) want.v.push_back(table.at({static_cast<int64_t>(id), c}));
  WICK_EXPECT_CLOSE(make_tensor(table, DType::F32, d).embedding(make_tensor(ids, DType::U32, d)),
                    want, Tol{0, 0});
}

TEST_P(GpuIndex, GatherScatterAddIndexAdd) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Device d = device();
  for (DType dt : {DType::F32, DType::F16, DType::U32}) {
    for (DType id_dt : kIdDTypes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " by " + dtype_name(id_dt));
      auto vals = [&](const Shape& s) {
        return is_float(dt) ? round_ref(random_ref(rng, s), dt) : random_int_ref(rng, s, 0, 40);
      };
      const Ref self = vals({4, 5});
      for (int64_t dim : {0, 1}) {
        const size_t k = static_cast<size_t>(dim);
        // gather: out[i][j] = self[ids[i][j]][j] (dim 0).
        std::vector<int64_t> gd{4, 5};
        gd[k] = 3;
        const Ref gids = random_int_ref(rng, Shape(gd), 0, self.shape[k] - 1);
        Ref gwant{Shape(gd), {}};
        for_each_index(gwant.shape, [&](const std::vector<int64_t>& i) {
          std::vector<int64_t> j = i;
          j[k] = static_cast<int64_t>(gids.at(i));
          gwant.v.push_back(self.at(j));
        });
        const Tensor st = make_tensor(self, dt, d, Variant::Transposed);
        WICK_EXPECT_CLOSE(st.gather(make_tensor(gids, id_dt, d, Variant::Narrowed), dim), gwant,
                          Tol{0, 0});

        // scatter_add with ids/src of the gather's shape; index_add with 1-D ids.
        const Ref src = vals(Shape(gd));
        Ref swant = self;
        for_each_index(src.shape, [&](const std::vector<int64_t>& i) {
          std::vector<int64_t> j = i;
          j[k] = static_cast<int64_t>(gids.at(i));
          swant.v[static_cast<size_t>(swant.index(j))] += src.at(i);
        });
        const Tol tol = is_float(dt) ? Tol{tol_for(dt).atol * 4, tol_for(dt).rtol} : Tol{0, 0};
        WICK_EXPECT_CLOSE(st.scatter_add(make_tensor(gids, id_dt, d),
                                         make_tensor(src, dt, d, Variant::Permuted), dim),
                          round_ref(swant, dt), tol);
        const Ref ids1 = random_int_ref(rng, {3}, 0, self.shape[k] - 1);
        Ref iwant = self;
        for_each_index(src.shape, [&](const std::vector<int64_t>& i) {
          std::vector<int64_t> j = i;
          j[k] = static_cast<int64_t>(ids1.v[static_cast<size_t>(i[k])]);
          iwant.v[static_cast<size_t>(iwant.index(j))] += src.at(i);
        });
        WICK_EXPECT_CLOSE(st.index_add(make_tensor(ids1, id_dt, d), make_tensor(src, dt, d), dim),
                          round_ref(iwant, dt), tol);
      }
    }
  }
}

TEST_P(GpuIndex, OutOfRangeIdsAreRefusedNotRead) {
  const Device d = private_device();
  const Tensor src = Tensor::arange(0, 10, 1, DType::F32, d).reshape({5, 2});
  const Tensor bad = Tensor::from_vec(std::vector<uint32_t>{1, 7}, Shape{2}, d);
  // The device finds the bad id (never reading through it); the op waits for itself and refuses.
  expect_error([&] { src.index_select(bad, 0); }, ErrorKind::OutOfRange,
               {"index_select", "7", "5"});
  // The error is reported once; the device keeps working.
  EXPECT_EQ(
      src.index_select(Tensor::from_vec(std::vector<uint32_t>{4}, Shape{1}, d), 0).to_vec<float>(),
      (std::vector<float>{8, 9}));
  const Tensor neg = Tensor::from_vec(std::vector<int64_t>{-1}, Shape{1}, d);
  expect_error(
      [&] {
        src.index_add(neg, Tensor::ones({1, 2}, DType::F32, d), 0);
      },
      ErrorKind::OutOfRange, {"index_add", "-1"});
}

WICK_INSTANTIATE_GPU_DEVICES(GpuIndex);

}  // namespace
}  // namespace wick::testing
