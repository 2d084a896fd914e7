// NVRTC compiles every CUDA kernel of kernels/cuda with every set of defines the host asks for,
// for sm_80 and sm_90 (no GPU needed, so this runs in CI), and a kernel file without cases fails.
// The cases of the element-wise, memory and indexing kernels are here; other families register
// theirs from their own test files (tests/cuda_compile.h).
#ifdef WICK_WITH_CUDA

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "cuda/cu_compiler.h"
#include "cuda_compile.h"
#include "gpu/kernel_cache.h"
#include "wick/error.h"

namespace wick::test {
namespace {

using backend::BinaryOp;
using backend::CmpOp;
using backend::UnaryOp;

constexpr DType kFloatDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64};
constexpr DType kIdDTypes[] = {DType::U8, DType::U32, DType::I64};

// The unary ops the front end lets through for an integer dtype (src/cpu/unary.cpp: neg of
// unsigned values is refused).
bool takes_int(UnaryOp op, DType dt) {
  switch (op) {
    case UnaryOp::Neg:
      return dt == DType::I64;
    case UnaryOp::Abs:
    case UnaryOp::Sqr:
    case UnaryOp::Relu:
    case UnaryOp::Sign:
    case UnaryOp::Affine:
    case UnaryOp::Clamp:
      return true;
    default:
      return false;
  }
}

gpu::Defines define(const char* name, std::string value) {
  return {{name, std::move(value)}};
}

// Compute kernels take every dtype but i32, which the host refuses (GpuDevice::require).
WICK_CUDA_COMPILE_CASES(elementwise) {
  for (DType dt : kAllDTypes) {
    if (dt == DType::I32) continue;
    for (uint32_t op = 0; op <= static_cast<uint32_t>(UnaryOp::Clamp); op++)
      if (is_float(dt) || takes_int(static_cast<UnaryOp>(op), dt))
        cases.add("unary.cu", {dtype_defines("", dt), param_defines(dt), spec_define(0, op)});
    for (uint32_t op = 0; op <= static_cast<uint32_t>(BinaryOp::Pow); op++) {
      if (is_float(dt))
        cases.add("binary.cu", {dtype_defines("", dt), spec_define(0, op)});
      else if (static_cast<BinaryOp>(op) != BinaryOp::Pow)  // the front end refuses integer pow
        cases.add("binary.cu", {dtype_defines("", dt),
                                define("DTYPE_CODE", std::to_string(static_cast<int>(dt)) + "u"),
                                spec_define(0, op)});
    }
    for (uint32_t op = 0; op <= static_cast<uint32_t>(CmpOp::Ge); op++)
      cases.add("compare.cu", {dtype_defines("", dt), spec_define(0, op)});
    for (DType cond : kIdDTypes)
      cases.add("where.cu", {dtype_defines("", dt), dtype_defines("COND_", cond)});
  }
}

WICK_CUDA_COMPILE_CASES(memory) {
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes)
      cases.add("copy.cu", {dtype_defines("SRC_", from), dtype_defines("DST_", to),
                            define("SAME_DT", from == to ? "1" : "0")});
  for (int bytes : {1, 2, 4, 8})
    cases.add("fill.cu", {define("ELEM_BYTES", std::to_string(bytes))});
  for (DType dt : kFloatDTypes)
    for (uint32_t mode : {0u, 1u})  // uniform, normal
      cases.add("rand.cu", {dtype_defines("", dt), param_defines(dt), spec_define(0, mode)});
}

WICK_CUDA_COMPILE_CASES(indexing) {
  for (DType dt : kAllDTypes)
    if (dt != DType::I32)
      for (DType id : kIdDTypes)
        for (const char* file : {"index.cu", "scatter.cu"})
          cases.add(file, {dtype_defines("", dt), dtype_defines("ID_", id)});
}

struct Target {
  int major, minor;
  bool fast_math;
};
// Each architecture also takes one of the two fast-math settings (the define and --fmad differ):
// both settings compile without doubling the test's time. The H100/H200's sm_90 compiles every
// case; sm_80 (and the exact math) every kSm80Sample-th and each file's first: what differs
// there is a few #if branches every case of a file passes alike (PDL's wait, the math defines),
// and all of them took a third of CI's release test time on NVRTC.
constexpr Target kTargets[] = {{8, 0, false}, {9, 0, true}};
constexpr size_t kSm80Sample = 3;

std::string describe(const CudaCompileCase& c, const Target& t) {
  std::string s = c.file + " for sm_" + std::to_string(t.major) + std::to_string(t.minor);
  for (const auto& [name, value] : c.defines) s += " " + name + "=" + value;
  return s;
}

