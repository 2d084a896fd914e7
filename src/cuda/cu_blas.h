// GEMM through cuBLASLt, loaded at run time like the driver. One Lt call computes a strided batch
// of row-major products C (m x n, contiguous) = A (m x k) B (k x n), each operand read through
// its strides where cuBLASLt can express them (one unit stride per matrix, a leading dimension
// at least its rows, one batch stride per operand).
#pragma once

#include <cublasLt.h>
#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "wick/dtype.h"

namespace wick::cuda {

struct LtApi;

// A product as cuBLASLt sees it, all sizes in elements. The row-major product is computed as the
// column-major C^T (n x m) = B^T A^T, so B is cuBLASLt's first operand.
struct LtProduct {
  DType dtype = DType::F32;
  int64_t m = 0, n = 0, k = 0;
  // B^T (n x k): not transposed with leading dimension ld_b (B's row stride, unit along n), or
  // transposed (unit along k, ld_b = B's column stride).
  bool b_transposed = false;
  int64_t ld_b = 0;
  bool a_transposed = false;  // A^T (k x m): ld_a as for B
  int64_t ld_a = 0;
  int32_t batch = 1;
  int64_t batch_a = 0, batch_b = 0;                   // batch strides (0: broadcast)
  uint32_t align_a = 16, align_b = 16, align_c = 16;  // pointer alignment in bytes
  bool tf32 = false;                                  // f32 on TF32 tensor cores
  auto key() const {
    return std::make_tuple(static_cast<int>(dtype), m, n, k, b_transposed, ld_b, a_transposed, ld_a,
                           batch, batch_a, batch_b, align_a, align_b, align_c, tf32);
  }
};

// The row-major operand X (rows x cols) with strides (s_rows, s_cols) as a column-major cuBLASLt
// matrix of X^T (cols x rows): false when no unit stride or leading dimension fits.
bool lt_operand(int64_t rows, int64_t cols, int64_t s_rows, int64_t s_cols, bool& transposed,
                int64_t& ld);

// The rows whose algorithm a product of m rows shares: m up to 64, then m rounded up to 64 rows
// (256 beyond 1024).
int64_t lt_bucket_rows(int64_t m);

class LtGemm {
 public:
  // Null (with `why`) when cuBLASLt cannot be loaded.
  static std::unique_ptr<LtGemm> open(std::string* why);
  ~LtGemm();

  // Whether cuBLASLt has an algorithm for the product (asked once per product shape).
  bool supports(const LtProduct& p);
  // Records D = A B on `stream` (device addresses); false when cuBLASLt has no algorithm for it.
  bool run(const LtProduct& p, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr workspace,
           size_t workspace_bytes, CUstream stream);
  static constexpr size_t kWorkspaceBytes = 32u << 20;

 private:
  struct Plan;
  explicit LtGemm(const LtApi& api);
  const Plan* plan(const LtProduct& p);
  const Plan* plan_locked(const LtProduct& p);

  const LtApi& api_;
  cublasLtHandle_t handle_ = nullptr;
  std::mutex mu_;
  std::map<decltype(LtProduct{}.key()), std::unique_ptr<Plan>> plans_;
};

}  // namespace wick::cuda
