// The conformance harness: every op on every backend compiled in, against a float64 reference.
//
// A test draws fresh random inputs as `Ref` (shape + float64 values), rounds them to the dtype
// under test, builds device tensors holding exactly those values through several layouts
// (contiguous, transposed, narrowed, offset, permuted), runs the op, and compares the read-back
// result with the float64 reference computed on the rounded inputs. Allocations are poisoned
// (0xff bytes) so an element the backend forgets to write shows as NaN or a huge integer.
//
// Device-parameterised suites:
//   class MyOp : public wick::testing::DeviceTest {};
//   TEST_P(MyOp, Case) { wick::Device dev = device(); ... }
//   WICK_INSTANTIATE_DEVICES(MyOp);
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "wick/wick.h"

namespace wick::testing {

// Device specs to test: WICK_TEST_DEVICES (comma-separated, e.g. "cpu,vulkan:0") when set,
// otherwise the CPU and, when one is present, the first Vulkan device.
std::vector<std::string> test_device_names();

class DeviceTest : public ::testing::TestWithParam<std::string> {
 protected:
  Device device() const { return Device::parse(GetParam()); }
};

std::string device_test_name(const ::testing::TestParamInfo<std::string>& info);

#define WICK_INSTANTIATE_DEVICES(Suite)                                               \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite,                                            \
                           ::testing::ValuesIn(::wick::testing::test_device_names()), \
                           ::wick::testing::device_test_name)

// Fresh randomness per run; the seed is printed with every failure (SCOPED_TRACE in tests).
// WICK_TEST_SEED fixes it to reproduce a failure.
class Rng {
 public:
  Rng();
  explicit Rng(uint64_t seed) : seed_(seed), gen_(seed) {}
  uint64_t seed() const { return seed_; }
  double uniform(double lo, double hi);
  int64_t integer(int64_t lo, int64_t hi);  // inclusive
  std::mt19937_64& gen() { return gen_; }

 private:
  uint64_t seed_;
  std::mt19937_64 gen_;
};

// A float64 reference tensor in row-major order.
struct Ref {
  Shape shape;
  std::vector<double> v;
  int64_t numel() const { return shape.numel(); }
  // Row-major index of a multi-index.
  int64_t index(const std::vector<int64_t>& idx) const;
  double at(const std::vector<int64_t>& idx) const { return v[static_cast<size_t>(index(idx))]; }
};

// Unit roundoff of a dtype (0 for integers: exact).
double unit_roundoff(DType dt);
// The unit roundoff of the arithmetic an op on `dt` runs in: f64 for f64, else f32 (f16 and
// bf16 compute in f32).
double compute_roundoff(DType dt);

Ref random_ref(Rng& rng, const Shape& shape, double lo = -2.0, double hi = 2.0);
// Integers in [lo, hi] (as doubles).
Ref random_int_ref(Rng& rng, const Shape& shape, int64_t lo, int64_t hi);
// A random shape of rank in [min_rank, max_rank], each dim in [1, max_dim].
Shape random_shape(Rng& rng, size_t min_rank, size_t max_rank, int64_t max_dim);
// The values as stored in `dt` (rounded / saturated the way wick converts).
Ref round_ref(const Ref& r, DType dt);
// Read back any tensor as float64.
Ref to_ref(const Tensor& t);
// Visits every multi-index of `shape` in row-major order.
void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f);
// (batch..., m, k) x (batch..., k, n) in float64, batch dims broadcast as numpy does (missing
// leading dims dropped, size-1 dims read at index 0).
Ref ref_matmul(const Ref& a, const Ref& b);

// How an input tensor is laid out in memory. Values are the same in every variant.
enum class Variant { Contiguous, Transposed, Narrowed, Offset, Permuted };
const char* variant_name(Variant v);
inline constexpr Variant kAllVariants[] = {Variant::Contiguous, Variant::Transposed,
                                           Variant::Narrowed, Variant::Offset, Variant::Permuted};
// A tensor on `dev` of dtype `dt` holding round_ref(r, dt), laid out as `variant`.
Tensor make_tensor(const Ref& r, DType dt, const Device& dev,
                   Variant variant = Variant::Contiguous);
// A tensor of shape `to` whose size-1 dims in r.shape are broadcast (stride 0).
Tensor make_broadcast(const Ref& r, const Shape& to, DType dt, const Device& dev);

struct Tol {
  double atol, rtol;
};
// Default tolerance for an op computed in the dtype (elementwise-level error).
Tol tol_for(DType dt);

// Expects got to have want's shape and every element within tolerance (NaN matches NaN, inf
// matches inf of the same sign). Reports the first few mismatches.
::testing::AssertionResult close(const Tensor& got, const Ref& want, Tol tol);
#define WICK_EXPECT_CLOSE(got, want, ...) \
  EXPECT_TRUE(::wick::testing::close((got), (want), __VA_ARGS__))

// The float dtypes every backend must take; all dtypes.
inline const std::vector<DType> kFloatDTypes = {DType::F32, DType::F16, DType::BF16, DType::F64};
inline const std::vector<DType> kIntDTypes = {DType::U8, DType::U32, DType::I64};
// The dtypes whose compute ops run on `dev`: every dtype on the CPU; GPUs store, copy and
// convert i32 but refuse other ops on it (Unsupported).
inline bool computes(const Device& dev, DType dt) {
  return dev.is_cpu() || dt != DType::I32;
}
std::vector<DType> compute_dtypes(const Device& dev);

// Equal shapes, dtypes and values bit for bit (read back through f64, which every float dtype
// converts to exactly): a fused op against the ops it stands for.
::testing::AssertionResult same_bits(const Tensor& got, const Tensor& want);

// Expects `f` to throw wick::Error of `kind` whose message contains every string in `needles`.
void expect_error(const std::function<void()>& f, ErrorKind kind,
                  const std::vector<std::string>& needles = {});

// A file's bytes; a file that cannot be opened fails the test (and reads as empty).
std::string read_file(const std::filesystem::path& path);

// Where scripts/install-deps.sh puts llama.cpp's vocab files and chat templates
// (.cache/llama-vocab; WICK_LLAMA_VOCAB_DIR overrides).
std::filesystem::path llama_vocab_dir();

}  // namespace wick::testing
