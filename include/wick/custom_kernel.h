// Custom kernels: your own GLSL (Vulkan devices) or CUDA (CUDA devices) source run on wick tensors.
//
// You declare the kernel's inputs, outputs and parameters by name and dtype, and write the body of
// its main function; wick generates the declarations around it, so that every run tells the
// runtime exactly which buffers the kernel reads and writes (the hazard tracker orders it against
// other ops by them). Outputs are always new tensors (a kernel never writes into an input), and
// inputs are only read. Kernels are compiled on first use on a device and cached like wick's own:
// in memory per device, and in the disk cache (WICK_KERNEL_CACHE) across processes, keyed by the
// generated source, its defines and the device. A body that does not compile is an
// Error(Parse) carrying the compiler's messages, whose line numbers count from the body's (or
// the header's) first line.
//
//   wick::CustomKernel axpy({
//       .name = "axpy",
//       .inputs = {{"x", wick::DType::F32}, {"y", wick::DType::F32}},
//       .outputs = {{"z", wick::DType::F32}},
//       .params = {{"alpha", wick::DType::F32}, {"n", wick::DType::U32}},
//       .glsl = {.body = "uint i = global_index(); if (i < n) z[i] = alpha * x[i] + y[i];"},
//       .cuda = {.body = "uint32_t i = global_index(); if (i < n) z[i] = alpha * x[i] + y[i];"},
//   });
//   wick::Tensor z = axpy({.inputs = {x, y}, .output_shapes = {x.shape()}, .threads = n,
//                          .params = {2.0, double(n)}})[0];
//
// What the body sees, in both languages:
//   - each input as a read-only array and each output as an array, named as declared, of the
//     dtype's storage type: f32 float, f64 double, u32 uint (uint32_t), i32 int (int32_t),
//     i64 int64_t, u8 uint8_t; f16 and bf16 as 16-bit words (uint16_t): convert with
//     LOAD(f16, v) (to float) and CONVERT(f16, v) (from any number, rounded to nearest even).
//     Arrays hold the tensors' elements in row-major order (inputs that are views with strides or
//     an offset are copied to contiguous tensors first).
//   - each parameter as a constant of its type (u32, i32, f32 or f64), named as declared.
//   - global_index(): this thread's linear index, 0 .. threads - 1 and beyond (the last
//     workgroup is full: check bounds); group_index() the workgroup's, WG_SIZE the threads per
//     workgroup. GLSL also has gl_LocalInvocationID, CUDA threadIdx, for the lane.
// GLSL bodies get wick's include/common.glsl and include/dtype.glsl; CUDA bodies
// include/common.cuh and include/dtype.cuh. `header` is placed before the main function, at file
// scope (helper functions, shared memory, #defines; in CUDA the buffers and parameters are
// locals of the kernel, so pass them to helpers as arguments).
//
// The CPU device runs no custom kernels (Error(Unsupported)). Limits: at most 16 buffers (inputs
// and outputs together), 128 bytes of parameters (in declaration order, each aligned to its size),
// 1 to 1024 threads per workgroup, fewer than 2^32 threads, and per buffer the device's
// storage-buffer range (128 MiB on lavapipe).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/shape.h"
#include "wick/tensor.h"

namespace wick {

// A buffer of a kernel (input or output): its name in the source and its dtype.
struct KernelBuffer {
  std::string name{};
  DType dtype = DType::F32;
};

// A scalar parameter: u32, i32, f32 or f64 (f64 only on devices with 64-bit floats).
struct KernelParam {
  std::string name{};
  DType dtype = DType::U32;
};

// Source in one language. The body is that of the main function.
struct KernelSource {
  std::string body{};
  std::string header{};  // optional, at file scope before the main function
};

struct KernelSpec {
  std::string name{};  // for messages and cache keys: letters, digits, '_'
  std::vector<KernelBuffer> inputs{};
  std::vector<KernelBuffer> outputs{};  // at least one
  std::vector<KernelParam> params{};
  KernelSource glsl{};  // for Vulkan devices
  KernelSource cuda{};  // for CUDA devices
  uint32_t threads_per_group = 256;
};

// One run: the inputs (in declared order, of the declared dtypes, on one device), the shape of
// each output, how many threads, and the parameters' values (in declared order; integers must be
// whole and in their type's range).
struct KernelLaunch {
  std::vector<Tensor> inputs{};
  std::vector<Shape> output_shapes{};
  uint64_t threads = 0;  // 0: nothing runs (the outputs are allocated but not written)
  std::vector<double> params{};
  std::optional<Device> device{};  // where it runs: needed only when there are no inputs
};

class CustomKernel {
 public:
  // Checks the spec (names are identifiers, unique and not starting with "wick_" or "gl_";
  // dtypes; limits); throws Error naming the kernel. Nothing is compiled yet.
  explicit CustomKernel(KernelSpec spec);

  // Runs the kernel and returns its outputs (new contiguous tensors of the declared dtypes),
  // without waiting, like any op. Errors: Shape/DType/Device for inputs or parameters that do not
  // match the spec, Parse for source that does not compile, Unsupported for a device that cannot
  // run it (the CPU, a dtype it does not hold, no source in its language, beyond its limits).
  std::vector<Tensor> operator()(const KernelLaunch& launch) const;

  const KernelSpec& spec() const { return *spec_; }

 private:
  std::shared_ptr<const KernelSpec> spec_;
};

}  // namespace wick
