#include "harness.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "backend/backend.h"
#include "backend/registry.h"

namespace wick::testing {

std::vector<std::string> test_device_names() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("WICK_TEST_DEVICES"); env && *env) {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) out.push_back(item);
    return out;
  }
  // Every backend compiled in and present joins by default: the CPU, and the first Vulkan device
  // (lavapipe in CI). WICK_TEST_DEVICES overrides the list at test discovery and run time alike.
  out.push_back("cpu");
  if (backend::device_count(DeviceKind::Vulkan) > 0) out.push_back("vulkan:0");
  return out;
}

std::string device_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

static uint64_t initial_seed() {
  if (const char* env = std::getenv("WICK_TEST_SEED"); env && *env)
    return std::strtoull(env, nullptr, 10);
  static std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

Rng::Rng() : Rng(initial_seed()) {}

double Rng::uniform(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(gen_);
}
int64_t Rng::integer(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
}

int64_t Ref::index(const std::vector<int64_t>& idx) const {
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); i++) off = off * shape[i] + idx[i];
  return off;
}

double unit_roundoff(DType dt) {
  switch (dt) {
    case DType::F32:
      return std::ldexp(1.0, -24);
    case DType::F16:
      return std::ldexp(1.0, -11);
    case DType::BF16:
      return std::ldexp(1.0, -8);
    case DType::F64:
      return std::ldexp(1.0, -53);
    default:
      return 0;
  }
}

double compute_roundoff(DType dt) {
  return dt == DType::F64 ? unit_roundoff(DType::F64) : unit_roundoff(DType::F32);
}

Ref random_ref(Rng& rng, const Shape& shape, double lo, double hi) {
  Ref r{shape, std::vector<double>(static_cast<size_t>(shape.numel()))};
  for (double& x : r.v) x = rng.uniform(lo, hi);
  return r;
}

Ref random_int_ref(Rng& rng, const Shape& shape, int64_t lo, int64_t hi) {
  Ref r{shape, std::vector<double>(static_cast<size_t>(shape.numel()))};
  for (double& x : r.v) x = static_cast<double>(rng.integer(lo, hi));
  return r;
}

Shape random_shape(Rng& rng, size_t min_rank, size_t max_rank, int64_t max_dim) {
  const auto rank = static_cast<size_t>(
      rng.integer(static_cast<int64_t>(min_rank), static_cast<int64_t>(max_rank)));
  std::vector<int64_t> d(rank);
  for (auto& x : d) x = rng.integer(1, max_dim);
  return Shape(d);
}

std::vector<DType> compute_dtypes(const Device& dev) {
  std::vector<DType> out;
  for (DType dt : kAllDTypes)
    if (computes(dev, dt)) out.push_back(dt);
  return out;
}

Ref round_ref(const Ref& r, DType dt) {
  Ref out = r;
  dispatch_dtype(dt, [&](auto z) {
    using T = decltype(z);
    for (double& x : out.v) x = to_f64(from_f64<T>(x));
  });
  return out;
}

Ref to_ref(const Tensor& t) {
  return Ref{t.shape(), t.to_vec_f64()};
}

void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  if (shape.numel() == 0) return;
  std::vector<int64_t> idx(shape.rank(), 0);
  while (true) {
    f(idx);
    size_t i = shape.rank();
    while (i > 0) {
      i--;
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
      if (i == 0) return;
    }
    if (shape.rank() == 0) return;
  }
}

namespace {

Shape batch_of(const Shape& s) {
  return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
}

// Row-major offset of the matrix of a batched operand of shape s for an output batch index
// (numpy broadcasting: missing leading dims are dropped, size-1 dims read index 0).
int64_t matrix_offset(const Shape& s, const std::vector<int64_t>& out_batch) {
  const size_t nb = s.rank() - 2, pad = out_batch.size() - nb;
  int64_t off = 0;
  for (size_t i = 0; i < nb; i++) off = off * s[i] + (s[i] == 1 ? 0 : out_batch[pad + i]);
  return off * s[nb] * s[nb + 1];
}

}  // namespace

Ref ref_matmul(const Ref& a, const Ref& b) {
  const int64_t m = a.shape[a.shape.rank() - 2], k = a.shape[a.shape.rank() - 1];
  const int64_t n = b.shape[b.shape.rank() - 1];
  const Shape batch = broadcast_shapes(batch_of(a.shape), batch_of(b.shape), "ref");
  std::vector<int64_t> od = batch.dims();
  od.insert(od.end(), {m, n});
  Ref out{Shape(od), {}};
  for_each_index(batch, [&](const std::vector<int64_t>& bi) {
    const double* pa = a.v.data() + matrix_offset(a.shape, bi);
    const double* pb = b.v.data() + matrix_offset(b.shape, bi);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++) s += pa[i * k + p] * pb[p * n + j];
        out.v.push_back(s);
      }
  });
  return out;
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::Contiguous:
      return "contiguous";
    case Variant::Transposed:
      return "transposed";
    case Variant::Narrowed:
      return "narrowed";
    case Variant::Offset:
      return "offset";
    case Variant::Permuted:
      return "permuted";
  }
  return "?";
}

