// Custom kernels (wick/custom_kernel.h): the user's GLSL or CUDA body run on wick tensors on every
// GPU device under test (lavapipe in CI), checked against float64 references; the spec and launch
// checks; compiler errors; hazards; the memory and disk caches. The CUDA sources are also compiled
// with NVRTC where no CUDA device runs them.
#include <filesystem>

#include "gpu_test_util.h"
#include "wick/custom_kernel.h"
#ifdef WICK_WITH_CUDA
#include "cuda/cu_compiler.h"
#endif

namespace wick::testing {
namespace {

// z = alpha * x + y over n elements.
KernelSpec axpy_spec() {
  return {.name = "axpy",
          .inputs = {{"x", DType::F32}, {"y", DType::F32}},
          .outputs = {{"z", DType::F32}},
          .params = {{"alpha", DType::F32}, {"n", DType::U32}},
          .glsl = {.body = "uint i = global_index();\nif (i < n) z[i] = alpha * x[i] + y[i];"},
          .cuda = {.body = "uint32_t i = global_index();\nif (i < n) z[i] = alpha * x[i] + y[i];"}};
}

// Two outputs of two dtypes, a helper in the header and an i32 parameter:
// sq[i] = x[i]^2 (f32), h[i] = f16(x[i] + shift) rounded to nearest even.
KernelSpec two_outputs_spec() {
  return {.name = "square_and_half",
          .inputs = {{"x", DType::F32}},
          .outputs = {{"sq", DType::F32}, {"h", DType::F16}},
          .params = {{"n", DType::U32}, {"shift", DType::I32}},
          .glsl = {.body = "uint i = global_index();\n"
                           "if (i >= n) return;\n"
                           "sq[i] = square(x[i]);\n"
                           "h[i] = CONVERT(f16, x[i] + float(shift));",
                   .header = "float square(float v) { return v * v; }"},
          .cuda = {.body = "uint32_t i = global_index();\n"
                           "if (i >= n) return;\n"
                           "sq[i] = square(x[i]);\n"
                           "h[i] = CONVERT(f16, x[i] + float(shift));",
                   .header = "WICK_DEV float square(float v) { return v * v; }"}};
}

Ref map_ref(const Ref& r, const std::function<double(double)>& f) {
  Ref out = r;
  for (double& v : out.v) v = f(v);
  return out;
}

// ---- the spec and the launch, on any device ---------------------------------------------------

TEST(CustomKernelSpec, BadSpecsAreRefusedWhenMade) {
  auto with = [](const std::function<void(KernelSpec&)>& edit) {
    KernelSpec s = axpy_spec();
    edit(s);
    return s;
  };
  expect_error([&] { CustomKernel k(with([](KernelSpec& s) { s.name = "my kernel"; })); },
               ErrorKind::Unsupported, {"my kernel", "letters"});
  expect_error([&] { CustomKernel k(with([](KernelSpec& s) { s.inputs[1].name = "x"; })); },
               ErrorKind::Unsupported, {"axpy", "'x'", "twice"});
  expect_error([&] { CustomKernel k(with([](KernelSpec& s) { s.params[0].name = "wick_a"; })); },
               ErrorKind::Unsupported, {"axpy", "wick_a"});
  expect_error([&] { CustomKernel k(with([](KernelSpec& s) { s.outputs[0].name = "1z"; })); },
               ErrorKind::Unsupported, {"axpy", "1z"});
  expect_error([&] { CustomKernel k(with([](KernelSpec& s) { s.params[0].dtype = DType::F16; })); },
               ErrorKind::DType, {"axpy", "alpha", "f16"});
  expect_error([&] { CustomKernel k(with([](KernelSpec& s) { s.outputs.clear(); })); },
               ErrorKind::Unsupported, {"axpy", "no output"});
  expect_error(
      [&] {
        CustomKernel k(with([](KernelSpec& s) {
          for (int i = 0; i < 15; i++)
            s.inputs.push_back({std::string("in").append(std::to_string(i)), DType::F32});
        }));
      },
      ErrorKind::Unsupported, {"axpy", "16 buffers", "18"});
  expect_error(
      [&] {
        CustomKernel k(with([](KernelSpec& s) {
          for (int i = 0; i < 16; i++)
            s.params.push_back({std::string("p").append(std::to_string(i)), DType::F64});
        }));
      },
      ErrorKind::Unsupported, {"axpy", "128 bytes", "136"});
  expect_error([&] { CustomKernel k(with([](KernelSpec& s) { s.threads_per_group = 0; })); },
               ErrorKind::Unsupported, {"axpy", "threads_per_group"});
  expect_error(
      [&] {
        CustomKernel k(with([](KernelSpec& s) {
          s.glsl = {};
          s.cuda = {};
        }));
      },
      ErrorKind::Unsupported, {"axpy", "no source"});
}

TEST(CustomKernelSpec, TheCpuRunsNoCustomKernels) {
  const CustomKernel axpy(axpy_spec());
  const Tensor x = Tensor::ones({4}, DType::F32);
  expect_error(
      [&] {
        axpy({.inputs = {x, x}, .output_shapes = {{4}}, .threads = 4, .params = {1.0, 4.0}});
      },
      ErrorKind::Unsupported, {"axpy", "custom kernels need a GPU device", "cpu"});
}

TEST(CustomKernelSpec, LaunchesThatDoNotMatchTheSpecAreRefused) {
  const CustomKernel axpy(axpy_spec());
  const Tensor x = Tensor::ones({4}, DType::F32);
  auto run = [&](KernelLaunch l) { axpy(l); };
  expect_error(
      [&] {
        run({.inputs = {x}, .output_shapes = {{4}}, .params = {1, 4}});
      },
      ErrorKind::Shape, {"axpy", "takes 2 inputs, got 1"});
  expect_error(
      [&] {
        run({.inputs = {x, x.to_dtype(DType::F16)}, .output_shapes = {{4}}, .params = {1, 4}});
      },
      ErrorKind::DType, {"axpy", "input 1 'y' must be f32", "f16"});
  expect_error(
      [&] {
        run({.inputs = {x, Tensor()}, .output_shapes = {{4}}, .params = {1, 4}});
      },
      ErrorKind::Shape, {"axpy", "'y'", "undefined"});
  expect_error(
      [&] {
        run({.inputs = {x, x}, .output_shapes = {}, .params = {1, 4}});
      },
      ErrorKind::Shape, {"axpy", "1 outputs, got 0"});
  expect_error(
      [&] {
        run({.inputs = {x, x}, .output_shapes = {{4}}, .params = {1}});
      },
      ErrorKind::Shape, {"axpy", "2 parameters, got 1"});
  expect_error(
      [&] {
        run({.inputs = {x, x}, .output_shapes = {{4}}, .params = {1, 4.5}});
      },
      ErrorKind::OutOfRange, {"axpy", "'n'", "whole number", "4.5"});
  expect_error(
      [&] {
        run({.inputs = {x, x}, .output_shapes = {{4}}, .params = {1, -1}});
      },
      ErrorKind::OutOfRange, {"axpy", "'n'"});
  expect_error(
      [&] {
        run({.inputs = {x, x}, .output_shapes = {{4}}, .threads = 1ull << 32, .params = {1, 4}});
      },
      ErrorKind::Unsupported, {"axpy", "2^32"});
  KernelSpec none = axpy_spec();
  none.inputs.clear();
  const CustomKernel no_inputs(none);
  expect_error(
      [&] {
        no_inputs({.output_shapes = {{4}}, .params = {1, 4}});
      },
      ErrorKind::Device, {"axpy", "no inputs"});
}

// ---- on every GPU device ----------------------------------------------------------------------

class CustomKernels : public GpuDeviceTest {};

TEST_P(CustomKernels, AxpyWithScalarParametersMatchesFloat64) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  const Device d = device();
  const CustomKernel axpy(axpy_spec());
  for (int64_t n : {1, 255, 1000, 70000}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const Ref x = round_ref(random_ref(rng, {n}), DType::F32);
    const Ref y = round_ref(random_ref(rng, {n}), DType::F32);
    const double alpha = static_cast<float>(rng.uniform(-3, 3));
    Ref want = x;
    for (size_t i = 0; i < want.v.size(); i++) want.v[i] = alpha * x.v[i] + y.v[i];
    const auto out = axpy({.inputs = {make_tensor(x, DType::F32, d), make_tensor(y, DType::F32, d)},
                           .output_shapes = {{n}},
                           .threads = static_cast<uint64_t>(n),
                           .params = {alpha, static_cast<double>(n)}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].device(), d);
    EXPECT_EQ(out[0].dtype(), DType::F32);
    // Two f32 roundings (product, sum): the outputs were poisoned, so a missed element is NaN.
    WICK_EXPECT_CLOSE(out[0], want, Tol{1e-6, 2.5e-7});
  }
}

TEST_P(CustomKernels, ViewsAreReadAsTheirElementsInRowMajorOrder) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  const Device d = device();
  const CustomKernel axpy(axpy_spec());
  const Ref x = round_ref(random_ref(rng, {6, 10}), DType::F32);
  const Ref y = round_ref(random_ref(rng, {6, 10}), DType::F32);
  Ref want = x;
  for (size_t i = 0; i < want.v.size(); i++) want.v[i] = 0.5 * x.v[i] + y.v[i];
  for (Variant v : kAllVariants) {
    SCOPED_TRACE(variant_name(v));
    const auto out =
        axpy({.inputs = {make_tensor(x, DType::F32, d, v), make_tensor(y, DType::F32, d)},
              .output_shapes = {{6, 10}},
              .threads = 60,
              .params = {0.5, 60}});
    WICK_EXPECT_CLOSE(out[0], want, Tol{1e-6, 2.5e-7});
  }
}

