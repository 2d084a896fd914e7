#include "cuda/cu_blas.h"

#include <algorithm>

#include "cuda/cu_loader.h"
#include "wick/error.h"

#ifndef WICK_CUBLASLT_FALLBACK
#define WICK_CUBLASLT_FALLBACK ""
#endif

namespace wick::cuda {

#define WICK_LT_FUNCTIONS(X)                                                                 \
  X(cublasLtCreate)                                                                          \
  X(cublasLtDestroy)                                                                         \
  X(cublasLtGetVersion)                                                                      \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) \
      X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)                           \
          X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)              \
              X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)     \
                  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmulAlgoCheck) X(cublasLtMatmul)

struct LtApi {
#define WICK_LT_FN(name) decltype(&::name) name = nullptr;
  WICK_LT_FUNCTIONS(WICK_LT_FN)
#undef WICK_LT_FN
};

namespace {

struct LoadedLt {
  DynamicLibrary lib{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                     WICK_CUBLASLT_FALLBACK};
  LtApi api;
  std::string why;
  LoadedLt() {
    if (!lib.loaded()) {
      why = "cuBLASLt could not be loaded (" + lib.why() + ")";
      return;
    }
    bool bound = true;
#define WICK_LT_BIND(name) bound = lib.bind(api.name, #name) && bound;
    WICK_LT_FUNCTIONS(WICK_LT_BIND)
#undef WICK_LT_BIND
    if (!bound) why = "cuBLASLt is incomplete (" + lib.why() + ")";
  }
};

void lt_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(ErrorKind::Internal, "cublasLt", what, " failed: status ", s);
}

