// The cases of the NVRTC compile test (tests/test_cuda_kernels.cpp): for every kernel file of
// kernels/cuda, every set of defines the host compiles it with (dtypes, op codes as WICK_SPEC_i,
// modes). Each kernel family's test file registers its own cases:
//   WICK_CUDA_COMPILE_CASES(unary) {
//     for (DType dt : kAllDTypes)
//       cases.add("unary.cu", {dtype_defines("", dt), param_defines(dt), spec_define(0, 2)});
//   }
// The test compiles each case once for sm_80 and once for sm_90, and fails for a kernel file
// without cases, so an untested kernel cannot be added.
#pragma once

#ifdef WICK_WITH_CUDA

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "gpu/driver.h"
#include "wick/dtype.h"

namespace wick::test {

struct CudaCompileCase {
  std::string file;  // a name in cuda_kernel_files(), e.g. "unary.cu"
  gpu::Defines defines;
};

class CudaCompileCases {
 public:
  // One case: `file` with the defines of every list, in order.
  void add(std::string file, std::initializer_list<gpu::Defines> parts) {
    CudaCompileCase c{std::move(file), {}};
    for (const gpu::Defines& p : parts) c.defines.insert(c.defines.end(), p.begin(), p.end());
    cases_.push_back(std::move(c));
  }
  const std::vector<CudaCompileCase>& all() const { return cases_; }

 private:
  std::vector<CudaCompileCase> cases_;
};

// Every registered case (filled before main runs).
inline CudaCompileCases& cuda_compile_cases() {
  static CudaCompileCases cases;
  return cases;
}

struct CudaCompileRegistrar {
  explicit CudaCompileRegistrar(void (*fill)(CudaCompileCases&)) { fill(cuda_compile_cases()); }
};

#define WICK_CUDA_COMPILE_CASES(name)                                                 \
  static void wick_cuda_compile_cases_##name(::wick::test::CudaCompileCases& cases);  \
  static const ::wick::test::CudaCompileRegistrar wick_cuda_compile_registrar_##name( \
      wick_cuda_compile_cases_##name);                                                \
  static void wick_cuda_compile_cases_##name(::wick::test::CudaCompileCases& cases)

// The defines the host adds for a dtype (vk_launch.cpp's add_dtype): <prefix>DT, the dtype's
// name, and <prefix>DT_KIND, 0 f32/f16/bf16, 1 f64, 2 u8/u32, 3 i64, 4 i32 (copies only).
inline gpu::Defines dtype_defines(const std::string& prefix, DType dt) {
  const char* kind = dt == DType::F64   ? "1"
                     : dt == DType::I64 ? "3"
                     : dt == DType::I32 ? "4"
                     : is_float(dt)     ? "0"
                                        : "2";
  return {{prefix + "DT", dtype_name(dt)}, {prefix + "DT_KIND", kind}};
}

// PARAM_T for a kernel of dtype dt: double for f64 and for integers (CUDA devices all have
// doubles, so integer affine and clamp are as precise as the CPU's), float otherwise.
inline gpu::Defines param_defines(DType dt) {
  return {{"PARAM_T", dt == DType::F64 || !is_float(dt) ? "double" : "float"}};
}

// Specialization constant i as the define the CUDA kernels read.
inline gpu::Defines spec_define(int i, uint32_t value) {
  return {{"WICK_SPEC_" + std::to_string(i), std::to_string(value)}};
}

}  // namespace wick::test

#endif  // WICK_WITH_CUDA
