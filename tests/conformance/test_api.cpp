// The API a libtorch or candle user reaches for first: printing values, host memory without a
// copy (from_blob, data_ptr), the i32 dtype, scalar and comparison operators, compound
// assignment, whole-tensor reductions, var/std, cumsum, topk, squeeze(), *_like, linspace and
// arange forms. Float64 references on fresh random inputs, on every device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <sstream>

#include "harness.h"

namespace wick::testing {
namespace {

class Api : public DeviceTest {};

// The values part of to_string (everything before the last line, str()).
std::string body(const Tensor& t) {
  const std::string s = t.to_string();
  const size_t nl = s.rfind('\n');
  EXPECT_EQ(s.substr(nl + 1), t.str());
  return s.substr(0, nl);
}

// ---- printing ---------------------------------------------------------------------------------

TEST_P(Api, PrintsValuesOfEveryDType) {
  const Device dev = device();
  const Ref r{Shape{2, 3}, {0, 1, 2, 3, 4, 5}};
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    // Transposed: the printed order is the view's, not the storage's.
    const Tensor t = make_tensor(r, dt, dev, Variant::Transposed);
    EXPECT_EQ(body(t),
              is_float(dt) ? "[[0., 1., 2.],\n [3., 4., 5.]]" : "[[0, 1, 2],\n [3, 4, 5]]");
    std::ostringstream os;
    os << t;
    EXPECT_EQ(os.str(), t.to_string());
    EXPECT_NE(t.to_string().find(dtype_name(dt)), std::string::npos);
    EXPECT_NE(t.to_string().find(dev.name()), std::string::npos);
  }
}

TEST_P(Api, PrintsFloatsInOneFormat) {
  const Device dev = device();
  const auto f32 = [&](std::vector<float> v) {
    const auto n = static_cast<int64_t>(v.size());
    return Tensor::from_vec(v, {n}, dev);
  };
  EXPECT_EQ(body(f32({1.5f, -2.25f, 10.0f})), "[ 1.5000, -2.2500, 10.0000]");
  EXPECT_EQ(body(f32({1e-5f, 1.0f})), "[1.0000e-05, 1.0000e+00]");
  EXPECT_EQ(body(f32({1.0f, 5000.5f})), "[1.0000e+00, 5.0005e+03]");
  EXPECT_EQ(body(f32({std::nanf(""), INFINITY, -1.5f})), "[    nan,     inf, -1.5000]");
  EXPECT_EQ(body(f32({0.0f, 0.0f})), "[0., 0.]");
  EXPECT_EQ(body(Tensor::scalar(2.5, dev)), "2.5000");
  EXPECT_EQ(body(Tensor::zeros({0, 3}, DType::F32, dev)), "[]");
  EXPECT_EQ(body(Tensor::arange(8, DType::I64, dev).reshape({2, 2, 2})),
            "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]");
  // Extreme integers survive (not read through a double).
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(body(Tensor::from_vec<int64_t>({big, -big}, {2}, dev)),
            "[ 9223372036854775807, -9223372036854775807]");
  // Long rows wrap at 80 columns.
  const std::string wrapped = body(Tensor::arange(30, DType::F32, dev));
  EXPECT_NE(wrapped.find(",\n "), std::string::npos) << wrapped;
  EXPECT_EQ(wrapped.substr(0, 11), "[ 0.,  1., ");
  // An undefined tensor prints.
  std::ostringstream os;
  os << Tensor();
  EXPECT_EQ(os.str(), "Tensor[undefined]");
}

TEST_P(Api, PrintsLargeTensorsSummarised) {
  const Device dev = device();
  EXPECT_EQ(body(Tensor::arange(2000, DType::F32, dev)),
            "[   0.,    1.,    2., ..., 1997., 1998., 1999.]");
  // 1000 elements print in full; 1001 do not.
  EXPECT_EQ(body(Tensor::arange(1000, DType::I32, dev)).find("..."), std::string::npos);
  const std::string s = body(Tensor::arange(100 * 100, DType::I64, dev).reshape({100, 100}));
  EXPECT_EQ(s,
            "[[   0,    1,    2, ...,   97,   98,   99],\n"
            " [ 100,  101,  102, ...,  197,  198,  199],\n"
            " [ 200,  201,  202, ...,  297,  298,  299],\n"
            " ...,\n"
            " [9700, 9701, 9702, ..., 9797, 9798, 9799],\n"
            " [9800, 9801, 9802, ..., 9897, 9898, 9899],\n"
            " [9900, 9901, 9902, ..., 9997, 9998, 9999]]");
}

// ---- host memory without a copy ---------------------------------------------------------------

TEST(ApiFromBlob, UsesTheMemoryInPlaceAndRunsTheDeleterOnce) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const size_t size = dtype_size(dt);
    const Shape shape{3, 4};
    const Ref r = round_ref(random_int_ref(rng, shape, 0, 100), dt);
    auto* mem = static_cast<std::byte*>(std::aligned_alloc(64, 64 * size));
    Tensor::from_vec(r.v, shape).to_dtype(dt).read_into(mem, dt);
    int deleted = 0;
    void* deleted_ptr = nullptr;
    {
      Tensor t = Tensor::from_blob(mem, shape, dt, [&](void* p) {
        deleted++;
        deleted_ptr = p;
        std::free(p);
      });
      EXPECT_EQ(t.data_ptr(), mem);  // no copy
      EXPECT_EQ(to_ref(t).v, r.v);
      // A view shares the memory: its pointer is offset into it.
      Tensor view = t.narrow(0, 1, 2).narrow(1, 2, 2);
      EXPECT_EQ(view.data_ptr(), mem + (4 + 2) * size);
      EXPECT_EQ(view.to_vec_f64(), (std::vector<double>{r.v[6], r.v[7], r.v[10], r.v[11]}));
      // Writes go both ways.
      t.const_set(7);
      EXPECT_EQ(Tensor::from_data(mem, dt, shape).to_vec_f64(), std::vector<double>(12, 7.0));
      Tensor::from_vec(std::vector<double>(12, 3.0), shape).to_dtype(dt).read_into(mem, dt);
      EXPECT_EQ(view.to_vec_f64(), std::vector<double>(4, 3.0));
      t = Tensor();  // the view still holds the memory
      EXPECT_EQ(deleted, 0);
      EXPECT_EQ(view.to_vec_f64(), std::vector<double>(4, 3.0));
      const Tensor copy = view;
      view = Tensor();
      EXPECT_EQ(deleted, 0);
    }
    EXPECT_EQ(deleted, 1);
    EXPECT_EQ(deleted_ptr, mem);
  }
}

