#include "vulkan/vk_compiler.h"

#include <shaderc/shaderc.h>

#include <memory>
#include <string>

#include "wick/error.h"

namespace wick::vulkan {

namespace {

// One compiler per process; shaderc allows concurrent compiles on it.
shaderc_compiler_t compiler() {
  static shaderc_compiler_t c = shaderc_compiler_initialize();
  return c;
}

// What an #include resolves to; owned by shaderc between resolve and release.
struct IncludeResult {
  shaderc_include_result result{};
  std::string name, text;
};

shaderc_include_result* resolve_include(void* user, const char* requested, int /*type*/,
                                        const char* /*requesting*/, size_t /*depth*/) {
  auto* out = new IncludeResult;
  const auto* resolver = static_cast<const gpu::IncludeResolver*>(user);
  if (resolver && resolver->resolve(requested, out->text)) {
    out->name = requested;
  } else {
    out->text = std::string("no kernel source named '") + requested + "'";  // name stays empty
  }
  out->result.source_name = out->name.c_str();
  out->result.source_name_length = out->name.size();
  out->result.content = out->text.c_str();
  out->result.content_length = out->text.size();
  out->result.user_data = out;
  return &out->result;
}

void release_include(void* /*user*/, shaderc_include_result* r) {
  delete static_cast<IncludeResult*>(r->user_data);
}

}  // namespace

gpu::ModuleCode compile_glsl(const gpu::CompileRequest& req) {
  using Options =
      std::unique_ptr<shaderc_compile_options, decltype(&shaderc_compile_options_release)>;
  using Result = std::unique_ptr<shaderc_compilation_result, decltype(&shaderc_result_release)>;
  Options opts(shaderc_compile_options_initialize(), shaderc_compile_options_release);
  shaderc_compile_options_set_target_env(opts.get(), shaderc_target_env_vulkan,
                                         shaderc_env_version_vulkan_1_2);
  // The drivers optimise SPIR-V themselves; spirv-opt here mostly costs compile time.
  shaderc_compile_options_set_optimization_level(opts.get(), shaderc_optimization_level_zero);
  shaderc_compile_options_set_include_callbacks(opts.get(), resolve_include, release_include,
                                                const_cast<gpu::IncludeResolver*>(req.includes));
  for (const auto& [name, value] : req.defines)
    shaderc_compile_options_add_macro_definition(opts.get(), name.data(), name.size(), value.data(),
                                                 value.size());
  if (req.fast_math)
    shaderc_compile_options_add_macro_definition(opts.get(), "WICK_FAST_MATH", 14, "1", 1);
  Result res(shaderc_compile_into_spv(compiler(), req.source.data(), req.source.size(),
                                      shaderc_compute_shader, req.name.c_str(), "main", opts.get()),
             shaderc_result_release);
  if (!res ||
      shaderc_result_get_compilation_status(res.get()) != shaderc_compilation_status_success) {
    std::string defines;
    for (const auto& [name, value] : req.defines) defines += " " + name + "=" + value;
    fail(ErrorKind::Internal, "kernel compile", req.name, " (", defines, " ) failed:\n",
         res ? shaderc_result_get_error_message(res.get()) : "shaderc returned nothing");
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(shaderc_result_get_bytes(res.get()));
  return gpu::ModuleCode(bytes, bytes + shaderc_result_get_length(res.get()));
}

}  // namespace wick::vulkan
