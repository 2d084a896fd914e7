// Core: dtypes, shapes, views, copies, creation, device identity.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "harness.h"

namespace wick::testing {
namespace {

TEST(DType, F16RoundTripAllBits) {
  for (uint32_t b = 0; b < 65536; b++) {
    const f16 h = f16::from_bits(static_cast<uint16_t>(b));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(f16(f))));
      continue;
    }
    EXPECT_EQ(f16(f).bits, h.bits) << "bits " << b;
  }
}

TEST(DType, F16RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even -> 1.
  EXPECT_EQ(static_cast<float>(f16(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to even -> 1 + 2^-9.
  EXPECT_EQ(static_cast<float>(f16(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(static_cast<float>(f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(f16(65520.0f))));
  EXPECT_EQ(static_cast<float>(f16(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(f16(-INFINITY))));
  EXPECT_LT(static_cast<float>(f16(-INFINITY)), 0);
  EXPECT_TRUE(std::isnan(static_cast<float>(f16(NAN))));
  // Smallest subnormal 2^-24, and half of it rounds to 0 (tie to even).
  EXPECT_EQ(static_cast<float>(f16(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));
  EXPECT_EQ(static_cast<float>(f16(std::ldexp(1.0f, -25))), 0.0f);
  EXPECT_EQ(static_cast<float>(f16(std::ldexp(1.5f, -25))), std::ldexp(1.0f, -24));
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(static_cast<float>(bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(static_cast<float>(bf16(NAN))));
  EXPECT_TRUE(std::isinf(static_cast<float>(bf16(INFINITY))));
  for (uint32_t b = 0; b < 65536; b++) {
    const float f = bf16::to_float(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(bf16(f).bits, b);
    }
  }
}

TEST(DType, F64ToF16HasNoDoubleRounding) {
  // Just above the halfway point between two f16 values, by less than an f32 ulp: a double ->
  // float -> f16 conversion would land on the tie and round down to even.
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(static_cast<float>(from_f64<f16>(x)), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(static_cast<float>(from_f64<bf16>(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40))),
            1.0f + std::ldexp(1.0f, -7));
}

TEST(DType, ParseAndNames) {
  for (DType dt : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(dt)), dt);
  expect_error([] { parse_dtype("f8"); }, ErrorKind::Parse, {"f8"});
}

TEST(Shape, Broadcast) {
  EXPECT_EQ(broadcast_shapes({2, 1, 3}, {4, 1}, "t"), (Shape{2, 4, 3}));
  expect_error(
      [] {
        broadcast_shapes({2, 3}, {4, 3}, "myop");
      },
      ErrorKind::Shape, {"myop", "[2, 3]", "[4, 3]"});
}

class Core : public DeviceTest {};

TEST_P(Core, DeviceIdentity) {
  Device d = device();
  Device d2 = d;
  EXPECT_EQ(d, d2);
  EXPECT_EQ(d.id(), d2.id());
  EXPECT_EQ(Device::parse(GetParam()), d);
}

TEST_P(Core, ViewsShareStorageAndReadRight) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  Device dev = device();
  Ref r = random_ref(rng, {3, 4, 5});
  Tensor t = make_tensor(r, DType::F32, dev);
  Ref rr = round_ref(r, DType::F32);
  Tensor n = t.narrow(1, 1, 2);
  EXPECT_TRUE(n.shares_storage_with(t));
  Ref want{{3, 2, 5}, {}};
  for_each_index(want.shape, [&](const std::vector<int64_t>& i) {
    want.v.push_back(rr.at({i[0], i[1] + 1, i[2]}));
  });
  WICK_EXPECT_CLOSE(n, want, Tol{0, 0});

  Tensor p = t.permute({2, 0, 1});
  EXPECT_TRUE(p.shares_storage_with(t));
  Ref wp{{5, 3, 4}, {}};
  for_each_index(wp.shape, [&](const std::vector<int64_t>& i) {
    wp.v.push_back(rr.at({i[1], i[2], i[0]}));
  });
  WICK_EXPECT_CLOSE(p, wp, Tol{0, 0});

  Tensor tt = t.transpose(0, 2).contiguous();
  EXPECT_FALSE(tt.shares_storage_with(t));
  Ref wt{{5, 4, 3}, {}};
  for_each_index(wt.shape, [&](const std::vector<int64_t>& i) {
    wt.v.push_back(rr.at({i[2], i[1], i[0]}));
  });
  WICK_EXPECT_CLOSE(tt, wt, Tol{0, 0});

  auto chunks = t.chunk(2, 2);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].shape(), (Shape{3, 4, 3}));
  EXPECT_EQ(chunks[1].shape(), (Shape{3, 4, 2}));
  Ref wc{{3, 4, 2}, {}};
  for_each_index(wc.shape, [&](const std::vector<int64_t>& i) {
    wc.v.push_back(rr.at({i[0], i[1], i[2] + 3}));
  });
  WICK_EXPECT_CLOSE(chunks[1], wc, Tol{0, 0});

  EXPECT_EQ(t.unsqueeze(1).shape(), (Shape{3, 1, 4, 5}));
  EXPECT_EQ(t.unsqueeze(-1).shape(), (Shape{3, 4, 5, 1}));
  EXPECT_EQ(t.unsqueeze(0).squeeze(0).shape(), t.shape());
  EXPECT_EQ(t.flatten(1).shape(), (Shape{3, 20}));
  EXPECT_EQ(t.flatten_all().shape(), (Shape{60}));
  WICK_EXPECT_CLOSE(t.flatten_all(), (Ref{{60}, rr.v}), Tol{0, 0});
  EXPECT_EQ(t.reshape({-1, 10}).shape(), (Shape{6, 10}));
  EXPECT_TRUE(t.reshape({6, 10}).shares_storage_with(t));
  // Reshape of a non-contiguous view copies.
  Tensor rs = t.transpose(0, 1).reshape({12, 5});
  EXPECT_FALSE(rs.shares_storage_with(t));
  Ref wr{{12, 5}, {}};
  for_each_index(Shape{4, 3, 5}, [&](const std::vector<int64_t>& i) {
    wr.v.push_back(rr.at({i[1], i[0], i[2]}));
  });
  WICK_EXPECT_CLOSE(rs, wr, Tol{0, 0});

  Tensor b = Tensor::from_vec(std::vector<float>{1, 2, 3}, {3, 1}, dev).broadcast_as({2, 3, 4});
  EXPECT_EQ(b.layout().strides[0], 0);
  Ref wb{{2, 3, 4}, {}};
  for_each_index(wb.shape, [&](const std::vector<int64_t>& i) {
    wb.v.push_back(static_cast<double>(i[1] + 1));
  });
  WICK_EXPECT_CLOSE(b, wb, Tol{0, 0});
  WICK_EXPECT_CLOSE(t.get(2).get(-1),
                    (Ref{{5}, std::vector<double>(rr.v.begin() + 55, rr.v.end())}), Tol{0, 0});
}

// reshape is a view exactly when the source's elements, in row-major order, lie at strides of
// the new shape (checked against offsets computed here), and reads the same values either way.
TEST_P(Core, ReshapeIsAViewExactlyWhenStridesAllow) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  Device dev = device();
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng.gen());
  };
  int views = 0, copies = 0;
  for (int iter = 0; iter < 300; iter++) {
    std::vector<int64_t> dims(static_cast<size_t>(pick(1, 4)));
    for (auto& d : dims) d = pick(1, 4);
    Ref r = random_ref(rng, Shape(dims));
    Tensor t = make_tensor(r, DType::F32, dev);
    // Some views of it: a permutation, a narrowed dim, a broadcast size-1 dim.
    std::vector<int64_t> perm(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    if (pick(0, 1)) std::shuffle(perm.begin(), perm.end(), rng.gen());
    t = t.permute(perm);
    const int64_t nd = pick(0, static_cast<int64_t>(dims.size()) - 1);
    if (t.dim(nd) > 1 && pick(0, 1)) {
      const int64_t len = pick(1, t.dim(nd) - 1);
      t = t.narrow(nd, pick(0, t.dim(nd) - len), len);
    }
    if (pick(0, 3) == 0) {
      std::vector<int64_t> b = t.dims();
      b.insert(b.begin() + pick(0, static_cast<int64_t>(b.size())), 1);
      t = t.reshape(Shape(b));
      for (auto& d : b)
        if (d == 1 && pick(0, 1)) d = pick(2, 3);
      t = t.broadcast_as(Shape(b));
    }
    // A shape of the same count: its prime factors dealt into up to 4 dims, with 1s.
    int64_t n = t.numel();
    std::vector<int64_t> to(static_cast<size_t>(pick(1, 4)), 1);
    for (int64_t f = 2; n > 1; f++)
      while (n % f == 0) {
        to[static_cast<size_t>(pick(0, static_cast<int64_t>(to.size()) - 1))] *= f;
        n /= f;
      }
    // The oracle: element offsets of t in row-major order; a view needs offsets that are
    // offset0 + sum_j i_j s_j over `to`'s index, with s_j read off at the unit indices.
    const Layout& l = t.layout();
    std::vector<int64_t> offs;
    for_each_index(l.shape, [&](const std::vector<int64_t>& i) {
      int64_t o = l.start_offset;
      for (size_t d = 0; d < i.size(); d++) o += i[d] * l.strides[d];
      offs.push_back(o);
    });
    std::vector<int64_t> s(to.size(), 0);
    int64_t unit = 1;
    for (size_t j = to.size(); j-- > 0;) {
      if (to[j] > 1) s[j] = offs[static_cast<size_t>(unit)] - offs[0];
      unit *= to[j];
    }
    bool viewable = true;
    size_t e = 0;
    for_each_index(Shape(to), [&](const std::vector<int64_t>& i) {
      int64_t o = offs[0];
      for (size_t j = 0; j < i.size(); j++) o += i[j] * s[j];
      viewable = viewable && o == offs[e++];
    });
    const Tensor got = t.reshape(Shape(to));
    SCOPED_TRACE(l.str() + " -> " + Shape(to).str());
    EXPECT_EQ(got.shape(), Shape(to));
    EXPECT_EQ(got.shares_storage_with(t), viewable);
    EXPECT_EQ(got.to_vec<float>(), t.to_vec<float>());
    (viewable ? views : copies)++;
  }
  EXPECT_GT(views, 30);  // both cases drawn often
  EXPECT_GT(copies, 30);
}

TEST_P(Core, ViewErrors) {
  Device dev = device();
  Tensor t = Tensor::zeros({3, 4}, DType::F32, dev);
  expect_error([&] { t.narrow(1, 3, 2); }, ErrorKind::OutOfRange, {"narrow", "[3, 4]"});
  expect_error([&] { t.narrow(2, 0, 1); }, ErrorKind::OutOfRange, {"narrow"});
  expect_error([&] { t.reshape({5, 3}); }, ErrorKind::Shape, {"reshape", "[3, 4]", "[5, 3]"});
  expect_error([&] { t.reshape({-1, -1}); }, ErrorKind::Shape, {"reshape"});
  expect_error([&] { t.permute({0, 0}); }, ErrorKind::Shape, {"permute"});
  expect_error([&] { t.permute({0}); }, ErrorKind::Shape, {"permute"});
  expect_error(
      [&] {
        t.broadcast_as({2, 4});
      },
      ErrorKind::Shape, {"broadcast_as", "[3, 4]", "[2, 4]"});
  expect_error([&] { t.transpose(0, 5); }, ErrorKind::OutOfRange, {"transpose"});
  expect_error([&] { t.unsqueeze(4); }, ErrorKind::OutOfRange, {"unsqueeze"});
  expect_error([&] { t.chunk(0, 0); }, ErrorKind::OutOfRange, {"chunk"});
  expect_error([&] { t.get(3); }, ErrorKind::OutOfRange, {"get"});
  expect_error([&] { t.to_scalar<float>(); }, ErrorKind::Shape, {"to_scalar"});
  expect_error(
      [&] {
        Tensor::from_vec(std::vector<float>{1, 2}, {3}, dev);
      },
      ErrorKind::Shape, {"from_vec"});
}

// The seed's `storage` case: copy() must never share memory with the original.
TEST_P(Core, CopyIsIndependentOfInPlaceWrites) {
  Device dev = device();
  for (DType dt : kFloatDTypes) {
    Tensor orig = Tensor::zeros({4}, dt, dev);
    Tensor c = orig.copy();
    EXPECT_FALSE(c.shares_storage_with(orig));
    orig.slice_set(Tensor::ones({2}, dt, dev), 0, 0);
    EXPECT_EQ(orig.to_vec<float>(), (std::vector<float>{1, 1, 0, 0}));
    EXPECT_EQ(c.to_vec<float>(), (std::vector<float>{0, 0, 0, 0}));
  }
}

TEST_P(Core, CreationOps) {
  Device dev = device();
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    EXPECT_EQ(Tensor::zeros({2, 3}, dt, dev).to_vec<double>(), std::vector<double>(6, 0.0));
    EXPECT_EQ(Tensor::ones({2, 3}, dt, dev).to_vec<double>(), std::vector<double>(6, 1.0));
    EXPECT_EQ(Tensor::full(7, {3}, dt, dev).to_vec<double>(), std::vector<double>(3, 7.0));
    EXPECT_EQ(Tensor::arange(5, dt, dev).to_vec<double>(), (std::vector<double>{0, 1, 2, 3, 4}));
    EXPECT_EQ(Tensor::arange(2, 11, 3, dt, dev).to_vec<double>(), (std::vector<double>{2, 5, 8}));
    EXPECT_EQ(Tensor::eye(3, dt, dev).to_vec<double>(),
              (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
    EXPECT_EQ(Tensor::scalar<double>(3.0, dev).to_dtype(dt).to_scalar<double>(), 3.0);
  }
  EXPECT_EQ(Tensor::arange(0.5, -1.0, -0.5, DType::F32, dev).to_vec<float>(),
            (std::vector<float>{0.5f, 0.0f, -0.5f}));
  expect_error([&] { Tensor::arange(0, 1, 0, DType::F32, dev); }, ErrorKind::OutOfRange,
               {"arange"});
  expect_error([&] { Tensor::rand(0, 1, {2}, DType::U8, dev); }, ErrorKind::DType, {"rand", "u8"});
}

TEST_P(Core, RandIsSeededAndInRange) {
  Device dev = device();
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    dev.set_seed(42);
    auto a = Tensor::rand(-1, 3, {4096}, dt, dev).to_vec<double>();
    dev.set_seed(42);
    auto b = Tensor::rand(-1, 3, {4096}, dt, dev).to_vec<double>();
    EXPECT_EQ(a, b);
    double mean = 0;
    for (double x : a) {
      EXPECT_GE(x, -1);
      EXPECT_LT(x, 3);
      mean += x / a.size();
    }
    EXPECT_NEAR(mean, 1.0, 0.1);
    auto n = Tensor::randn(2, 3, {8192}, dt, dev).to_vec<double>();
    double m = 0, v = 0;
    for (double x : n) m += x / n.size();
    for (double x : n) v += (x - m) * (x - m) / n.size();
    EXPECT_NEAR(m, 2, 0.15);
    EXPECT_NEAR(std::sqrt(v), 3, 0.15);
  }
}

TEST_P(Core, ToDtypeAllPairs) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  Device dev = device();
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes)
      for (Variant var : kAllVariants) {
        SCOPED_TRACE(std::string(dtype_name(from)) + "->" + dtype_name(to) + " " +
                     variant_name(var));
        Ref r =
            is_float(from) ? random_ref(rng, {3, 5}, -3, 300) : random_int_ref(rng, {3, 5}, 0, 255);
        Ref in = round_ref(r, from);
        Tensor t = make_tensor(in, from, dev, var).to_dtype(to);
        EXPECT_EQ(t.dtype(), to);
        WICK_EXPECT_CLOSE(t, round_ref(in, to), Tol{0, 0});
      }
}

TEST_P(Core, ToDeviceRoundTrip) {
  Device dev = device();
  Tensor a = Tensor::arange(10, DType::F32, dev).reshape({2, 5}).t();
  Tensor c = a.to_device(Device::cpu()).to_device(dev);
  EXPECT_EQ(c.device(), dev);
  EXPECT_EQ(c.to_vec<float>(), a.to_vec<float>());
}

TEST_P(Core, InPlaceSetOps) {
  Device dev = device();
  Tensor t = Tensor::zeros({3, 4}, DType::F32, dev);
  Tensor view = t.narrow(1, 1, 2);
  view.const_set(5);
  EXPECT_EQ(t.to_vec<float>(), (std::vector<float>{0, 5, 5, 0, 0, 5, 5, 0, 0, 5, 5, 0}));
  t.transpose(0, 1).narrow(0, 1, 1).zero_set();
  EXPECT_EQ(t.to_vec<float>(), (std::vector<float>{0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 5, 0}));
  Tensor u = Tensor::arange(8, DType::F32, dev).reshape({4, 2});
  t.slice_set(u.t(), 0, 1);  // a strided source
  EXPECT_EQ(t.to_vec<float>(), (std::vector<float>{0, 0, 5, 0, 0, 2, 4, 6, 1, 3, 5, 7}));
  expect_error([&] { t.slice_set(u, 0, 2); }, ErrorKind::Shape, {"slice_set"});
  expect_error(
      [&] {
        t.slice_set(Tensor::zeros({2, 4}, DType::F32, dev), 0, 2);
      },
      ErrorKind::OutOfRange, {"slice_set"});
  expect_error(
      [&] {
        t.slice_set(Tensor::zeros({1, 4}, DType::F16, dev), 0, 0);
      },
      ErrorKind::DType, {"slice_set", "f16"});
}

WICK_INSTANTIATE_DEVICES(Core);

}  // namespace
}  // namespace wick::testing