TEST(ApiFromBlob, TypedDataPtrAndErrors) {
  alignas(8) float buf[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_blob(buf, {2, 3}, DType::F32);  // no deleter: the caller owns buf
  EXPECT_EQ(t.data_ptr<float>(), buf);
  const Tensor& ct = t;
  EXPECT_EQ(ct.data_ptr<float>()[4], 5.0f);
  t.data_ptr<float>()[0] = 10;
  EXPECT_EQ(t.to_vec<float>()[0], 10.0f);
  expect_error([&] { t.data_ptr<double>(); }, ErrorKind::DType, {"data_ptr", "f64", "f32"});
  // Misaligned memory is refused, and the deleter of a refused blob does not run.
  int deleted = 0;
  expect_error(
      [&] {
        Tensor::from_blob(reinterpret_cast<char*>(buf) + 2, {2}, DType::F32,
                          [&](void*) { deleted++; });
      },
      ErrorKind::Unsupported, {"from_blob", "aligned", "4 bytes"});
  EXPECT_EQ(deleted, 0);
  expect_error([&] { Tensor::from_blob(nullptr, {2}, DType::F32); }, ErrorKind::OutOfRange,
               {"from_blob", "null"});
  EXPECT_EQ(Tensor::from_blob(nullptr, {0}, DType::F32).numel(), 0);
  const Tensor u;
  expect_error([&] { u.data_ptr(); }, ErrorKind::Shape, {"undefined tensor"});
}

// Memory shared with other code: host memory on the CPU, device memory on CUDA
// (test_cuda_memory.cpp); other devices' memory has no address, and they say so.
TEST_P(Api, DataPtrAndFromBlobOfADeviceWithoutAddressesNameTheDevice) {
  const Device dev = device();
  const Tensor t = Tensor::ones({2}, DType::F32, dev);
  if (dev.is_cpu() || dev.kind() == DeviceKind::Cuda) {
    EXPECT_NE(t.data_ptr(), nullptr);
    return;
  }
  expect_error([&] { t.data_ptr(); }, ErrorKind::Device,
               {"data_ptr", dev.name(), "no address", "to_device"});
  alignas(8) float buf[2] = {1, 2};
  int deleted = 0;
  expect_error([&] { Tensor::from_blob(buf, {2}, DType::F32, dev, [&](void*) { deleted++; }); },
               ErrorKind::Device, {"from_blob", "to_device"});
  EXPECT_EQ(deleted, 0);
}

// ---- i32 --------------------------------------------------------------------------------------

constexpr double kI32Min = std::numeric_limits<int32_t>::min();
constexpr double kI32Max = std::numeric_limits<int32_t>::max();

double wrap_i32(double v) {
  return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v))));
}

