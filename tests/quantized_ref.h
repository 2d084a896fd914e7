// Shared by the quantized tests (test_quantized.cpp on every device, the Vulkan-specific ones):
// random block data, the float64 reference of QMatMul with its allowed error, and the
// every-format conformance loop.
#pragma once

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cpu/parallel.h"
#include "harness.h"
#include "wick/quantized.h"

namespace wick::testing {

// f32 results equal bit for bit (a fused path against the ops it stands for).
inline void expect_same_bits(const Tensor& fused, const Tensor& unfused, const std::string& what) {
  ASSERT_EQ(fused.shape(), unfused.shape()) << what;
  const std::vector<float> a = fused.to_vec<float>(), b = unfused.to_vec<float>();
  for (size_t i = 0; i < a.size(); i++) {
    uint32_t ba, bb;
    std::memcpy(&ba, &a[i], 4);
    std::memcpy(&bb, &b[i], 4);
    ASSERT_EQ(ba, bb) << what << " element " << i << ": fused " << a[i] << ", unfused " << b[i];
  }
}

// Rows of random blocks: a random scale per block (1e-3 .. 1e2), plus an all-zero block, a
// negative-only block and a block with one outlier 100x its neighbours.
std::vector<float> block_test_data(Rng& rng, int64_t rows, int64_t k, int64_t block);

// Runs a test body on `n` CPU threads. The many small products of the conformance loops run on
// one (on a loaded 2-core machine every fork/join can wait for a time slice); the split itself
// has its own test (QMatMul.ThreadsSplitRowsWithIdenticalResults).
struct ThreadCountGuard {
  explicit ThreadCountGuard(int n) : saved(cpu::max_threads()) {
    cpu::ThreadPool::instance().set_threads(n);
  }
  ~ThreadCountGuard() { cpu::ThreadPool::instance().set_threads(saved); }
  int saved;
};

// Expected y = x @ W^T (w: the dequantized weight, n x k; x: m x k) from float64 sums, with the
// allowed error per output.
struct Expected {
  std::vector<double> y, tol;
};
// The CPU's error: the integer path quantizes each x block of `act_block` elements to 8 bits
// (step d_x = amax_block / 127, rounding error <= d_x / 2 per element), so output o may be off by
// sum over blocks of d_x/2 * sum_block |w_o|; the f32 accumulation adds ~k * 2^-24 relative to
// sum |w x| (we allow 1e-5 of it).
Expected expected_qmatmul(const std::vector<float>& w, const std::vector<double>& x, int64_t m,
                          int64_t n, int64_t k, int64_t act_block);
// The error allowed on every device for weights of type `t` and m rows of x: the CPU's 8-bit
// activation bound above where it takes integer dot products (its formats with dot kernels, below
// quantized::gemm_min_rows() rows) and the GPUs, which quantize x the same way there; elsewhere
// (q8_1/q8_k weights, longer x) every device multiplies in f32, so only f32 rounding remains: each
// product and each of the k additions rounds once (|error| <= (k + 2) 2^-24 sum |w x|), plus one
// rounding of each dequantized weight where the device fuses d * q + m.
// f16_gemm: the product of a GPU that dequantizes W to f16 for its float GEMM (f16_gemm_for):
// x, each w and each output rounded to f16 (relative 2^-11 each, plus 2^-25 absolute where they
// are subnormal), f32 sums: |error| <= (3 2^-11 + 2^-21 + (k + 3) 2^-24) sum |w x|
// + 2^-24 sum (|w| + |x|) + 2^-24, in place of the bounds above.
Expected expected_for(QuantType t, const std::vector<float>& w, const std::vector<double>& x,
                      int64_t m, int64_t n, int64_t k, bool f16_gemm = false);
// Whether QMatMul on `dev` multiplies m rows of x through f16 (GpuDevice::qmatmul_dequantizes).
bool f16_gemm_for(const Device& dev, int64_t m);
// max over outputs of |a - b| / sum_i (|w_i| + max_block |w|) |x_i| (w: the dequantized weight,
// n x k, in blocks of `block`; x: m x k): what separates two backends that compute the same
// products in different orders. The block's largest |w| is in the sum because the CPU's SIMD
// kernels fold a per-block offset into a second product (q4_0's 8 d, q8_0's 128 d as unsigned
// codes; the min of q4_1 and the K formats), up to that times sum |x|, whose rounding counts too.
double gap_over_term_sum(const std::vector<float>& a, const std::vector<float>& b,
                         const std::vector<float>& w, int64_t block, const std::vector<float>& x,
                         int64_t m, int64_t n, int64_t k);
// Asserts y (f32) is within e's tolerance everywhere (a poisoned, unwritten element is NaN and
// fails).
void check_qmatmul(const Tensor& y, const Expected& e, const std::string& what);

// Every block format QMatMul multiplies.
const std::vector<QuantType>& quantized_matmul_types();

// QMatMul(W, dev) for every format, k = 256 and one other k (3 blocks of 32 for the 32-element
// formats, 512 for the K formats), and each (m, n_out) in `shapes`, on random f32 x, against
// expected_for.
void check_every_format(const Device& dev, const std::vector<std::pair<int64_t, int64_t>>& shapes);

// QMatMul(W, dev) on x of every layout variant (transposed and narrowed x are read in place
// through their strides, permuted 3-D x is copied first), f32/f16/bf16 x (converted by the
// kernel), x of 3, 40, 2 x 3 rows and a vector; q4_0 (18-byte blocks, not 4-byte aligned) and
// q6_k.
void check_layouts_and_dtypes(const Device& dev);

}  // namespace wick::testing
