// Custom kernels on GPU devices: the user's kernels (wick/custom_kernel.h) with the declarations
// generated around their bodies in the device's language, and wick's internal test kernels
// (run_custom). Both compile and cache through the kernel cache like every kernel of wick (the
// generated text is the source: its hash with its includes keys the memory and disk caches), and
// record one dispatch that declares what it reads and writes to the hazard tracker.
#include <sstream>

#include "gpu/gpu_device.h"
#include "wick/custom_kernel.h"

namespace wick::gpu {

using backend::Storage;

namespace {

// The storage type of a dtype in each language (include/dtype.glsl, include/dtype.cuh).
const char* glsl_type(DType dt) {
  switch (dt) {
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
    case DType::F16:
    case DType::BF16:
      return "uint16_t";
    case DType::U8:
      return "uint8_t";
    case DType::U32:
      return "uint";
    case DType::I32:
      return "int";
    case DType::I64:
      return "int64_t";
  }
  return "?";
}

const char* cuda_type(DType dt) {
  switch (dt) {
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
    case DType::F16:
    case DType::BF16:
      return "uint16_t";
    case DType::U8:
      return "uint8_t";
    case DType::U32:
      return "uint32_t";
    case DType::I32:
      return "int32_t";
    case DType::I64:
      return "int64_t";
  }
  return "?";
}

// Line directives make the compiler's messages count lines from the user's header and body.
void line_directive(std::ostringstream& o, const KernelSpec& s, const char* part) {
  o << "#line 1 \"" << s.name << "." << part << "\"\n";
}

// GLSL: each buffer an std430 block binding in order (inputs, then outputs), the parameters the
// members of an unnamed push-constant block: all of them read as plain names.
std::string glsl_source(const KernelSpec& s) {
  std::ostringstream o;
  o << "#version 450\n"
    << "#extension GL_GOOGLE_cpp_style_line_directive : require\n"
    << "#include \"include/common.glsl\"\n"
    << "#include \"include/dtype.glsl\"\n";
  uint32_t binding = 0;
  for (const KernelBuffer& b : s.inputs) {
    o << "layout(set = 0, binding = " << binding << ") readonly buffer wick_buffer_" << binding
      << " { " << glsl_type(b.dtype) << " " << b.name << "[]; };\n";
    binding++;
  }
  // Outputs may be read back by the kernel that writes them (accumulators).
  for (const KernelBuffer& b : s.outputs) {
    o << "layout(set = 0, binding = " << binding << ") buffer wick_buffer_" << binding << " { "
      << glsl_type(b.dtype) << " " << b.name << "[]; };\n";
    binding++;
  }
  if (!s.params.empty()) {
    o << "layout(push_constant) uniform wick_params {";
    for (const KernelParam& p : s.params) o << " " << glsl_type(p.dtype) << " " << p.name << ";";
    o << " };\n";
  }
  line_directive(o, s, "header");
  o << s.glsl.header << "\nvoid main() {\n";
  line_directive(o, s, "body");
  o << s.glsl.body << "\n}\n";
  return o.str();
}

// CUDA: wick's kernel ABI (include/common.cuh); buffers and parameters are locals of wick_main.
std::string cuda_source(const KernelSpec& s) {
  std::ostringstream o;
  o << "#include \"include/common.cuh\"\n#include \"include/dtype.cuh\"\n";
  if (!s.params.empty()) {
    o << "struct wick_params {";
    for (const KernelParam& p : s.params) o << " " << cuda_type(p.dtype) << " " << p.name << ";";
    o << " };\n";
  }
  line_directive(o, s, "header");
  o << s.cuda.header << "\n"
    << "extern \"C\" __global__ void wick_main(const __grid_constant__ wick::KernelArgs "
       "wick_args) {\n"
    // Launched as wick's own kernels are (common.cuh): it may start before the previous one ends.
    << "  wick_kernel_begin();\n";
  int binding = 0;
  for (const KernelBuffer& b : s.inputs) {
    o << "  const " << cuda_type(b.dtype) << "* __restrict__ " << b.name << " = buffer_at<const "
      << cuda_type(b.dtype) << ">(wick_args, " << binding++ << "); (void)" << b.name << ";\n";
  }
  for (const KernelBuffer& b : s.outputs) {
    o << "  " << cuda_type(b.dtype) << "* " << b.name << " = buffer_at<" << cuda_type(b.dtype)
      << ">(wick_args, " << binding++ << "); (void)" << b.name << ";\n";
  }
  if (!s.params.empty()) o << "  const wick_params& wick_p = PARAMS(wick_params, wick_args);\n";
  for (const KernelParam& p : s.params)
    o << "  const " << cuda_type(p.dtype) << " " << p.name << " = wick_p." << p.name << "; (void)"
      << p.name << ";\n";
  line_directive(o, s, "body");
  o << s.cuda.body << "\n}\n";
  return o.str();
}

}  // namespace

std::string custom_kernel_source(const KernelSpec& spec, DeviceKind kind) {
  return kind == DeviceKind::Cuda ? cuda_source(spec) : glsl_source(spec);
}

void GpuDevice::custom_kernel(const KernelSpec& spec, const std::vector<const Storage*>& inputs,
                              const std::vector<Storage*>& outputs,
                              const std::vector<uint32_t>& params, uint64_t threads) {
  const std::string name = "custom kernel " + spec.name;
  const char* op = name.c_str();
  const bool cuda = kind() == DeviceKind::Cuda;
  if ((cuda ? spec.cuda : spec.glsl).body.empty())
    fail(ErrorKind::Unsupported, op, "has no ", cuda ? "CUDA" : "GLSL", " source, which ",
         this->name(), " runs");
  const DeviceCaps& caps = device_caps();
  auto check_buffer = [&](const KernelBuffer& b, const Storage& s) {
    require_storage(b.dtype, op);
    if (s.nbytes() > caps.max_storage_buffer_range)
      fail(ErrorKind::Unsupported, op, "'", b.name, "' holds ", s.nbytes(),
           " bytes, more than one kernel binding of ", this->name(), " reaches (",
           caps.max_storage_buffer_range, ")");
  };
  for (size_t i = 0; i < inputs.size(); i++) check_buffer(spec.inputs[i], *inputs[i]);
  for (size_t i = 0; i < outputs.size(); i++) check_buffer(spec.outputs[i], *outputs[i]);
  for (const KernelParam& p : spec.params)
    if (p.dtype == DType::F64 && !caps.float64)
      fail(ErrorKind::Unsupported, op, "parameter '", p.name, "' is f64, which ", this->name(),
           " does not compute in");
  // The threads as a 2-D grid of workgroups, as the kernels' global_index() reads it.
  const uint64_t block = spec.threads_per_group;
  const uint64_t groups = std::max<uint64_t>((threads + block - 1) / block, 1);
  const uint64_t gx = std::min<uint64_t>(groups, caps.max_group_count_x);
  const uint64_t gy = (groups + gx - 1) / gx;
  if (gy > 65535)
    fail(ErrorKind::Unsupported, op, threads, " threads in workgroups of ", block,
         " need more workgroups than ", this->name(), " launches: use larger workgroups");
  if (threads == 0) return;

  KernelKey k = key_for(spec.name.c_str(), {}, {}, spec.threads_per_group);
  k.text = custom_kernel_source(spec, kind());
  const Pipeline* pipeline;
  try {
    pipeline = &kernels_->pipeline(k);
  } catch (const Error& e) {
    // The compiler's messages about the user's source: the user's error, not wick's. The
    // driver's message is "kernel compile: <name> (<defines>) failed ...:\n<the compiler's log>".
    if (e.kind() != ErrorKind::Internal) throw;
    const std::string msg = e.what();
    const size_t log = msg.find('\n');
    if (msg.find("kernel compile") == std::string::npos || log == std::string::npos)
      throw Error(ErrorKind::Parse, name + ": " + msg);
    throw Error(ErrorKind::Parse, name + ": its " + (cuda ? "CUDA" : "GLSL") +
                                      " source does not compile:" + msg.substr(log));
  }
  std::vector<BufferAccess> args;
  for (const Storage* s : inputs) args.push_back({&buffer(*s), Access::Read});
  for (Storage* s : outputs) args.push_back({&buffer(*s), Access::Write});
  const std::array<uint32_t, 3> grid = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1};
  queue_->record([&](CommandQueue::Recorder& r) { r.dispatch(*pipeline, args, params, grid); });
}