TEST_P(Api, I32ConvertsToAndFromEveryDType) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Shape s = random_shape(rng, 1, 3, 9);
  // Values around and past the i32 range, fractions and negatives: each conversion saturates
  // and truncates as to_dtype does on the host (from_f64).
  Ref r = random_ref(rng, s, -3e9, 3e9);
  for (size_t i = 0; i < r.v.size(); i += 3) r.v[i] = std::trunc(r.v[i] / 1e7) + 0.5;
  for (DType from : kAllDTypes)
    for (Variant v : kAllVariants) {
      SCOPED_TRACE(::testing::Message() << dtype_name(from) << " " << variant_name(v));
      const Ref src = round_ref(r, from);
      const Tensor to = make_tensor(src, from, dev, v).to_dtype(DType::I32);
      ASSERT_EQ(to.dtype(), DType::I32);
      EXPECT_TRUE(close(to, round_ref(src, DType::I32), {0, 0}));
      const Ref ints = round_ref(src, DType::I32);
      EXPECT_TRUE(close(make_tensor(ints, DType::I32, dev, v).to_dtype(from), round_ref(ints, from),
                        {0, 0}));
    }
}

TEST_P(Api, I32RunsEveryOpOnTheCpuAndGpusRefuseItByName) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Shape s = random_shape(rng, 2, 3, 7);
  const Ref ar = random_int_ref(rng, s, -1000, 1000), br = random_int_ref(rng, s, 1, 50);
  const Tensor a = make_tensor(ar, DType::I32, dev, Variant::Transposed);
  const Tensor b = make_tensor(br, DType::I32, dev);
  const Tensor ids = make_tensor(random_int_ref(rng, Shape{5}, 0, s[0] - 1), DType::I32, dev);
  using Op = std::function<Tensor()>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"add", [&] { return a + b; }},
      {"mul", [&] { return a * b; }},
      {"div", [&] { return a / b; }},
      {"neg", [&] { return -a; }},
      {"abs", [&] { return a.abs(); }},
      {"lt", [&] { return a < b; }},
      {"where_cond", [&] { return (a < b).where_cond(a, b); }},
      {"sum", [&] { return a.sum(0); }},
      {"max", [&] { return a.max(-1); }},
      {"argmin", [&] { return a.argmin(0); }},
      {"index_select", [&] { return a.index_select(ids, 0); }},
      {"matmul", [&] { return a.matmul(b.t()); }},
  };
  if (!dev.is_cpu()) {
    for (const auto& [name, op] : ops) {
      SCOPED_TRACE(name);
      expect_error([&] { op(); }, ErrorKind::Unsupported, {"i32", dev.name()});
    }
    return;
  }
  const auto ref = [&](auto f) {
    Ref out{s, {}};
    for (size_t i = 0; i < ar.v.size(); i++) out.v.push_back(f(ar.v[i], br.v[i]));
    return out;
  };
  const Tol exact{0, 0};
  WICK_EXPECT_CLOSE(a + b, ref([](double x, double y) { return x + y; }), exact);
  WICK_EXPECT_CLOSE(a * b, ref([](double x, double y) { return x * y; }), exact);
  WICK_EXPECT_CLOSE(a / b, ref([](double x, double y) { return std::trunc(x / y); }), exact);
  WICK_EXPECT_CLOSE(-a, ref([](double x, double) { return -x; }), exact);
  WICK_EXPECT_CLOSE(a.abs(), ref([](double x, double) { return std::abs(x); }), exact);
  WICK_EXPECT_CLOSE((a < b), ref([](double x, double y) { return double(x < y); }), exact);
  WICK_EXPECT_CLOSE((a < b).where_cond(a, b), ref([](double x, double y) { return x < y ? x : y; }),
                    exact);
  // Arithmetic wraps in 32 bits, as u32 does.
  const Tensor big = Tensor::full(kI32Max, {2}, DType::I32);
  EXPECT_EQ((big + 1.0).to_vec<int32_t>(), (std::vector<int32_t>(2, INT32_MIN)));
  EXPECT_EQ(wrap_i32(kI32Max + 1), kI32Min);
  // Reductions, indexing, matmul against their float64 forms.
  WICK_EXPECT_CLOSE(a.sum(std::vector<int64_t>{0, 1}),
                    to_ref(a.to_dtype(DType::F64).sum(std::vector<int64_t>{0, 1})), exact);
  WICK_EXPECT_CLOSE(a.max(-1), to_ref(a.to_dtype(DType::F64).max(-1)), exact);
  WICK_EXPECT_CLOSE(a.argmin(0), to_ref(a.to_dtype(DType::F64).argmin(0)), exact);
  WICK_EXPECT_CLOSE(a.index_select(ids, 0), to_ref(a.to_dtype(DType::F64).index_select(ids, 0)),
                    exact);
  std::vector<int64_t> gd = s.dims();
  gd[0] = 5;
  const Tensor gids =
      make_tensor(random_int_ref(rng, Shape(gd), 0, s[0] - 1), DType::I32, dev, Variant::Permuted);
  WICK_EXPECT_CLOSE(a.gather(gids, 0),
                    to_ref(a.to_dtype(DType::F64).gather(gids.to_dtype(DType::I64), 0)), exact);
  WICK_EXPECT_CLOSE(a.matmul(b.t()), ref_matmul(ar, to_ref(b.t())), exact);
  WICK_EXPECT_CLOSE(Tensor::arange(-3.0, 4.0, 2.0, DType::I32), (Ref{Shape{4}, {-3, -1, 1, 3}}),
                    exact);
  EXPECT_EQ(Tensor::scalar<int32_t>(-7).to_scalar<int32_t>(), -7);
  EXPECT_EQ(parse_dtype("i32"), DType::I32);
}

