// CUDA C++ -> cubin with NVRTC, which is loaded at run time (never linked), #includes resolved
// from the embedded kernel sources.
#pragma once

#include <string>

#include "gpu/driver.h"

namespace wick::gpu {
// The files of kernels/cuda and kernels/shared (generated at build time).
std::span<const EmbeddedFile> cuda_kernel_files();
}  // namespace wick::gpu

namespace wick::cuda {

// Whether NVRTC can be loaded; otherwise `why` (when given) says what was tried.
bool nvrtc_available(std::string* why = nullptr);
// NVRTC's version, e.g. "13.0" (empty without NVRTC): part of the kernel cache key.
std::string nvrtc_version();

// Compiles `req` into a cubin for sm_<sm_major><sm_minor>. Every header the source includes,
// directly or not, comes from req.includes. Throws Error(Device) without NVRTC and
// Error(Internal) with the kernel's name, defines and NVRTC's log when it does not compile;
// `log`, when given, receives NVRTC's log of a successful compile (its warnings).
gpu::ModuleCode compile_cuda(const gpu::CompileRequest& req, int sm_major, int sm_minor,
                             std::string* log = nullptr);

// Whether `code` is a whole 64-bit little-endian CUDA ELF image: its header, program and section
// headers, and every section's and segment's bytes lie within `code`. cuModuleLoadData takes no
// size, so a module from the disk cache that was cut short would have the driver read past its
// end (a crash or a hang, seen on the H200): such modules are compiled again instead.
bool cubin_is_whole(std::span<const uint8_t> code);

}  // namespace wick::cuda
