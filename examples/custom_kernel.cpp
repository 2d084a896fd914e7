// Runs your own GPU kernel on wick tensors (wick/custom_kernel.h): z = alpha * x + y, written
// once in GLSL (Vulkan) and once in CUDA, checked against the same op in wick's own kernels.
//   custom_kernel [device: vulkan, cuda]
#include <wick/wick.h>

#include <cmath>
#include <cstdio>

int main(int argc, char** argv) {
  using wick::DType;
  try {
    const wick::Device dev = wick::Device::parse(argc > 1 ? argv[1] : "vulkan");
    const wick::CustomKernel axpy({
        .name = "axpy",
        .inputs = {{"x", DType::F32}, {"y", DType::F32}},
        .outputs = {{"z", DType::F32}},
        .params = {{"alpha", DType::F32}, {"n", DType::U32}},
        .glsl = {.body = "uint i = global_index(); if (i < n) z[i] = alpha * x[i] + y[i];"},
        .cuda = {.body = "uint32_t i = global_index(); if (i < n) z[i] = alpha * x[i] + y[i];"},
    });
    const int64_t n = 100000;
    dev.set_seed(7);
    const wick::Tensor x = wick::Tensor::randn(0, 1, {n}, DType::F32, dev);
    const wick::Tensor y = wick::Tensor::randn(0, 1, {n}, DType::F32, dev);
    const wick::Tensor z = axpy({.inputs = {x, y},
                                 .output_shapes = {{n}},
                                 .threads = static_cast<uint64_t>(n),
                                 .params = {2.5, static_cast<double>(n)}})[0];
    const double diff = (z - (x * 2.5 + y)).abs().max().to_scalar<float>();
    std::printf("axpy on %s: %lld elements, largest difference to wick's ops %g\n",
                dev.name().c_str(), static_cast<long long>(n), diff);
    return diff <= 1e-5 ? 0 : 1;    // (a driver may fuse the multiply-add)
  } catch (const wick::Error& e) {  // no such device, the CPU, source that does not compile
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