// ---- scalar and comparison operators ----------------------------------------------------------

TEST_P(Api, ScalarOperatorsOnEitherSide) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Shape s = random_shape(rng, 1, 3, 6);
    const Ref ar = round_ref(random_ref(rng, s, 0.5, 3), dt);
    const Tensor a = make_tensor(ar, dt, dev, Variant::Transposed);
    const auto ref = [&](auto f) {
      Ref out{s, {}};
      for (double x : ar.v) out.v.push_back(to_f64(round_ref(Ref{Shape{}, {f(x)}}, dt).v[0]));
      return out;
    };
    // Each is the exact result rounded (f16/bf16: through f32, so within 2 units of roundoff).
    const Tol t{0, 2 * unit_roundoff(dt)};
    WICK_EXPECT_CLOSE(2.0 * a, ref([](double x) { return 2 * x; }), t);
    WICK_EXPECT_CLOSE(a * 2, ref([](double x) { return 2 * x; }), t);
    WICK_EXPECT_CLOSE(1.0 - a, ref([](double x) { return 1 - x; }), t);
    WICK_EXPECT_CLOSE(a - 1, ref([](double x) { return x - 1; }), t);
    WICK_EXPECT_CLOSE(1 + a, ref([](double x) { return 1 + x; }), t);
    WICK_EXPECT_CLOSE(a / 2, ref([](double x) { return x / 2; }), t);
    WICK_EXPECT_CLOSE(2 / a, ref([](double x) { return 2 / x; }), t);
    // Comparisons: u8, 1 where true, either side of a scalar.
    const Tensor lt = a < 1.5;
    EXPECT_EQ(lt.dtype(), DType::U8);
    WICK_EXPECT_CLOSE(lt, ref([](double x) { return double(x < 1.5); }), t);
    WICK_EXPECT_CLOSE(1.5 > a, ref([](double x) { return double(x < 1.5); }), t);
    WICK_EXPECT_CLOSE(a >= 1.5, ref([](double x) { return double(x >= 1.5); }), t);
    WICK_EXPECT_CLOSE(1.5 <= a, ref([](double x) { return double(x >= 1.5); }), t);
    WICK_EXPECT_CLOSE(a == a, ref([](double) { return 1.0; }), t);
    WICK_EXPECT_CLOSE(a != a, ref([](double) { return 0.0; }), t);
    WICK_EXPECT_CLOSE(a == ar.v[0], ref([&](double x) { return double(x == ar.v[0]); }), t);
    WICK_EXPECT_CLOSE(ar.v[0] != a, ref([&](double x) { return double(x != ar.v[0]); }), t);
    WICK_EXPECT_CLOSE(a > a.sqr(), ref([&](double x) {
                        return double(x > to_f64(round_ref(Ref{Shape{}, {x * x}}, dt).v[0]));
                      }),
                      t);
  }
}

