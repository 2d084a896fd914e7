// arg_sort_last_dim: every dtype and layout, both directions. Each result row is checked to be a
// permutation that sorts the row, stably (equal values keep their index order), with NaN last in
// ascending and first in descending order, and -0.0 equal to +0.0.
#include <cmath>
#include <limits>

#include "harness.h"

namespace wick::testing {
namespace {

// a strictly before b in the sort order (NaN is the largest value; -0 == +0).
bool before(double a, double b, bool ascending) {
  if (std::isnan(a) || std::isnan(b))
    return ascending ? !std::isnan(a) && std::isnan(b) : std::isnan(a) && !std::isnan(b);
  return ascending ? a < b : a > b;
}

void check_arg_sort(const Tensor& x, const Ref& xr, bool ascending) {
  SCOPED_TRACE(::testing::Message() << x.dtype() << " " << x.layout().str()
                                    << (ascending ? " ascending" : " descending"));
  const Tensor idx = x.arg_sort_last_dim(ascending);
  ASSERT_EQ(idx.dtype(), DType::U32);
  ASSERT_EQ(idx.shape(), xr.shape);
  const std::vector<uint32_t> got = idx.to_vec<uint32_t>();
  const int64_t n = xr.shape[xr.shape.rank() - 1];
  for (int64_t b = 0; b < xr.numel(); b += n) {
    std::vector<bool> seen(static_cast<size_t>(n), false);
    for (int64_t j = 0; j < n; j++) {
      const uint32_t k = got[static_cast<size_t>(b + j)];
      ASSERT_LT(k, n) << "row " << b / n;
      ASSERT_FALSE(seen[k]) << "index " << k << " twice in row " << b / n;
      seen[k] = true;
      if (j == 0) continue;
      const uint32_t p = got[static_cast<size_t>(b + j - 1)];
      const double vp = xr.v[static_cast<size_t>(b + p)], vk = xr.v[static_cast<size_t>(b + k)];
      ASSERT_FALSE(before(vk, vp, ascending))
          << "row " << b / n << " position " << j << ": " << vp << " then " << vk;
      if (!before(vp, vk, ascending)) {
        ASSERT_LT(p, k) << "unstable tie in row " << b / n << " position " << j;
      }
    }
  }
}

class ArgSort : public DeviceTest {};

TEST_P(ArgSort, EveryDTypeAndLayoutBothDirections) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : compute_dtypes(device()))
    for (Variant v : kAllVariants)
      for (int rep = 0; rep < 2; rep++) {
        SCOPED_TRACE(variant_name(v));
        const Shape s = random_shape(rng, 1, 3, 12);
        // rep 1 draws from 4 values: ties everywhere, which only a stable sort orders right.
        Ref r = rep ? random_int_ref(rng, s, 0, 3) : random_ref(rng, s, -100, 100);
        if (dt == DType::I64 && !rep)
          for (double& e : r.v) e *= 1e15;  // past 2^53 would lose exactness in a double key
        const Ref xr = round_ref(r, dt);
        const Tensor x = make_tensor(xr, dt, device(), v);
        check_arg_sort(x, xr, true);
        check_arg_sort(x, xr, false);
      }
}

TEST_P(ArgSort, NaNInfinitiesAndSignedZeros) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  for (DType dt : kFloatDTypes) {
    Ref xr = round_ref(random_ref(rng, {3, 40}), dt);
    for (size_t j : {3, 17, 29}) xr.v[j] = nan;
    xr.v[40 + 5] = inf;
    xr.v[40 + 6] = -inf;
    xr.v[40 + 7] = nan;
    for (size_t j = 80; j < 120; j += 2) xr.v[j] = j % 4 ? 0.0 : -0.0;
    const Tensor x = make_tensor(xr, dt, device(), Variant::Narrowed);
    check_arg_sort(x, xr, true);
    check_arg_sort(x, xr, false);
    // NaN goes to the end ascending, the front descending, in index order.
    const std::vector<uint32_t> up = x.arg_sort_last_dim(true).to_vec<uint32_t>();
    EXPECT_EQ(up[37], 3u);
    EXPECT_EQ(up[38], 17u);
    EXPECT_EQ(up[39], 29u);
    const std::vector<uint32_t> down = x.arg_sort_last_dim(false).to_vec<uint32_t>();
    EXPECT_EQ(down[0], 3u);
    EXPECT_EQ(down[40], 7u);
    EXPECT_EQ(down[41], 5u);
  }
}

TEST_P(ArgSort, LargeThreadedAndBroadcast) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Ref xr = round_ref(random_ref(rng, {400, 300}, -1000, 1000), DType::F32);
  check_arg_sort(make_tensor(xr, DType::F32, device(), Variant::Transposed), xr, true);
  // Stride-0 rows (all equal): the identity permutation.
  const Ref one = round_ref(random_ref(rng, {5, 1}), DType::BF16);
  const Tensor b = make_broadcast(one, {5, 9}, DType::BF16, device());
  Ref br{{5, 9}, {}};
  for (double v : one.v) br.v.insert(br.v.end(), 9, v);
  check_arg_sort(b, br, false);
}

TEST_P(ArgSort, Errors) {
  expect_error([&] { Tensor::full(1.0, {}, DType::F32, device()).arg_sort_last_dim(); },
               ErrorKind::Shape, {"arg_sort_last_dim", "scalar"});
}

WICK_INSTANTIATE_DEVICES(ArgSort);

}  // namespace
}  // namespace wick::testing