// "" when `c` compiles for `t` without a warning, else what NVRTC said.
std::string compile_problem(const gpu::SourceTable& sources, const CudaCompileCase& c,
                            const Target& t) {
  gpu::CompileRequest req;
  req.name = c.file;
  if (!sources.resolve(c.file, req.source)) return "no kernel file " + c.file;
  req.defines = c.defines;
  req.fast_math = t.fast_math;
  req.includes = &sources;
  try {
    std::string log;
    cuda::compile_cuda(req, t.major, t.minor, &log);
    return log.empty() ? "" : describe(c, t) + " compiles with warnings:\n" + log;
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

TEST(CudaKernels, EveryKernelHasCompileCases) {
  std::set<std::string> kernels, covered;
  for (const gpu::EmbeddedFile& f : gpu::cuda_kernel_files()) {
    const std::string name = f.name;
    if (name.size() > 3 && name.ends_with(".cu") && name.find('/') == std::string::npos)
      kernels.insert(name);
  }
  EXPECT_FALSE(kernels.empty());
  for (const CudaCompileCase& c : cuda_compile_cases().all()) {
    covered.insert(c.file);
    EXPECT_TRUE(kernels.count(c.file))
        << "a compile case names " << c.file << ", which kernels/cuda does not have";
  }
  for (const std::string& k : kernels)
    EXPECT_TRUE(covered.count(k)) << "kernels/cuda/" << k
                                  << " has no compile cases: register the define sets the host "
                                     "uses for it (tests/cuda_compile.h)";
}

TEST(CudaKernels, EveryCaseCompilesForSm90AndASampleForSm80) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const gpu::SourceTable sources(gpu::cuda_kernel_files());
  const std::vector<CudaCompileCase>& cases = cuda_compile_cases().all();
  ASSERT_FALSE(cases.empty());
  // NVRTC takes ~0.1-1 s a compile, most of it in one thread: compile the cases in parallel.
  struct Job {
    const CudaCompileCase* c;
    const Target* t;
    std::string problem;
  };
  std::vector<Job> jobs;
  std::set<std::string> files_seen;
  for (size_t i = 0; i < cases.size(); i++) {
    const bool first_of_file = files_seen.insert(cases[i].file).second;
    if (first_of_file || i % kSm80Sample == 0) jobs.push_back({&cases[i], &kTargets[0], {}});
    jobs.push_back({&cases[i], &kTargets[1], {}});
  }
  std::atomic<size_t> next{0};
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n_threads = std::max(2u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (size_t w = 0; w < n_threads; w++)
    threads.emplace_back([&] {
      for (size_t j = next++; j < jobs.size(); j = next++)
        jobs[j].problem = compile_problem(sources, *jobs[j].c, *jobs[j].t);
    });
  for (std::thread& th : threads) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%zu compiles (NVRTC %s) on %zu threads in %.1f s\n", jobs.size(),
              cuda::nvrtc_version().c_str(), n_threads, seconds);
  for (const Job& j : jobs)
    if (!j.problem.empty()) ADD_FAILURE() << j.problem;
}

// Programmatic dependent launch (kernels/cuda/include/common.cuh): the host may start a kernel
// while the previous one runs, so each kernel must wait for it before its first access, and its
// module must carry the marker the host looks for (a kernel without the wait would race).
TEST(CudaKernels, EveryKernelWaitsForThePreviousGridFirst) {
  size_t entries = 0;
  for (const gpu::EmbeddedFile& f : gpu::cuda_kernel_files()) {
    const std::string name = f.name, text(f.text, f.size);
    if (!name.ends_with(".cu")) continue;
    for (size_t at = text.find("__global__"); at != std::string::npos;
         at = text.find("__global__", at + 1)) {
      const size_t open = text.find('{', at);
      ASSERT_NE(open, std::string::npos) << name;
      size_t first = text.find_first_not_of(" \n", open + 1);
      // At most a call of the file's prefetch_weights (L2 hints only) comes before it.
      if (text.compare(first, 23, "prefetch_weights(args);") == 0)
        first = text.find_first_not_of(" \n", first + 23);
      EXPECT_EQ(text.compare(first, 20, "wick_kernel_begin();"), 0)
          << "kernels/cuda/" << name << ": a kernel's first statement must be wick_kernel_begin()";
      entries++;
    }
  }
  EXPECT_GE(entries, 20u);

  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const gpu::SourceTable sources(gpu::cuda_kernel_files());
  const CudaCompileCase& c = cuda_compile_cases().all().front();
  gpu::CompileRequest req;
  req.name = c.file;
  ASSERT_TRUE(sources.resolve(c.file, req.source));
  req.defines = c.defines;
  req.includes = &sources;
  const gpu::ModuleCode code = cuda::compile_cuda(req, 9, 0);
  const std::string_view bytes(reinterpret_cast<const char*>(code.data()), code.size());
  EXPECT_NE(bytes.find("wick_waits_for_previous_grid"), std::string_view::npos)
      << c.file << ": the compiled module lost the dependent-launch marker";
}

// A kernel that does not compile is an Error(Internal) naming the file, its defines and NVRTC's
// log; headers come from the resolver, a missing one is named.
TEST(CudaKernels, OnlyWholeCubinsAreLoaded) {
  // cuModuleLoadData takes no size: a cached module cut short must be refused before the driver
  // sees it (the kernel cache then compiles it again).
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  gpu::SourceTable sources;
  sources.add("whole.cu", "extern \"C\" __global__ void wick_main(float* p) { p[0] *= 2.0f; }\n");
  gpu::CompileRequest req;
  req.name = "whole.cu";
  ASSERT_TRUE(sources.resolve("whole.cu", req.source));
  req.includes = &sources;
  const gpu::ModuleCode code = cuda::compile_cuda(req, 9, 0);
  ASSERT_GT(code.size(), 256u);
  EXPECT_TRUE(cuda::cubin_is_whole(code));
  for (size_t cut :
       {size_t{0}, size_t{63}, size_t{64}, code.size() / 4, code.size() / 2, code.size() - 1}) {
    SCOPED_TRACE(cut);
    EXPECT_FALSE(cuda::cubin_is_whole(std::span(code.data(), cut)));
  }
  EXPECT_FALSE(cuda::cubin_is_whole(std::vector<uint8_t>(code.size(), 0xab)));
  gpu::ModuleCode other_machine = code;
  other_machine[18] = 62;  // EM_X86_64
  EXPECT_FALSE(cuda::cubin_is_whole(other_machine));
  // A section that claims bytes past the end: a section with bytes in the file, its size made huge.
  uint64_t sh_off;
  uint16_t sh_count;
  std::memcpy(&sh_off, code.data() + 40, 8);
  std::memcpy(&sh_count, code.data() + 60, 2);
  uint64_t with_bytes = 0;  // the header's offset
  for (uint64_t i = 1; i < sh_count; i++) {
    uint32_t type;
    std::memcpy(&type, code.data() + sh_off + i * 64 + 4, 4);
    if (type != 0 && type != 8) with_bytes = sh_off + i * 64;  // not SHT_NULL or SHT_NOBITS
  }
  ASSERT_NE(with_bytes, 0u);
  gpu::ModuleCode long_section = code;
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(long_section.data() + with_bytes + 32, &huge, 8);
  EXPECT_FALSE(cuda::cubin_is_whole(long_section));
}

TEST(CudaKernels, CompileErrorsNameTheKernelDefinesAndLog) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  gpu::SourceTable sources;
  sources.add("include/answer.cuh", "#pragma once\nconstexpr int kAnswer = ANSWER;\n");
  sources.add("good.cu",
              "#include \"include/answer.cuh\"\n"
              "extern \"C\" __global__ void wick_main(int* p) { p[0] = kAnswer; }\n");
  sources.add("bad.cu",
              "#include \"include/answer.cuh\"\n"
              "extern \"C\" __global__ void wick_main(int* p) { p[0] = kAnswer + undeclared; }\n");
  sources.add("missing.cu", "#include \"include/nowhere.cuh\"\n");
  auto compile = [&](const std::string& file) {
    gpu::CompileRequest req;
    req.name = file;
    EXPECT_TRUE(sources.resolve(file, req.source));
    req.defines = {{"ANSWER", "42"}};
    req.includes = &sources;
    return cuda::compile_cuda(req, 9, 0);
  };
  EXPECT_FALSE(compile("good.cu").empty());
  for (const char* file : {"bad.cu", "missing.cu"}) {
    try {
      compile(file);
      ADD_FAILURE() << file << " compiled";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::Internal);
      EXPECT_NE(what.find(file), std::string::npos) << what;
      EXPECT_NE(what.find("ANSWER=42"), std::string::npos) << what;
      EXPECT_NE(what.find(file == std::string("bad.cu") ? "undeclared" : "include/nowhere.cuh"),
                std::string::npos)
          << what;
    }
  }
}

}  // namespace wick::test

#endif  // WICK_WITH_CUDA