TEST_P(Api, CompoundAssignmentRebindsTheHandle) {
  const Device dev = device();
  Tensor a = Tensor::full(3, {2, 2}, DType::F32, dev);
  const Tensor before = a, view = a.narrow(0, 0, 1);
  const Tensor b = Tensor::full(2, {2, 2}, DType::F32, dev);
  a += b;
  EXPECT_EQ(a.to_vec<float>(), std::vector<float>(4, 5));
  a -= 1;
  a *= b;
  a /= 4;
  EXPECT_EQ(a.to_vec<float>(), std::vector<float>(4, 2));
  a *= 3;
  a -= b;
  a += 0.5;
  EXPECT_EQ(a.to_vec<float>(), std::vector<float>(4, 4.5));
  a /= b;
  EXPECT_EQ(a.to_vec<float>(), std::vector<float>(4, 2.25));
  // The old tensor and its views are untouched: a now names a new one.
  EXPECT_FALSE(a.shares_storage_with(before));
  EXPECT_EQ(before.to_vec<float>(), std::vector<float>(4, 3));
  EXPECT_EQ(view.to_vec<float>(), std::vector<float>(2, 3));
  // A failed compound assignment leaves the handle as it was.
  expect_error([&] { a += Tensor::ones({3}, DType::F32, dev); }, ErrorKind::Shape, {"add"});
  EXPECT_EQ(a.to_vec<float>(), std::vector<float>(4, 2.25));
}

TEST_P(Api, ScalarsOfOtherDTypesConvertToTheTensors) {
  const Device dev = device();
  // C++ scalars convert as to_dtype does: integer dtypes truncate toward zero and saturate.
  const Tensor u = Tensor::full(10, {3}, DType::U8, dev);
  EXPECT_EQ((u + 2.7).to_vec<uint8_t>(), std::vector<uint8_t>(3, 12));
  EXPECT_EQ((u - (-1)).to_vec<uint8_t>(), std::vector<uint8_t>(3, 10));  // -1 saturates to 0
  EXPECT_EQ((u * 300).to_vec<uint8_t>(), std::vector<uint8_t>(3, 246));  // 300 -> 255, 2550 wraps
  const Tensor i = Tensor::full(-7, {2}, DType::I64, dev);
  EXPECT_EQ((i * 2.5).to_vec<int64_t>(), std::vector<int64_t>(2, -14));
  EXPECT_EQ((i < -6.5).to_vec<uint8_t>(), std::vector<uint8_t>(2, 1));  // -6.5 -> -6
  // A 0-d tensor of another dtype converts to the other operand's dtype, on either side.
  const Tensor h = Tensor::full(1.5, {2}, DType::F16, dev);
  const Tensor two = Tensor::scalar(2.0, dev);  // f64
  EXPECT_EQ((h * two).dtype(), DType::F16);
  EXPECT_EQ((two * h).dtype(), DType::F16);
  EXPECT_EQ((h * two).to_vec<float>(), std::vector<float>(2, 3));
  EXPECT_EQ((two - h).to_vec<float>(), std::vector<float>(2, 0.5));
  EXPECT_EQ((h < two).to_vec<uint8_t>(), std::vector<uint8_t>(2, 1));
  // Tensors of other ranks still must agree.
  expect_error([&] { (void)(h + Tensor::ones({2}, DType::F32, dev)); }, ErrorKind::DType,
               {"add", "dtypes differ", "f16", "f32"});
}

// ---- reductions and friends -------------------------------------------------------------------

