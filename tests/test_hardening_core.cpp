// Issue 9, items 2, 3 and 7: size arithmetic that overflowed, range checks that wrapped, failures
// outside wick::Error, and the undefined tensor. Each case crashed, read out of bounds, returned
// garbage or threw a non-wick exception before; now each is a wick::Error of the right kind.
// Nothing here allocates (let alone touches) a large block: every huge size is refused first.
#include <cstdint>
#include <limits>

#include "harness.h"

namespace wick::testing {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t k2p32 = int64_t{1} << 32;
constexpr int64_t k2p61 = int64_t{1} << 61;
constexpr int64_t k2p62 = int64_t{1} << 62;

class HardeningCore : public DeviceTest {};

// ---- item 2: element counts and byte sizes ----------------------------------------------------

TEST_P(HardeningCore, ZerosOfMoreThanTheSizeLimitIsRefused) {
  Device dev = device();
  // 2^62 f32 elements were a 1-byte block that fill wrote past.
  expect_error([&] { Tensor::zeros({k2p62}, DType::F32, dev); }, ErrorKind::Shape,
               {"zeros", "[4611686018427387904]"});
  // 2^61 f32 elements: a representable count whose 2^63 bytes no device can hold.
  expect_error([&] { Tensor::zeros({k2p61}, DType::F32, dev); }, ErrorKind::OutOfMemory,
               {"zeros", "[2305843009213693952] f32", "2^62 bytes"});
  expect_error([&] { Tensor::ones({k2p32, k2p32}, DType::U8, dev); }, ErrorKind::Shape, {"ones"});
  expect_error([&] { Tensor::full(1.0, {2, k2p61}, DType::F16, dev); }, ErrorKind::Shape, {"full"});
}

TEST_P(HardeningCore, RandnOfMoreBytesThanTheSizeLimitIsRefused) {
  Device dev = device();
  expect_error([&] { Tensor::randn(0, 1, {k2p61}, DType::F64, dev); }, ErrorKind::OutOfMemory,
               {"randn", "f64"});
  expect_error(
      [&] {
        Tensor::rand(0, 1, {k2p61, 4}, DType::F32, dev);
      },
      ErrorKind::Shape, {"rand"});
}

TEST_P(HardeningCore, FromDataOfMoreThanTheSizeLimitIsRefused) {
  Device dev = device();
  const float buf[4] = {1, 2, 3, 4};
  expect_error([&] { Tensor::from_data(buf, DType::F32, {k2p62}, dev).sum_all().to_vec<float>(); },
               ErrorKind::Shape, {"from_data", "[4611686018427387904]"});
  expect_error([&] { Tensor::from_data(buf, DType::F64, {k2p61}, dev); }, ErrorKind::OutOfMemory,
               {"from_data"});
  expect_error(
      [&] {
        Tensor::from_vec(std::vector<float>{1}, {k2p32, k2p32}, dev);
      },
      ErrorKind::Shape, {"from_vec"});
}

TEST_P(HardeningCore, ReshapeOfAnEmptyTensorCannotOverflowItsCount) {
  Device dev = device();
  const Tensor empty = Tensor::zeros({0}, DType::F32, dev);
  // [2^32, 2^32] multiplied to 0 (mod 2^64): the reshape was accepted and get(0) read nothing.
  expect_error(
      [&] {
        empty.reshape({k2p32, k2p32}).get(0).sum_all().to_vec<float>();
      },
      ErrorKind::Shape, {"reshape", "[4294967296, 4294967296]"});
  expect_error([&] { empty.reshape({-1, k2p32, k2p32}); }, ErrorKind::Shape, {"reshape"});
  // An empty shape is fine while its non-zero dims stay in range.
  EXPECT_EQ(empty.reshape({k2p32, 0}).shape(), (Shape{k2p32, 0}));
}

TEST_P(HardeningCore, ElementCountIsNeverNegative) {
  Device dev = device();
  // numel of [3, 2^62] was -4.6e18.
  expect_error([] { Shape({3, k2p62}).numel(); }, ErrorKind::Shape, {"[3, 4611686018427387904]"});
  expect_error([] { Shape({2, -3, 4}).numel(); }, ErrorKind::Shape, {"negative", "[2, -3, 4]"});
  expect_error([&] { Tensor::zeros({3, k2p62}, DType::U8, dev); }, ErrorKind::Shape, {"zeros"});
  expect_error(
      [&] {
        Tensor::zeros({2, -1}, DType::U8, dev);
      },
      ErrorKind::Shape, {"zeros", "negative"});
  // Contiguous strides of a shape too large to describe are refused, not wrapped.
  expect_error([] { Shape({0, k2p32, k2p32}).contiguous_strides(); }, ErrorKind::Shape);
}

TEST_P(HardeningCore, BroadcastBeyondTheSizeLimitIsRefused) {
  Device dev = device();
  const Tensor ones = Tensor::ones({1, 1, 4}, DType::F32, dev);
  // 2^66 elements: sum_all returned 0.
  expect_error(
      [&] {
        ones.broadcast_as({k2p32, k2p32, 4}).sum_all().to_vec<float>();
      },
      ErrorKind::Shape, {"broadcast_as", "[4294967296, 4294967296, 4]"});
  expect_error([&] { ones.broadcast_left({k2p32, k2p32}); }, ErrorKind::Shape, {"broadcast_as"});
  // Shapes that broadcast to too many elements are refused by the op.
  const Tensor col = Tensor::zeros({1, 1}, DType::F32, dev).broadcast_as({k2p32, 1});
  const Tensor row = Tensor::zeros({1, 1}, DType::F32, dev).broadcast_as({1, k2p32});
  expect_error([&] { col.add(row); }, ErrorKind::Shape, {"add"});
  expect_error([&] { col.lt(row); }, ErrorKind::Shape, {"lt"});
  // A broadcast within the limit is still a view of the 4 elements.
  EXPECT_EQ(ones.broadcast_as({k2p32, 2, 4}).numel(), k2p32 * 8);
}

TEST_P(HardeningCore, CatCannotBuildAShapeBeyondTheSizeLimit) {
  Device dev = device();
  const Tensor wide = Tensor::zeros({0, k2p61}, DType::F32, dev);
  expect_error([&] { Tensor::cat({wide, wide}, 1); }, ErrorKind::Shape, {"cat"});
  expect_error([&] { Tensor::cat({wide, wide, wide, wide}, 1); }, ErrorKind::Shape, {"cat"});
  EXPECT_EQ(Tensor::cat({wide, wide}, 0).shape(), (Shape{0, k2p61}));
}

TEST_P(HardeningCore, ReadingBackMoreThanTheSizeLimitIsOutOfMemory) {
  Device dev = device();
  // 2^61 f32 elements are 2^63 bytes: std::length_error before.
  const Tensor view = Tensor::ones({1}, DType::F32, dev).broadcast_as({k2p61});
  expect_error([&] { view.to_vec<float>(); }, ErrorKind::OutOfMemory, {"to_vec"});
}

// A layout that does not fit its storage cannot be made into a tensor.
TEST_P(HardeningCore, TensorRefusesALayoutOutsideItsStorage) {
  Device dev = device();
  const Tensor t = Tensor::zeros({4}, DType::F32, dev);
  const auto make = [&](Layout l) { return Tensor(t.storage(), std::move(l), DType::F32, dev); };
  expect_error([&] { make(Layout({5}, {1}, 0)); }, ErrorKind::OutOfRange,
               {"outside", "4 elements"});
  expect_error([&] { make(Layout({2}, {1}, 3)); }, ErrorKind::OutOfRange, {"outside"});
  expect_error([&] { make(Layout({2}, {-1}, 0)); }, ErrorKind::OutOfRange, {"outside"});
  expect_error([&] { make(Layout({2}, {1}, -1)); }, ErrorKind::OutOfRange);
  expect_error([&] { make(Layout({2, 2}, {k2p61, k2p61}, 0)); }, ErrorKind::OutOfRange);
  expect_error([&] { make(Layout({2}, {1, 1}, 0)); }, ErrorKind::Shape, {"strides"});
  expect_error([&] { make(Layout({-2}, {1}, 0)); }, ErrorKind::Shape, {"negative"});
  expect_error([&] { Tensor(t.storage(), Layout({4}, {1}, 0), DType::U32, dev); },
               ErrorKind::DType);
  // Fitting layouts stay fine, an empty one anywhere in range too.
  EXPECT_EQ(make(Layout({2, 2}, {1, 2}, 0)).to_vec<float>(), (std::vector<float>(4, 0.0f)));
  EXPECT_EQ(make(Layout({0, 3}, {3, 1}, 100)).numel(), 0);
}

// ---- item 3: range checks that wrapped ------------------------------------------------------

TEST_P(HardeningCore, NarrowRangeCannotWrap) {
  Device dev = device();
  const Tensor t = Tensor::arange(40, DType::F32, dev).reshape({10, 4});
  // start + len wrapped to INT64_MIN: accepted with start offset -4; sum_all read before the
  // buffer (171 instead of an error).
  expect_error([&] { t.narrow(1, kInt64Max, 1).sum_all().to_vec<float>(); }, ErrorKind::OutOfRange,
               {"narrow", "[10, 4]"});
  expect_error([&] { t.narrow(1, 3, kInt64Max); }, ErrorKind::OutOfRange, {"narrow"});
  expect_error([&] { t.narrow(0, kInt64Max, kInt64Max); }, ErrorKind::OutOfRange, {"narrow"});
  expect_error([&] { t.narrow(0, 11, 0); }, ErrorKind::OutOfRange, {"narrow"});
  // The edges stay valid.
  EXPECT_EQ(t.narrow(1, 4, 0).numel(), 0);
  EXPECT_EQ(t.narrow(1, 3, 1).sum_all().to_scalar<float>(),
            3 + 7 + 11 + 15 + 19 + 23 + 27 + 31 + 35 + 39);
}

TEST_P(HardeningCore, SliceSetRangeCannotWrap) {
  Device dev = device();
  const Tensor t = Tensor::zeros({10, 4}, DType::F32, dev);
  const Tensor src = Tensor::ones({10, 1}, DType::F32, dev);
  expect_error([&] { t.slice_set(src, 1, kInt64Max); }, ErrorKind::OutOfRange,
               {"slice_set", "[10, 4]"});
  expect_error([&] { t.slice_set(src, 1, std::numeric_limits<int64_t>::min()); },
               ErrorKind::OutOfRange, {"slice_set"});
  EXPECT_EQ(t.sum_all().to_scalar<float>(), 0.0f);  // nothing was written
}

TEST_P(HardeningCore, BroadcastToANegativeDimIsRefused) {
  Device dev = device();
  const Tensor t = Tensor::ones({1, 1, 4}, DType::F32, dev);
  // Accepted with numel -24; to_vec threw std::length_error.
  expect_error(
      [&] {
        t.broadcast_as({2, -3, 4}).to_vec<float>();
      },
      ErrorKind::Shape, {"broadcast_as", "[2, -3, 4]"});
  expect_error([&] { t.broadcast_as({-1, 1, 4}); }, ErrorKind::Shape, {"broadcast_as"});
}

TEST_P(HardeningCore, ChunkCountNearInt64MaxDoesNotOverflow) {
  Device dev = device();
  const Tensor t = Tensor::arange(4, DType::F32, dev);
  const std::vector<Tensor> chunks = t.chunk(kInt64Max, 0);
  ASSERT_EQ(chunks.size(), 4u);
  for (size_t i = 0; i < chunks.size(); i++)
    EXPECT_EQ(chunks[i].to_vec<float>(), (std::vector<float>{static_cast<float>(i)}));
}

// ---- item 7: failures outside wick::Error, or misnamed -----------------------------------------

TEST_P(HardeningCore, HugeArangeIsAWickError) {
  Device dev = device();
  // 1e15 elements: std::bad_alloc from a host vector before; now the device's allocation says
  // it cannot hold them (no host memory is taken for the values).
  try {
    Tensor::arange(0, 1e15, 1, DType::F32, dev);
    ADD_FAILURE() << "arange of 1e15 elements did not throw";
  } catch (const Error& e) {
    // The CPU: more than the host's memory; a GPU: more than its memory or buffer range.
    EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory) << e.what();
  }
  // Counts beyond the size limit, or beyond any integer, are refused before any allocation.
  expect_error([&] { Tensor::arange(0, 1e19, 1, DType::F32, dev); }, ErrorKind::Shape, {"arange"});
  expect_error([&] { Tensor::arange(-1e308, 1e308, 1e-300, DType::F32, dev); }, ErrorKind::Shape,
               {"arange"});
  // A range of several pieces still counts right (the values are uploaded piece by piece).
  const int64_t n = (int64_t{1} << 17) + 5;
  const std::vector<double> v =
      Tensor::arange(0, static_cast<double>(n), 1, DType::F32, dev).to_vec<double>();
  ASSERT_EQ(static_cast<int64_t>(v.size()), n);
  for (int64_t i = 0; i < n; i += 4099)
    EXPECT_EQ(v[static_cast<size_t>(i)], static_cast<double>(i));
  EXPECT_EQ(v.back(), static_cast<double>(n - 1));
}