void GpuDevice::run_custom(const CustomKernel& kernel, std::initializer_list<const Storage*> inputs,
                           std::initializer_list<Storage*> outputs,
                           std::span<const uint32_t> push_constants,
                           std::array<uint32_t, 3> groups) {
  if (inputs.size() + outputs.size() > kMaxBindings)
    fail(ErrorKind::Unsupported, kernel.name.c_str(), "a custom kernel binds at most ",
         kMaxBindings, " buffers, got ", inputs.size() + outputs.size());
  if (push_constants.size_bytes() > kMaxPushConstantBytes)
    fail(ErrorKind::Unsupported, kernel.name.c_str(), "at most ", kMaxPushConstantBytes,
         " bytes of push constants, got ", push_constants.size_bytes());
  KernelKey k = key_for(kernel.name.c_str(), kernel.defines, kernel.constants, kernel.block);
  k.source = kernel.name;
  k.text = kernel.source;
  const Pipeline& pipeline = kernels_->pipeline(k);
  std::vector<BufferAccess> args;
  for (const Storage* s : inputs) args.push_back({&buffer(*s), Access::Read});
  for (Storage* s : outputs) args.push_back({&buffer(*s), Access::Write});
  queue_->record(
      [&](CommandQueue::Recorder& r) { r.dispatch(pipeline, args, push_constants, groups); });
}

}  // namespace wick::gpu