TEST_P(Api, WholeTensorReductions) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Shape s = random_shape(rng, 1, 4, 6);
    const Ref r = round_ref(random_ref(rng, s), dt);
    const Tensor x = make_tensor(r, dt, dev, Variant::Permuted);
    double sum = 0, abs = 0;
    for (double v : r.v) sum += v, abs += std::abs(v);
    const double n = static_cast<double>(r.v.size());
    const Tol t{2 * n * compute_roundoff(dt) * abs + unit_roundoff(dt) * std::abs(sum),
                unit_roundoff(dt)};
    for (const Tensor& got : {x.sum(), x.mean(), x.max(), x.min()}) EXPECT_EQ(got.rank(), 0u);
    WICK_EXPECT_CLOSE(x.sum(), (Ref{Shape{}, {sum}}), t);
    WICK_EXPECT_CLOSE(x.mean(), (Ref{Shape{}, {sum / n}}), (Tol{t.atol / n, t.rtol}));
    WICK_EXPECT_CLOSE(x.max(), (Ref{Shape{}, {*std::max_element(r.v.begin(), r.v.end())}}), {0, 0});
    WICK_EXPECT_CLOSE(x.min(), (Ref{Shape{}, {*std::min_element(r.v.begin(), r.v.end())}}), {0, 0});
  }
}

TEST_P(Api, VarAndStd) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : kFloatDTypes)
    for (bool unbiased : {true, false}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << (unbiased ? " unbiased" : " biased"));
      const Shape s = random_shape(rng, 1, 3, 9);
      const auto dim = rng.integer(0, static_cast<int64_t>(s.rank()) - 1);
      const Ref r = round_ref(random_ref(rng, s, -3, 5), dt);
      const Tensor x = make_tensor(r, dt, dev, Variant::Transposed);
      const auto d = static_cast<size_t>(dim);
      const int64_t n = s[d];
      std::vector<int64_t> kd = s.dims();
      kd[d] = 1;
      Ref var{Shape(kd), {}}, sd{Shape(kd), {}};
      for_each_index(Shape(kd), [&](const std::vector<int64_t>& o) {
        std::vector<int64_t> idx = o;
        double mean = 0, ss = 0;
        for (idx[d] = 0; idx[d] < n; idx[d]++) mean += r.at(idx);
        mean /= static_cast<double>(n);
        for (idx[d] = 0; idx[d] < n; idx[d]++) ss += (r.at(idx) - mean) * (r.at(idx) - mean);
        const double v = ss / static_cast<double>(unbiased ? n - 1 : n);
        var.v.push_back(v);
        sd.v.push_back(std::sqrt(v));
      });
      // Values are O(10): the two passes in f32 (or f64) lose a few n ulps of the squares.
      const double u = compute_roundoff(dt);
      const Tol t{16 * (static_cast<double>(n) + 2) * u * 25, 2 * unit_roundoff(dt) + 8 * u};
      WICK_EXPECT_CLOSE(x.var(dim, unbiased, true), var, t);
      WICK_EXPECT_CLOSE(x.std(dim, unbiased, true), sd, t);
      const Tensor dropped = x.var(dim, unbiased);
      EXPECT_EQ(dropped.rank(), s.rank() - 1);
      EXPECT_EQ(dropped.dtype(), dt);
    }
  // One element: the unbiased variance is NaN, the biased one 0.
  const Tensor one = Tensor::ones({3, 1}, DType::F32, dev);
  EXPECT_TRUE(std::isnan(one.var(1).to_vec<float>()[0]));
  EXPECT_EQ(one.var(1, false).to_vec<float>(), std::vector<float>(3, 0));
  expect_error([&] { Tensor::ones({2}, DType::I64, dev).var(0); }, ErrorKind::DType,
               {"var", "float"});
  expect_error([&] { Tensor::ones({2}, DType::F32, dev).std(3); }, ErrorKind::OutOfRange, {"std"});
  expect_error(
      [&] {
        Tensor::ones({0, 2}, DType::F32, dev).var(0);
      },
      ErrorKind::Shape, {"var", "empty"});
}

