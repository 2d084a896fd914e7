#include "cuda/cu_compiler.h"

#include <nvrtc.h>

#include <memory>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "cuda/cu_loader.h"
#include "gpu/kernel_cache.h"
#include "wick/error.h"

#ifndef WICK_NVRTC_FALLBACK
#define WICK_NVRTC_FALLBACK ""
#endif

namespace wick::cuda {

namespace {

// NVRTC's entry points, resolved once per process.
struct Nvrtc {
  DynamicLibrary lib{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", WICK_NVRTC_FALLBACK};
  decltype(&nvrtcVersion) version = nullptr;
  decltype(&nvrtcGetErrorString) error_string = nullptr;
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
  int major = 0, minor = 0;
  std::string why;  // empty when usable

  Nvrtc() {
    if (!lib.loaded()) {
      why = "NVRTC could not be loaded (" + lib.why() + ")";
      return;
    }
    const bool bound =
        lib.bind(version, "nvrtcVersion") && lib.bind(error_string, "nvrtcGetErrorString") &&
        lib.bind(create, "nvrtcCreateProgram") && lib.bind(destroy, "nvrtcDestroyProgram") &&
        lib.bind(compile, "nvrtcCompileProgram") && lib.bind(log_size, "nvrtcGetProgramLogSize") &&
        lib.bind(log, "nvrtcGetProgramLog") && lib.bind(cubin_size, "nvrtcGetCUBINSize") &&
        lib.bind(cubin, "nvrtcGetCUBIN");
    if (!bound) {
      why = "NVRTC is incomplete (" + lib.why() + ")";
      return;
    }
    if (version(&major, &minor) != NVRTC_SUCCESS) why = lib.name() + ": nvrtcVersion failed";
  }
};

const Nvrtc& nvrtc() {
  static const Nvrtc n;
  return n;
}

// NVRTC takes every header up front: the #include closure of `text`, each file once. A name the
// resolver lacks is left out, so that NVRTC reports it where it is included.
void collect_headers(const std::string& text, const gpu::IncludeResolver* resolver,
                     std::set<std::string>& seen,
                     std::vector<std::pair<std::string, std::string>>& out) {
  if (!resolver) return;
  for (const std::string& name : gpu::include_names(text)) {
    if (!seen.insert(name).second) continue;
    std::string header;
    if (!resolver->resolve(name, header)) continue;
    out.emplace_back(name, std::move(header));
    collect_headers(out.back().second, resolver, seen, out);
  }
}

std::string describe(const gpu::CompileRequest& req, const std::string& arch) {
  std::string s = req.name + " (" + arch + (req.fast_math ? ", fast math" : "");
  for (const auto& [name, value] : req.defines) s += " " + name + "=" + value;
  return s + ")";
}

}  // namespace

bool nvrtc_available(std::string* why) {
  const Nvrtc& n = nvrtc();
  if (why) *why = n.why;
  return n.why.empty();
}

std::string nvrtc_version() {
  const Nvrtc& n = nvrtc();
  return n.why.empty() ? std::to_string(n.major) + "." + std::to_string(n.minor) : "";
}

gpu::ModuleCode compile_cuda(const gpu::CompileRequest& req, int sm_major, int sm_minor,
                             std::string* log) {
  const Nvrtc& n = nvrtc();
  const std::string arch = "sm_" + std::to_string(sm_major) + std::to_string(sm_minor);
  if (!n.why.empty()) fail(ErrorKind::Device, "kernel compile", describe(req, arch), ": ", n.why);

  std::set<std::string> seen;
  std::vector<std::pair<std::string, std::string>> headers;
  collect_headers(req.source, req.includes, seen, headers);
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }

  nvrtcProgram prog = nullptr;
  const nvrtcResult created =
      n.create(&prog, req.source.c_str(), req.name.c_str(), static_cast<int>(headers.size()),
               header_texts.data(), header_names.data());
  if (created != NVRTC_SUCCESS)
    fail(ErrorKind::Internal, "kernel compile", describe(req, arch),
         ": nvrtcCreateProgram failed: ", n.error_string(created));
  const auto destroy = [&n](nvrtcProgram* p) { n.destroy(p); };
  const std::unique_ptr<nvrtcProgram, decltype(destroy)> owner(&prog, destroy);

  std::vector<std::string> options = {
      "--gpu-architecture=" + arch,  // real architecture: a cubin, no PTX JIT at load time
      "-default-device", "--std=c++17",
      // wick's CPU keeps subnormals, and its results are the reference: never flush them to zero
      // (--ftz=true, implied by --use_fast_math, also turns float sqrt, division and the math
      // library's subnormal paths approximate). Fast math only allows contracting a * b + c into
      // an FMA, one rounding instead of two; kernels may also test WICK_FAST_MATH.
      "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
      req.fast_math ? "--fmad=true" : "--fmad=false"};
  if (req.fast_math) options.emplace_back("-DWICK_FAST_MATH=1");
  for (const auto& [name, value] : req.defines)
    options.push_back("-D" + name + (value.empty() ? "" : "=" + value));
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  const nvrtcResult compiled = n.compile(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_bytes = 0;
  std::string text;
  if (n.log_size(prog, &log_bytes) == NVRTC_SUCCESS && log_bytes > 1) {
    text.resize(log_bytes);
    if (n.log(prog, text.data()) != NVRTC_SUCCESS) text.clear();
    while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
  }
  if (compiled != NVRTC_SUCCESS)
    fail(ErrorKind::Internal, "kernel compile", describe(req, arch), " failed (",
         n.error_string(compiled), "):\n", text);
  if (log) *log = std::move(text);

  size_t bytes = 0;
  if (n.cubin_size(prog, &bytes) != NVRTC_SUCCESS || bytes == 0)
    fail(ErrorKind::Internal, "kernel compile", describe(req, arch), ": NVRTC returned no cubin");
  gpu::ModuleCode code(bytes);
  if (n.cubin(prog, reinterpret_cast<char*>(code.data())) != NVRTC_SUCCESS)
    fail(ErrorKind::Internal, "kernel compile", describe(req, arch), ": nvrtcGetCUBIN failed");
  return code;
}

}  // namespace wick::cuda
