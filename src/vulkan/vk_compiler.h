// GLSL -> SPIR-V with shaderc (linked statically), #includes resolved from the embedded sources.
#pragma once

#include "gpu/driver.h"

namespace wick::vulkan {

// Compiles a compute shader for Vulkan 1.2. Throws Error(Internal) with the compiler log.
gpu::ModuleCode compile_glsl(const gpu::CompileRequest& req);

}  // namespace wick::vulkan