TEST_P(Api, Cumsum) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  std::vector<DType> dts = kFloatDTypes;
  dts.insert(dts.end(), {DType::U8, DType::U32, DType::I64});
  for (DType dt : dts) {
    SCOPED_TRACE(dtype_name(dt));
    const Shape s = random_shape(rng, 1, 3, 40);
    const auto dim = rng.integer(0, static_cast<int64_t>(s.rank()) - 1);
    const auto d = static_cast<size_t>(dim);
    const Ref r = round_ref(is_float(dt) ? random_ref(rng, s) : random_int_ref(rng, s, 0, 200), dt);
    const Tensor x = make_tensor(r, dt, dev, Variant::Transposed);
    Ref want{s, std::vector<double>(r.v.size())};
    double max_abs = 0;
    for_each_index(s, [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> j = idx;
      double acc = 0, abs = 0;
      for (j[d] = 0; j[d] <= idx[d]; j[d]++) acc += r.at(j), abs += std::abs(r.at(j));
      max_abs = std::max(max_abs, abs);
      if (dt == DType::U8) acc = std::fmod(acc, 256);
      want.v[static_cast<size_t>(want.index(idx))] = acc;
    });
    const double steps = std::ceil(std::log2(static_cast<double>(s[d]) + 1)) + 1;
    const Tol t =
        is_float(dt) ? Tol{steps * compute_roundoff(dt) * max_abs, unit_roundoff(dt)} : Tol{0, 0};
    WICK_EXPECT_CLOSE(x.cumsum(dim), want, t);
  }
  expect_error([&] { Tensor::ones({2}, DType::F32, dev).cumsum(1); }, ErrorKind::OutOfRange,
               {"cumsum"});
}

TEST_P(Api, Topk) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (DType dt : {DType::F32, DType::BF16, DType::F64, DType::I64})
    for (bool largest : {true, false}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << (largest ? " largest" : " smallest"));
      const Shape s = random_shape(rng, 1, 3, 12);
      const auto dim = rng.integer(0, static_cast<int64_t>(s.rank()) - 1);
      const auto d = static_cast<size_t>(dim);
      const int64_t k = rng.integer(0, s[d]);
      // Few distinct values: ties, which keep the lower index first.
      const Ref r = round_ref(random_int_ref(rng, s, -4, 4), dt);
      const Tensor x = make_tensor(r, dt, dev, Variant::Transposed);
      const auto [values, ids] = x.topk(k, dim, largest);
      std::vector<int64_t> od = s.dims();
      od[d] = k;
      Ref want_v{Shape(od), std::vector<double>(static_cast<size_t>(Shape(od).numel()))};
      Ref want_i = want_v;
      std::vector<int64_t> kd = s.dims();
      kd[d] = 1;
      for_each_index(Shape(kd), [&](const std::vector<int64_t>& o) {
        std::vector<int64_t> order(static_cast<size_t>(s[d]));
        std::iota(order.begin(), order.end(), 0);
        std::vector<int64_t> j = o;
        const auto val = [&](int64_t i) {
          j[d] = i;
          return r.at(j);
        };
        std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
          return largest ? val(p) > val(q) : val(p) < val(q);
        });
        for (int64_t i = 0; i < k; i++) {
          j[d] = i;
          const auto at = static_cast<size_t>(want_v.index(j));
          want_i.v[at] = static_cast<double>(order[static_cast<size_t>(i)]);
          want_v.v[at] = val(order[static_cast<size_t>(i)]);
        }
      });
      EXPECT_EQ(ids.dtype(), DType::U32);
      EXPECT_EQ(values.dtype(), dt);
      WICK_EXPECT_CLOSE(values, want_v, {0, 0});
      WICK_EXPECT_CLOSE(ids, want_i, {0, 0});
    }
  const Tensor x = Tensor::ones({2, 3}, DType::F32, dev);
  expect_error([&] { x.topk(4, 1); }, ErrorKind::OutOfRange, {"topk", "k = 4", "[0, 3]"});
  expect_error([&] { x.topk(-1); }, ErrorKind::OutOfRange, {"topk"});
  expect_error([&] { Tensor::scalar(1.0f, dev).topk(1); }, ErrorKind::Shape, {"topk", "scalar"});
}