// Values of r permuted so that reading tensor(shape_p).permute(inverse) yields r.
static Ref permute_ref(const Ref& r, const std::vector<int64_t>& perm) {
  std::vector<int64_t> pd(perm.size());
  for (size_t i = 0; i < perm.size(); i++) pd[i] = r.shape[static_cast<size_t>(perm[i])];
  Ref out{Shape(pd), std::vector<double>(r.v.size())};
  for_each_index(out.shape, [&](const std::vector<int64_t>& pi) {
    std::vector<int64_t> oi(perm.size());
    for (size_t i = 0; i < perm.size(); i++) oi[static_cast<size_t>(perm[i])] = pi[i];
    out.v[static_cast<size_t>(out.index(pi))] = r.at(oi);
  });
  return out;
}

static Tensor permuted_tensor(const Ref& r, DType dt, const Device& dev,
                              const std::vector<int64_t>& perm) {
  const Ref p = permute_ref(r, perm);
  Tensor t = Tensor::from_vec(p.v, p.shape, dev).to_dtype(dt);
  // Stored as shape[perm]; permute by the inverse permutation to get back r's shape.
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); i++)
    inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return t.permute(inv);
}

Tensor make_tensor(const Ref& r, DType dt, const Device& dev, Variant variant) {
  const size_t rank = r.shape.rank();
  switch (variant) {
    case Variant::Contiguous:
      break;
    case Variant::Transposed:
      if (rank >= 2) {
        std::vector<int64_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[rank - 1], perm[rank - 2]);
        return permuted_tensor(r, dt, dev, perm);
      }
      break;
    case Variant::Permuted:
      if (rank >= 2) {
        std::vector<int64_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        std::reverse(perm.begin(), perm.end());
        return permuted_tensor(r, dt, dev, perm);
      }
      break;
    case Variant::Narrowed:
      if (rank >= 1) {
        // Embed in a tensor two wider on the last dim with garbage around it.
        std::vector<int64_t> big = r.shape.dims();
        big.back() += 3;
        Ref b{Shape(big), std::vector<double>(static_cast<size_t>(Shape(big).numel()), 1234.5)};
        for_each_index(r.shape, [&](const std::vector<int64_t>& i) {
          std::vector<int64_t> j = i;
          j.back() += 1;
          b.v[static_cast<size_t>(b.index(j))] = r.at(i);
        });
        Tensor t = Tensor::from_vec(b.v, b.shape, dev).to_dtype(dt);
        return t.narrow(-1, 1, r.shape[rank - 1]);
      }
      break;
    case Variant::Offset: {
      std::vector<double> big(r.v.size() + 7, -777.0);
      std::copy(r.v.begin(), r.v.end(), big.begin() + 5);
      Tensor t = Tensor::from_vec(big, Shape{static_cast<int64_t>(big.size())}, dev).to_dtype(dt);
      return t.narrow(0, 5, r.numel()).reshape(r.shape);
    }
  }
  return Tensor::from_vec(r.v, r.shape, dev).to_dtype(dt);
}

Tensor make_broadcast(const Ref& r, const Shape& to, DType dt, const Device& dev) {
  return Tensor::from_vec(r.v, r.shape, dev).to_dtype(dt).broadcast_as(to);
}

Tol tol_for(DType dt) {
  switch (dt) {
    case DType::F64:
      return {1e-12, 1e-12};
    case DType::F32:
      return {1e-5, 1e-5};
    case DType::F16:
      return {2e-3, 2e-3};
    case DType::BF16:
      return {1.6e-2, 1.6e-2};
    default:
      return {0, 0};
  }
}

::testing::AssertionResult same_bits(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << got.str() << " against " << want.str();
  const std::vector<double> g = got.to_vec_f64(), w = want.to_vec_f64();
  for (size_t i = 0; i < g.size(); i++)
    if (std::bit_cast<uint64_t>(g[i]) != std::bit_cast<uint64_t>(w[i]))
      return ::testing::AssertionFailure()
             << "element " << i << " of " << got.str() << ": " << g[i] << " != " << w[i];
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult close(const Tensor& got, const Ref& want, Tol tol) {
  if (got.shape() != want.shape)
    return ::testing::AssertionFailure()
           << "shape " << got.shape() << " != expected " << want.shape;
  const std::vector<double> g = got.to_vec_f64();
  int bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < g.size(); i++) {
    const double a = g[i], b = want.v[i];
    bool ok;
    if (std::isnan(b))
      ok = std::isnan(a);
    else if (std::isinf(b))
      ok = a == b;
    else
      ok = std::abs(a - b) <= tol.atol + tol.rtol * std::abs(b);
    if (!ok) {
      if (bad < 8)  // 17 digits: enough to show a one-ulp difference of any dtype
        os << std::setprecision(17) << "\n  [" << i << "] got " << a << " want " << b << " (off by "
           << std::setprecision(3) << std::abs(a - b) / std::abs(b) << " relative)";
      bad++;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << g.size() << " elements differ (atol " << tol.atol << ", rtol "
         << tol.rtol << ") for " << got.str() << os.str();
}

void expect_error(const std::function<void()>& f, ErrorKind kind,
                  const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << "wrong error kind: " << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "'" << n << "' missing from: " << e.what();
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected wick::Error, got std::exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected wick::Error(" << error_kind_name(kind) << "), nothing thrown";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path llama_vocab_dir() {
  if (const char* env = std::getenv("WICK_LLAMA_VOCAB_DIR"); env && *env) return env;
  return std::filesystem::path(WICK_TESTS_DIR).parent_path() / ".cache" / "llama-vocab";
}

}  // namespace wick::testing