TEST_P(CustomKernels, TwoOutputsOfTwoDTypesWithAHeader) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  const Device d = device();
  const CustomKernel k(two_outputs_spec());
  const int64_t n = 777;
  const int shift = static_cast<int>(rng.integer(-5, 5));
  const Ref x = round_ref(random_ref(rng, {3, 259}, -100, 100), DType::F32);
  const auto out = k({.inputs = {make_tensor(x, DType::F32, d)},
                      .output_shapes = {{n}, {3, 259}},
                      .threads = static_cast<uint64_t>(n),
                      .params = {static_cast<double>(n), static_cast<double>(shift)}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), Shape{n});
  EXPECT_EQ(out[1].dtype(), DType::F16);
  Ref sq = x;
  sq.shape = {n};
  for (double& v : sq.v) v = v * v;
  WICK_EXPECT_CLOSE(out[0], sq, Tol{0, 1.2e-7});
  // x + shift in f32, then rounded to f16 exactly as wick converts.
  Ref h =
      round_ref(map_ref(x, [&](double v) { return static_cast<float>(v + shift); }), DType::F16);
  WICK_EXPECT_CLOSE(out[1], h, Tol{0, 0});
}

TEST_P(CustomKernels, DeclaredInputsAndOutputsOrderItAgainstOtherOps) {
  PoisonOff quiet;
  const Device d = private_device([](gpu::GpuOptions& o) { o.queue.ops_per_buffer = 1000; });
  const CustomKernel axpy(axpy_spec());
  const Tensor a = Tensor::full(1.0, {256}, DType::F32, d);
  const Tensor b = Tensor::full(2.0, {256}, DType::F32, d);
  const Tensor c = Tensor::full(3.0, {256}, DType::F32, d);
  d.synchronize();
  auto barriers = [&] { return gpu(d).stats().queue.barriers; };
  const uint64_t before = barriers();
  const Tensor x = a + b;  // written by the previous op
  const Tensor independent = c + c;
  EXPECT_EQ(barriers() - before, 0u);
  const Tensor z =
      axpy({.inputs = {x, c}, .output_shapes = {{256}}, .threads = 256, .params = {2, 256}})[0];
  EXPECT_EQ(barriers() - before, 1u) << "the kernel reads x";
  const Tensor w = z * c;  // reads the kernel's output
  EXPECT_EQ(barriers() - before, 2u);
  EXPECT_EQ(w.to_vec<float>()[7], (2.0f * 3.0f + 3.0f) * 3.0f);
  EXPECT_EQ(independent.to_vec<float>()[0], 6.0f);
}