cudaDataType_t data_type(DType dt) {
  switch (dt) {
    case DType::F16:
      return CUDA_R_16F;
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::F64:
      return CUDA_R_64F;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace

bool lt_operand(int64_t rows, int64_t cols, int64_t s_rows, int64_t s_cols, bool& transposed,
                int64_t& ld) {
  // A size-1 dim is only indexed at 0: its stride is free.
  if (cols == 1) s_cols = 1;
  if (rows == 1) s_rows = std::max<int64_t>(cols, 1);
  if (s_cols == 1 && s_rows >= std::max<int64_t>(cols, 1)) {  // X^T column-major: rows of X
    transposed = false;
    ld = s_rows;
    return true;
  }
  if (rows > 1 && s_rows == 1 && s_cols >= rows) {  // X column-major, used transposed
    transposed = true;
    ld = s_cols;
    return true;
  }
  if (cols > 1 && rows == 1 && s_cols >= 1) {  // one row of X, strided: X (1 x cols) col-major
    transposed = true;
    ld = s_cols;
    return true;
  }
  return false;
}

struct LtGemm::Plan {
  const LtApi* api = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  ~Plan() {
    if (d) api->cublasLtMatrixLayoutDestroy(d);
    if (b) api->cublasLtMatrixLayoutDestroy(b);
    if (a) api->cublasLtMatrixLayoutDestroy(a);
    if (desc) api->cublasLtMatmulDescDestroy(desc);
  }
};

std::unique_ptr<LtGemm> LtGemm::open(std::string* why) {
  static const LoadedLt lt;
  if (why) *why = lt.why;
  if (!lt.why.empty()) return nullptr;
  return std::unique_ptr<LtGemm>(new LtGemm(lt.api));
}

LtGemm::LtGemm(const LtApi& api) : api_(api) {
  lt_check(api_.cublasLtCreate(&handle_), "cublasLtCreate");
}

LtGemm::~LtGemm() {
  plans_.clear();
  if (handle_) api_.cublasLtDestroy(handle_);
}

int64_t lt_bucket_rows(int64_t m) {
  if (m <= 64) return m;
  if (m <= 1024) return (m + 63) / 64 * 64;
  return (m + 255) / 256 * 256;
}

const LtGemm::Plan* LtGemm::plan(const LtProduct& p) {
  std::lock_guard<std::mutex> lock(mu_);
  return plan_locked(p);
}

const LtGemm::Plan* LtGemm::plan_locked(const LtProduct& p) {
  auto& slot = plans_[p.key()];
  if (slot) return slot.get();
  auto plan = std::make_unique<Plan>();
  plan->api = &api_;
  const cudaDataType_t type = data_type(p.dtype);
  const bool f64 = p.dtype == DType::F64;
  const cublasComputeType_t compute = f64      ? CUBLAS_COMPUTE_64F
                                      : p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                               : CUBLAS_COMPUTE_32F;
  lt_check(api_.cublasLtMatmulDescCreate(&plan->desc, compute, f64 ? CUDA_R_64F : CUDA_R_32F),
           "cublasLtMatmulDescCreate");
  const cublasOperation_t op_a = p.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt_check(api_.cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a,
                                               sizeof op_a),
           "set TRANSA");
  lt_check(api_.cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b,
                                               sizeof op_b),
           "set TRANSB");
  // cuBLASLt's A = B^T (n x k), its B = A^T (k x m), D = C^T (n x m), all column-major.
  auto layout = [&](cublasLtMatrixLayout_t& l, int64_t rows, int64_t cols, int64_t ld,
                    int64_t batch_stride) {
    lt_check(api_.cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), ld),
             "cublasLtMatrixLayoutCreate");
    if (p.batch > 1) {
      lt_check(api_.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                     &p.batch, sizeof p.batch),
               "set BATCH_COUNT");
      lt_check(api_.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                     &batch_stride, sizeof batch_stride),
               "set STRIDED_BATCH_OFFSET");
    }
  };
  if (p.b_transposed)
    layout(plan->a, p.k, p.n, p.ld_b, p.batch_b);
  else
    layout(plan->a, p.n, p.k, p.ld_b, p.batch_b);
  if (p.a_transposed)
    layout(plan->b, p.m, p.k, p.ld_a, p.batch_a);
  else
    layout(plan->b, p.k, p.m, p.ld_a, p.batch_a);
  layout(plan->d, p.n, p.m, p.n, p.m * p.n);

  // Each algorithm cuBLASLt picks is a kernel loaded at its first launch (~1 ms on the H100), and
  // asking costs ~0.2 ms: rows m of a single product (prompts) share the algorithm picked for
  // their bucket (lt_bucket_rows), checked for this m, so that a few launches load every kernel
  // a server's passes will use.
  const int64_t bucket = p.batch == 1 ? lt_bucket_rows(p.m) : p.m;
  if (bucket != p.m) {
    LtProduct rep = p;
    rep.m = bucket;
    if (rep.a_transposed) rep.ld_a = std::max(rep.ld_a, bucket);
    const Plan* shared = plan_locked(rep);
    cublasLtMatmulHeuristicResult_t check{};
    if (shared->found &&
        api_.cublasLtMatmulAlgoCheck(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                     &shared->algo, &check) == CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= kWorkspaceBytes) {
      plan->algo = shared->algo;
      plan->found = true;
      slot = std::move(plan);  // a std::map's references outlive the insertion above
      return slot.get();
    }
  }

  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(api_.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kWorkspaceBytes;
  api_.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                            sizeof ws);
  // The pointer alignments the algorithm may assume (cuBLASLt's A is our B).
  const uint32_t aligns[] = {p.align_b, p.align_a, p.align_c, p.align_c};
  const cublasLtMatmulPreferenceAttributes_t which[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; i++)
    api_.cublasLtMatmulPreferenceSetAttribute(pref, which[i], &aligns[i], sizeof aligns[i]);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = api_.cublasLtMatmulAlgoGetHeuristic(
      handle_, plan->desc, plan->a, plan->b, plan->d, plan->d, pref, 1, &result, &found);
  api_.cublasLtMatmulPreferenceDestroy(pref);
  plan->found = s == CUBLAS_STATUS_SUCCESS && found > 0;
  if (plan->found) plan->algo = result.algo;
  slot = std::move(plan);
  return slot.get();
}

bool LtGemm::supports(const LtProduct& p) {
  return plan(p)->found;
}

bool LtGemm::run(const LtProduct& p, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                 CUdeviceptr workspace, size_t workspace_bytes, CUstream stream) {
  const Plan* pl = plan(p);
  if (!pl->found) return false;
  const double one64 = 1, zero64 = 0;
  const float one32 = 1, zero32 = 0;
  const bool f64 = p.dtype == DType::F64;
  const void* alpha = f64 ? static_cast<const void*>(&one64) : &one32;
  const void* beta = f64 ? static_cast<const void*>(&zero64) : &zero32;
  lt_check(api_.cublasLtMatmul(handle_, pl->desc, alpha, reinterpret_cast<const void*>(b), pl->a,
                               reinterpret_cast<const void*>(a), pl->b, beta,
                               reinterpret_cast<const void*>(c), pl->d, reinterpret_cast<void*>(c),
                               pl->d, &pl->algo, reinterpret_cast<void*>(workspace),
                               workspace_bytes, reinterpret_cast<cudaStream_t>(stream)),
           "cublasLtMatmul");
  return true;
}

}  // namespace wick::cuda
