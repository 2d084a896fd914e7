// Front end of custom kernels (wick/custom_kernel.h): checks the spec once and every launch
// against it, packs the parameter block, allocates the outputs and hands the rest to the backend,
// which generates the source in its language (gpu/gpu_custom.cpp).
#include "wick/custom_kernel.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <set>

#include "core/tensor_impl.h"
#include "shared/params.h"

namespace wick {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

size_t param_size(DType dt) {
  return dt == DType::F64 ? 8 : 4;
}

// The parameter block's bytes: each value at an offset aligned to its size (std430, and the C
// struct the CUDA source declares), the total a multiple of the largest alignment.
size_t block_bytes(const std::vector<KernelParam>& params) {
  size_t at = 0, align = 4;
  for (const KernelParam& p : params) {
    const size_t n = param_size(p.dtype);
    at = (at + n - 1) / n * n + n;
    align = std::max(align, n);
  }
  return (at + align - 1) / align * align;
}

}  // namespace

CustomKernel::CustomKernel(KernelSpec spec) {
  const std::string op = "custom kernel " + spec.name;
  if (!is_identifier(spec.name))
    fail(ErrorKind::Unsupported, "custom kernel",
         "the name must be letters, digits and '_' (not first), got '", spec.name, "'");
  std::set<std::string> names;
  auto check_name = [&](const std::string& what, const std::string& name) {
    if (!is_identifier(name) || name.rfind("wick_", 0) == 0 || name.rfind("gl_", 0) == 0)
      fail(ErrorKind::Unsupported, op.c_str(), what, " name '", name,
           "' must be letters, digits and '_' (not first), not starting with wick_ or gl_");
    if (!names.insert(name).second)
      fail(ErrorKind::Unsupported, op.c_str(), "the name '", name, "' is declared twice");
  };
  for (const KernelBuffer& b : spec.inputs) check_name("input", b.name);
  for (const KernelBuffer& b : spec.outputs) check_name("output", b.name);
  for (const KernelParam& p : spec.params) {
    check_name("parameter", p.name);
    if (p.dtype != DType::U32 && p.dtype != DType::I32 && p.dtype != DType::F32 &&
        p.dtype != DType::F64)
      fail(ErrorKind::DType, op.c_str(), "parameter '", p.name,
           "' must be u32, i32, f32 or f64, got ", p.dtype);
  }
  if (spec.outputs.empty()) fail(ErrorKind::Unsupported, op.c_str(), "declares no output");
  if (spec.inputs.size() + spec.outputs.size() > WICK_MAX_BINDINGS)
    fail(ErrorKind::Unsupported, op.c_str(), "binds at most ", WICK_MAX_BINDINGS,
         " buffers (inputs and outputs), got ", spec.inputs.size() + spec.outputs.size());
  if (block_bytes(spec.params) > WICK_MAX_PARAM_BYTES)
    fail(ErrorKind::Unsupported, op.c_str(), "parameters take at most ", WICK_MAX_PARAM_BYTES,
         " bytes, got ", block_bytes(spec.params));
  if (spec.threads_per_group < 1 || spec.threads_per_group > 1024)
    fail(ErrorKind::Unsupported, op.c_str(), "threads_per_group must be 1 to 1024, got ",
         spec.threads_per_group);
  if (spec.glsl.body.empty() && spec.cuda.body.empty())
    fail(ErrorKind::Unsupported, op.c_str(), "has no source (neither glsl nor cuda body)");
  spec_ = std::make_shared<const KernelSpec>(std::move(spec));
}

std::vector<Tensor> CustomKernel::operator()(const KernelLaunch& launch) const {
  const KernelSpec& spec = *spec_;
  const std::string name = "custom kernel " + spec.name;
  const char* op = name.c_str();
  if (launch.inputs.size() != spec.inputs.size())
    fail(ErrorKind::Shape, op, "takes ", spec.inputs.size(), " inputs, got ", launch.inputs.size());
  if (launch.output_shapes.size() != spec.outputs.size())
    fail(ErrorKind::Shape, op, "has ", spec.outputs.size(), " outputs, got ",
         launch.output_shapes.size(), " output shapes");
  if (launch.params.size() != spec.params.size())
    fail(ErrorKind::Shape, op, "takes ", spec.params.size(), " parameters, got ",
         launch.params.size());
  if (launch.threads > 0xffffffffull)
    fail(ErrorKind::Unsupported, op, "runs fewer than 2^32 threads, got ", launch.threads);
  if (!launch.device && launch.inputs.empty())
    fail(ErrorKind::Device, op, "has no inputs: say where it runs with KernelLaunch::device");
  const Device dev = launch.device ? *launch.device : launch.inputs[0].device();

  // Inputs: contiguous from element 0 (the kernel indexes its arrays from there).
  std::vector<Tensor> inputs;
  std::vector<const backend::Storage*> in_storages;
  for (size_t i = 0; i < spec.inputs.size(); i++) {
    const Tensor& t = launch.inputs[i];
    const KernelBuffer& b = spec.inputs[i];
    if (!t.defined())
      fail(ErrorKind::Shape, op, "input ", i, " '", b.name, "' is an undefined tensor");
    if (t.device() != dev)
      fail(ErrorKind::Device, op, "input ", i, " '", b.name, "' is on ", t.device().name(),
           ", the kernel runs on ", dev.name());
    if (t.dtype() != b.dtype)
      fail(ErrorKind::DType, op, "input ", i, " '", b.name, "' must be ", b.dtype, ", got ",
           core::describe(t));
    inputs.push_back(t.is_contiguous() && t.layout().start_offset == 0 ? t : t.copy());
    in_storages.push_back(inputs.back().storage().get());
  }

  // Parameters, packed as block_bytes() lays them out.
  std::vector<uint32_t> words(block_bytes(spec.params) / 4, 0);
  size_t at = 0;
  for (size_t i = 0; i < spec.params.size(); i++) {
    const KernelParam& p = spec.params[i];
    const double v = launch.params[i];
    const size_t n = param_size(p.dtype);
    at = (at + n - 1) / n * n;
    auto* dst = reinterpret_cast<unsigned char*>(words.data()) + at;
    auto integer = [&](double lo, double hi) {
      if (!(v >= lo && v <= hi && v == std::floor(v)))
        fail(ErrorKind::OutOfRange, op, "parameter '", p.name, "' is ", p.dtype,
             ": it must be a whole number in [", lo, ", ", hi, "], got ", v);
    };
    if (p.dtype == DType::U32) {
      integer(0, 4294967295.0);
      const auto u = static_cast<uint32_t>(v);
      std::memcpy(dst, &u, 4);
    } else if (p.dtype == DType::I32) {
      integer(-2147483648.0, 2147483647.0);
      const auto s = static_cast<int32_t>(v);
      std::memcpy(dst, &s, 4);
    } else if (p.dtype == DType::F32) {
      const auto f = static_cast<float>(v);
      std::memcpy(dst, &f, 4);
    } else {
      std::memcpy(dst, &v, 8);
    }
    at += n;
  }

  // Outputs: new tensors (the seed's Output::new rule): nothing the kernel writes aliases anything.
  std::vector<Tensor> outputs;
  std::vector<backend::Storage*> out_storages;
  for (size_t i = 0; i < spec.outputs.size(); i++) {
    outputs.push_back(core::empty(launch.output_shapes[i], spec.outputs[i].dtype, dev, op));
    out_storages.push_back(outputs.back().storage().get());
  }
  dev.backend().custom_kernel(spec, in_storages, out_storages, words, launch.threads);
  return outputs;
}

}  // namespace wick