TEST_P(CustomKernels, CompileErrorsCarryTheCompilersMessage) {
  const Device d = device();
  KernelSpec s = axpy_spec();
  s.name = "broken";
  s.glsl.body = "uint i = global_index();\nz[i] = undefined_fn(x[i]);";
  s.cuda.body = s.glsl.body;
  const CustomKernel broken(s);
  const Tensor x = Tensor::ones({4}, DType::F32, d);
  auto run = [&] {
    broken({.inputs = {x, x}, .output_shapes = {{4}}, .threads = 4, .params = {1, 4}});
  };
  // The line is the body's second line, named as the body.
  const char* line = d.kind() == DeviceKind::Cuda ? "broken.body(2)" : "broken.body:2";
  expect_error(run, ErrorKind::Parse, {"broken", "source does not compile", "undefined_fn", line});
  expect_error(run, ErrorKind::Parse, {"undefined_fn"});  // and again: nothing half-cached
  // A kernel without source in this device's language.
  KernelSpec other = axpy_spec();
  (d.kind() == DeviceKind::Cuda ? other.cuda : other.glsl) = {};
  const CustomKernel elsewhere(other);
  expect_error(
      [&] {
        elsewhere({.inputs = {x, x}, .output_shapes = {{4}}, .threads = 4, .params = {1, 4}});
      },
      ErrorKind::Unsupported, {"axpy", d.kind() == DeviceKind::Cuda ? "CUDA" : "GLSL"});
}

TEST_P(CustomKernels, InputsFromAnotherDeviceAreRefused) {
  const Device d = device();
  const CustomKernel axpy(axpy_spec());
  const Tensor x = Tensor::ones({4}, DType::F32, d), cpu = Tensor::ones({4}, DType::F32);
  expect_error(
      [&] {
        axpy({.inputs = {x, cpu}, .output_shapes = {{4}}, .threads = 4, .params = {1, 4}});
      },
      ErrorKind::Device, {"axpy", "'y'", "cpu"});
}