TEST_P(Api, SqueezeLikeLinspaceArange) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Tensor x = Tensor::rand(-1, 1, {1, 3, 1, 2, 1}, DType::F32, dev);
  const Tensor sq = x.squeeze();
  EXPECT_EQ(sq.shape(), (Shape{3, 2}));
  EXPECT_TRUE(sq.shares_storage_with(x));
  EXPECT_EQ(sq.to_vec<float>(), x.to_vec<float>());
  EXPECT_EQ(Tensor::ones({1, 1}, DType::F32, dev).squeeze().shape(), Shape{});
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor t = Tensor::ones({2, 3}, dt, dev).narrow(1, 1, 2);
    const std::vector<std::pair<Tensor, double>> likes = {
        {t.zeros_like(), 0.0}, {t.ones_like(), 1.0}, {t.full_like(5), 5.0}};
    for (const auto& [like, value] : likes) {
      EXPECT_EQ(like.shape(), t.shape());
      EXPECT_EQ(like.dtype(), dt);
      EXPECT_EQ(like.device(), dev);
      EXPECT_EQ(like.to_vec_f64(), std::vector<double>(4, value));
    }
  }
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const double a = rng.uniform(-10, 10), b = rng.uniform(-10, 10);
    const int64_t steps = rng.integer(2, 50);
    Ref want{Shape{steps}, {}};
    for (int64_t i = 0; i < steps; i++)
      want.v.push_back(a + (b - a) * static_cast<double>(i) / static_cast<double>(steps - 1));
    const Tensor l = Tensor::linspace(a, b, steps, dt, dev);
    WICK_EXPECT_CLOSE(l, want, (Tol{1e-13 * 10, unit_roundoff(dt)}));
    EXPECT_EQ(l.to_vec_f64().front(), to_f64(round_ref(Ref{Shape{}, {a}}, dt).v[0]));
    EXPECT_EQ(l.to_vec_f64().back(), to_f64(round_ref(Ref{Shape{}, {b}}, dt).v[0]));
  }
  EXPECT_EQ(Tensor::linspace(3, 7, 1, DType::F32, dev).to_vec<float>(), std::vector<float>{3});
  EXPECT_EQ(Tensor::linspace(3, 7, 0, DType::F32, dev).numel(), 0);
  EXPECT_EQ(Tensor::linspace(0, 10, 6, DType::I64, dev).to_vec<int64_t>(),
            (std::vector<int64_t>{0, 2, 4, 6, 8, 10}));
  expect_error([&] { Tensor::linspace(0, 1, -1, DType::F32, dev); }, ErrorKind::OutOfRange,
               {"linspace", "-1"});
  EXPECT_EQ(Tensor::arange(2.0, 6.0, DType::F32, dev).to_vec<float>(),
            (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(Tensor::arange(6.0, 2.0, -1.5, DType::F64, dev).to_vec<double>(),
            (std::vector<double>{6, 4.5, 3}));
}

TEST_P(Api, UndefinedTensorThrowsOnTheNewOps) {
  const Device dev = device();
  Tensor u;
  const Tensor a = Tensor::ones({2}, DType::F32, dev);
  using Op = std::function<void()>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"2 * u", [&] { (void)(2.0 * u); }},
      {"1 - u", [&] { (void)(1.0 - u); }},
      {"2 / u", [&] { (void)(2.0 / u); }},
      {"u < a", [&] { (void)(u < a); }},
      {"a == u", [&] { (void)(a == u); }},
      {"u != 0.5", [&] { (void)(u != 0.5); }},
      {"0.5 >= u", [&] { (void)(0.5 >= u); }},
      {"u += a", [&] { u += a; }},
      {"u *= 2", [&] { u *= 2; }},
      {"rsub", [&] { u.rsub(1); }},
      {"rdiv", [&] { u.rdiv(1); }},
      {"sum()", [&] { u.sum(); }},
      {"mean()", [&] { u.mean(); }},
      {"max()", [&] { u.max(); }},
      {"min()", [&] { u.min(); }},
      {"var", [&] { u.var(0); }},
      {"std", [&] { u.std(0); }},
      {"cumsum", [&] { u.cumsum(0); }},
      {"topk", [&] { u.topk(1); }},
      {"squeeze()", [&] { u.squeeze(); }},
      {"zeros_like", [&] { u.zeros_like(); }},
      {"ones_like", [&] { u.ones_like(); }},
      {"full_like", [&] { u.full_like(1); }},
      {"data_ptr", [&] { u.data_ptr(); }},
      {"data_ptr<float>", [&] { u.data_ptr<float>(); }},
  };
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    expect_error(op, ErrorKind::Shape, {"undefined tensor"});
    EXPECT_FALSE(u.defined());
  }
  EXPECT_EQ(u.to_string(), "Tensor[undefined]");
}

WICK_INSTANTIATE_DEVICES(Api);

}  // namespace
}  // namespace wick::testing
