#include "cuda/cu_compiler.h"

#include <nvrtc.h>

#include <cstring>
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

namespace {

// Little-endian fields of an ELF image (unaligned, so copied).
template <typename T>
T field(std::span<const uint8_t> code, uint64_t at) {
  T v;
  std::memcpy(&v, code.data() + at, sizeof(T));
  return v;
}

// Whether [offset, offset + size) lies within `total` bytes, without overflow.
bool within(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

}  // namespace

bool cubin_is_whole(std::span<const uint8_t> code) {
  constexpr uint64_t kHeader = 64, kSection = 64, kSegment = 56;
  constexpr uint16_t kMachineCuda = 190;
  constexpr uint32_t kNoBits = 8;  // SHT_NOBITS: no bytes in the file
  const uint64_t n = code.size();
  static const uint8_t magic[4] = {0x7f, 'E', 'L', 'F'};
  if (n < kHeader || std::memcmp(code.data(), magic, 4) != 0) return false;
  if (code[4] != 2 || code[5] != 1) return false;  // ELFCLASS64, little-endian
  if (field<uint16_t>(code, 18) != kMachineCuda) return false;
  const auto ph_off = field<uint64_t>(code, 32), sh_off = field<uint64_t>(code, 40);
  const auto ph_size = field<uint16_t>(code, 54), ph_count = field<uint16_t>(code, 56);
  const auto sh_size = field<uint16_t>(code, 58), sh_count = field<uint16_t>(code, 60);
  if ((ph_count && ph_size != kSegment) || (sh_count && sh_size != kSection) || sh_count == 0)
    return false;
  if (!within(ph_off, uint64_t{ph_count} * kSegment, n) ||
      !within(sh_off, uint64_t{sh_count} * kSection, n))
    return false;
  for (uint64_t i = 0; i < sh_count; i++) {
    const uint64_t h = sh_off + i * kSection;
    if (field<uint32_t>(code, h + 4) == kNoBits) continue;
    if (!within(field<uint64_t>(code, h + 24), field<uint64_t>(code, h + 32), n)) return false;
  }
  for (uint64_t i = 0; i < ph_count; i++) {
    const uint64_t h = ph_off + i * kSegment;
    if (!within(field<uint64_t>(code, h + 8), field<uint64_t>(code, h + 32), n)) return false;
  }
  return true;
}

}  // namespace wick::cuda