TEST_P(CustomKernels, CompiledOncePerDeviceAndFoundOnDiskByTheNext) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("wick_custom_cache_" + std::string(device_kind_name(device().kind())) +
                        "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto with_cache = [&](gpu::GpuOptions& o) { o.kernel_cache = dir.string(); };
  const CustomKernel axpy(axpy_spec());
  auto run = [&](const Device& d, const CustomKernel& k) {
    const Tensor x = Tensor::arange(0, 300, DType::F32, d);
    return k({.inputs = {x, x}, .output_shapes = {{300}}, .threads = 300, .params = {3, 300}})[0]
        .to_vec<float>();
  };
  const Device first = private_device(with_cache);
  const std::vector<float> want = run(first, axpy);
  EXPECT_EQ(want[7], 28.0f);
  const auto cold = gpu(first).stats().kernels;
  run(first, axpy);
  run(first, CustomKernel(axpy_spec()));  // another object with the same spec: same pipeline
  const auto again = gpu(first).stats().kernels;
  EXPECT_EQ(again.compiles, cold.compiles);
  EXPECT_EQ(again.pipelines, cold.pipelines);
  // A new device (as a new process would) loads the kernel from disk and compiles nothing.
  const Device second = private_device(with_cache);
  EXPECT_EQ(run(second, axpy), want);
  const auto warm = gpu(second).stats().kernels;
  EXPECT_EQ(warm.compiles, 0u);
  EXPECT_EQ(warm.disk_hits, cold.compiles + cold.disk_hits);  // arange's and axpy's
  // Another body is another kernel.
  KernelSpec changed = axpy_spec();
  changed.glsl.body += "\n// changed";
  changed.cuda.body += "\n// changed";
  run(second, CustomKernel(changed));
  EXPECT_EQ(gpu(second).stats().kernels.compiles, 1u);
  fs::remove_all(dir);
}

// A custom kernel records like wick's own ops, so a capture holds it and replays read the inputs'
// new values.
TEST_P(CustomKernels, CapturedOnceAndReplayed) {
  const Device d = device();
  ASSERT_TRUE(d.can_capture());
  const CustomKernel axpy(axpy_spec());
  const Tensor x = Tensor::full(1.0, {300}, DType::F32, d);
  const Tensor y = Tensor::full(2.0, {300}, DType::F32, d);
  Tensor z;
  const Recording r = d.capture([&] {
    z = axpy({.inputs = {x, y}, .output_shapes = {{300}}, .threads = 300, .params = {3, 300}})[0];
  });
  x.const_set(5.0);
  r.replay();
  EXPECT_EQ(z.to_vec<float>()[299], 3.0f * 5.0f + 2.0f);
  y.const_set(-1.0);
  r.replay();
  EXPECT_EQ(z.to_vec<float>()[0], 3.0f * 5.0f - 1.0f);
}

WICK_INSTANTIATE_GPU_DEVICES(CustomKernels);

#ifdef WICK_WITH_CUDA
// The CUDA sources generated for the test kernels compile with NVRTC (no GPU needed), and a
// broken body fails with the compiler's message, so CI checks them where no CUDA device runs.
TEST(CustomKernelCuda, GeneratedSourcesCompileWithNvrtc) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const gpu::SourceTable includes(gpu::cuda_kernel_files());
  for (const KernelSpec& s : {axpy_spec(), two_outputs_spec()}) {
    gpu::CompileRequest req;
    req.name = s.name + ".cu";
    req.source = gpu::custom_kernel_source(s, DeviceKind::Cuda);
    req.defines = {{"WG_SIZE", std::to_string(s.threads_per_group)}};
    req.includes = &includes;
    EXPECT_FALSE(cuda::compile_cuda(req, 9, 0).empty()) << req.source;
    // Its module carries the dependent-launch marker (common.cuh), so the kernel must wait for
    // the previous grid before the user's body reads anything.
    const size_t wait = req.source.find("wick_kernel_begin();");
    EXPECT_NE(wait, std::string::npos) << req.source;
    EXPECT_LT(wait, req.source.find("buffer_at<")) << req.source;
  }
  KernelSpec broken = axpy_spec();
  broken.name = "broken";
  broken.cuda.body = "uint32_t i = global_index();\nz[i] = undefined_fn(x[i]);";
  gpu::CompileRequest req;
  req.name = "broken.cu";
  req.source = gpu::custom_kernel_source(broken, DeviceKind::Cuda);
  req.defines = {{"WG_SIZE", "256"}};
  req.includes = &includes;
  expect_error([&] { cuda::compile_cuda(req, 9, 0); }, ErrorKind::Internal,
               {"undefined_fn", "broken.body(2)"});
}
#endif

}  // namespace
}  // namespace wick::testing