TEST_P(HardeningCore, HugeEyeIsAShapeErrorNotInternal) {
  Device dev = device();
  expect_error([&] { Tensor::eye(k2p32, DType::F32, dev); }, ErrorKind::Shape, {"eye"});
  expect_error([&] { Tensor::eye(int64_t{1} << 30, DType::F32, dev); }, ErrorKind::OutOfMemory,
               {"eye"});
}

TEST(HardeningCoreCpu, HostAllocationBeyondTheHostsMemoryIsOutOfMemory) {
  // 2^50 bytes (1 PiB) is more than any host's memory and swap: refused before malloc, naming
  // the bytes asked for and the host's limit.
  expect_error([] { Tensor::zeros({int64_t{1} << 50}, DType::U8); }, ErrorKind::OutOfMemory,
               {"alloc", "1125899906842624 bytes", "memory and swap"});
  EXPECT_STREQ(error_kind_name(ErrorKind::OutOfMemory), "out of memory");
}

// ---- the undefined tensor ---------------------------------------------------------------------

TEST_P(HardeningCore, UndefinedTensorThrowsOnEveryOp) {
  Device dev = device();
  const Tensor u;
  const Tensor a = Tensor::ones({2, 2}, DType::F32, dev);
  const Tensor ids = Tensor::zeros({2}, DType::U32, dev);
  using Op = std::function<void()>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"shape", [&] { u.shape(); }},
      {"dims", [&] { u.dims(); }},
      {"dim", [&] { u.dim(0); }},
      {"rank", [&] { u.rank(); }},
      {"numel", [&] { u.numel(); }},
      {"dtype", [&] { u.dtype(); }},
      {"device", [&] { u.device(); }},
      {"layout", [&] { u.layout(); }},
      {"is_contiguous", [&] { u.is_contiguous(); }},
      {"storage", [&] { u.storage(); }},
      {"shares_storage_with", [&] { u.shares_storage_with(a); }},
      {"shares_storage_with (arg)", [&] { a.shares_storage_with(u); }},
      {"to_vec", [&] { u.to_vec<float>(); }},
      {"to_vec_f64", [&] { u.to_vec_f64(); }},
      {"to_scalar", [&] { u.to_scalar<float>(); }},
      {"read_into",
       [&] {
         float x;
         u.read_into(&x, DType::F32);
       }},
      {"narrow", [&] { u.narrow(0, 0, 1); }},
      {"chunk", [&] { u.chunk(2, 0); }},
      {"transpose", [&] { u.transpose(0, 1); }},
      {"permute", [&] { u.permute({0}); }},
      {"t", [&] { u.t(); }},
      {"reshape", [&] { u.reshape({1}); }},
      {"broadcast_as", [&] { u.broadcast_as({1}); }},
      {"broadcast_left", [&] { u.broadcast_left({1}); }},
      {"squeeze", [&] { u.squeeze(0); }},
      {"unsqueeze", [&] { u.unsqueeze(0); }},
      {"flatten", [&] { u.flatten(); }},
      {"flatten_all", [&] { u.flatten_all(); }},
      {"get", [&] { u.get(0); }},
      {"contiguous", [&] { u.contiguous(); }},
      {"copy", [&] { u.copy(); }},
      {"to_dtype", [&] { u.to_dtype(DType::F16); }},
      {"to_device", [&] { u.to_device(dev); }},
      {"neg", [&] { u.neg(); }},
      {"abs", [&] { u.abs(); }},
      {"exp", [&] { u.exp(); }},
      {"log", [&] { u.log(); }},
      {"sin", [&] { u.sin(); }},
      {"cos", [&] { u.cos(); }},
      {"tanh", [&] { u.tanh(); }},
      {"sqrt", [&] { u.sqrt(); }},
      {"sqr", [&] { u.sqr(); }},
      {"recip", [&] { u.recip(); }},
      {"relu", [&] { u.relu(); }},
      {"gelu", [&] { u.gelu(); }},
      {"gelu_erf", [&] { u.gelu_erf(); }},
      {"erf", [&] { u.erf(); }},
      {"silu", [&] { u.silu(); }},
      {"sigmoid", [&] { u.sigmoid(); }},
      {"floor", [&] { u.floor(); }},
      {"ceil", [&] { u.ceil(); }},
      {"round", [&] { u.round(); }},
      {"sign", [&] { u.sign(); }},
      {"affine", [&] { u.affine(2, 1); }},
      {"powf", [&] { u.powf(2); }},
      {"elu", [&] { u.elu(1); }},
      {"clamp", [&] { u.clamp(0, 1); }},
      {"add", [&] { u.add(a); }},
      {"add (arg)", [&] { a.add(u); }},
      {"sub", [&] { u.sub(a); }},
      {"mul (arg)", [&] { a.mul(u); }},
      {"div", [&] { u.div(a); }},
      {"maximum (arg)", [&] { a.maximum(u); }},
      {"minimum", [&] { u.minimum(a); }},
      {"pow (arg)", [&] { a.pow(u); }},
      {"add scalar", [&] { u.add(1.0); }},
      {"sub scalar", [&] { u.sub(1.0); }},
      {"mul scalar", [&] { u.mul(1.0); }},
      {"div scalar", [&] { u.div(1.0); }},
      {"maximum scalar", [&] { u.maximum(1.0); }},
      {"minimum scalar", [&] { u.minimum(1.0); }},
      {"pow scalar", [&] { u.pow(1.0); }},
      {"eq", [&] { u.eq(a); }},
      {"ne (arg)", [&] { a.ne(u); }},
      {"lt", [&] { u.lt(a); }},
      {"le (arg)", [&] { a.le(u); }},
      {"gt", [&] { u.gt(a); }},
      {"ge (arg)", [&] { a.ge(u); }},
      {"eq scalar", [&] { u.eq(0.0); }},
      {"ne scalar", [&] { u.ne(0.0); }},
      {"lt scalar", [&] { u.lt(0.0); }},
      {"le scalar", [&] { u.le(0.0); }},
      {"gt scalar", [&] { u.gt(0.0); }},
      {"ge scalar", [&] { u.ge(0.0); }},
      {"where_cond", [&] { u.where_cond(a, a); }},
      {"where_cond (on_true)", [&] { ids.where_cond(u, a); }},
      {"where_cond (on_false)", [&] { ids.where_cond(a, u); }},
      {"sum", [&] { u.sum(0); }},
      {"sum dims", [&] { u.sum(std::vector<int64_t>{0}); }},
      {"sum_keepdim", [&] { u.sum_keepdim(0); }},
      {"sum_all", [&] { u.sum_all(); }},
      {"mean", [&] { u.mean(0); }},
      {"mean_all", [&] { u.mean_all(); }},
      {"max", [&] { u.max(0); }},
      {"min", [&] { u.min(0); }},
      {"argmax", [&] { u.argmax(0); }},
      {"argmin", [&] { u.argmin(0); }},
      {"max_all", [&] { u.max_all(); }},
      {"min_all", [&] { u.min_all(); }},
      {"softmax_last_dim", [&] { u.softmax_last_dim(); }},
      {"softmax", [&] { u.softmax(0); }},
      {"log_softmax", [&] { u.log_softmax(0); }},
      {"rms_norm", [&] { u.rms_norm(a, 1e-5); }},
      {"rms_norm (alpha)", [&] { a.rms_norm(u, 1e-5); }},
      {"layer_norm", [&] { u.layer_norm(a, a, 1e-5); }},
      {"layer_norm (beta)", [&] { a.layer_norm(a.get(0), u, 1e-5); }},
      {"rope", [&] { u.rope(a, a); }},
      {"rope_i (cos)",
       [&] {
         a.reshape({1, 1, 2, 2}).rope_i(u, a);
       }},
      {"matmul", [&] { u.matmul(a); }},
      {"matmul (arg)", [&] { a.matmul(u); }},
      {"index_select", [&] { u.index_select(ids, 0); }},
      {"index_select (ids)", [&] { a.index_select(u, 0); }},
      {"embedding", [&] { u.embedding(ids); }},
      {"embedding (ids)", [&] { a.embedding(u); }},
      {"gather", [&] { u.gather(ids, 0); }},
      {"scatter_add", [&] { u.scatter_add(ids, a, 0); }},
      {"scatter_add (src)",
       [&] {
         a.scatter_add(ids.reshape({2, 1}).broadcast_as({2, 2}), u, 0);
       }},
      {"index_add", [&] { u.index_add(ids, a, 0); }},
      {"index_add (ids)", [&] { a.index_add(u, a, 0); }},
      {"cat", [&] { Tensor::cat({u}, 0); }},
      {"cat (second)",
       [&] {
         Tensor::cat({a, u}, 0);
       }},
      {"stack", [&] { Tensor::stack({u}, 0); }},
      {"stack (second)",
       [&] {
         Tensor::stack({a, u}, 0);
       }},
      {"arg_sort_last_dim", [&] { u.arg_sort_last_dim(); }},
      {"rope_kv_cache",
       [&] {
         rope_kv_cache(u, a, a, a, a, {a, a, a, a}, ids.get(0), true);
       }},
      {"rope_kv_cache (tables)", [&] { rope_kv_cache(a, a, a, a, a, {}, ids.get(0), true); }},
      {"rope_kv_cache (pos)",
       [&] {
         rope_kv_cache(a, a, a, a, a, {a, a, a, a}, u, true);
       }},
      {"attention_cached", [&] { attention_cached(u, a, a, ids.get(0)); }},
      {"attention_cached (cache)",
       [&] {
         const Tensor q = a.reshape({1, 1, 2, 2});
         attention_cached(q, u, q, ids.get(0));
       }},
      {"attention_cached (pos)", [&] { attention_cached(a, a, a, u); }},
      {"slice_set", [&] { u.slice_set(a, 0, 0); }},
      {"slice_set (src)", [&] { a.slice_set(u, 0, 0); }},
      {"zero_set", [&] { u.zero_set(); }},
      {"const_set", [&] { u.const_set(1); }},
      {"operator+", [&] { (void)(u + a); }},
      {"operator- scalar", [&] { (void)(u - 1.0); }},
      {"unary minus", [&] { (void)(-u); }},
  };
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    expect_error(op, ErrorKind::Shape, {"undefined tensor"});
  }
  // What an undefined tensor can do: be tested, printed, copied, assigned, moved and dropped.
  EXPECT_FALSE(u.defined());
  EXPECT_EQ(u.str(), "Tensor[undefined]");
  Tensor c = u;
  EXPECT_FALSE(c.defined());
  c = a;
  EXPECT_TRUE(c.defined());
  c = u;
  EXPECT_FALSE(c.defined());
  Tensor m = std::move(c);
  EXPECT_FALSE(m.defined());
  // a is untouched by every failed op above.
  EXPECT_EQ(a.to_vec<float>(), (std::vector<float>(4, 1.0f)));
}

WICK_INSTANTIATE_DEVICES(HardeningCore);

}  // namespace
}  // namespace wick::testing
