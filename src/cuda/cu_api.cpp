#include "cuda/cu_api.h"

#include "wick/error.h"

namespace wick::cuda {

namespace {

#define WICK_STR_(x) #x
#define WICK_STR(x) WICK_STR_(x)

struct Loaded {
  DynamicLibrary lib{"libcuda.so.1", "libcuda.so"};
  DriverApi api;
  std::string why;  // empty when usable

  Loaded() {
    if (!lib.loaded()) {
      why = "the NVIDIA driver library could not be loaded (" + lib.why() + ")";
      return;
    }
    bool bound = true;
#define WICK_CU_BIND(name) bound = lib.bind(api.name, WICK_STR(name)) && bound;
    WICK_CU_FUNCTIONS(WICK_CU_BIND)
#undef WICK_CU_BIND
#define WICK_CU_BIND_OPTIONAL(name) lib.bind(api.name, WICK_STR(name));
    WICK_CU_OPTIONAL_FUNCTIONS(WICK_CU_BIND_OPTIONAL)
#undef WICK_CU_BIND_OPTIONAL
    if (!bound) {
      why = "the NVIDIA driver library is too old for wick (" + lib.why() + ")";
      return;
    }
    api.library = lib.name();
    const CUresult r = api.cuInit(0);
    if (r != CUDA_SUCCESS) {
      const char* name = nullptr;
      api.cuGetErrorName(r, &name);
      why = std::string("cuInit failed: ") + (name ? name : "unknown error") +
            (r == CUDA_ERROR_NO_DEVICE ? " (no CUDA device)" : "");
    }
  }
};

const Loaded& loaded() {
  static const Loaded l;
  return l;
}

}  // namespace

const DriverApi* driver_api(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.why;
  return l.why.empty() ? &l.api : nullptr;
}

void check(const DriverApi& api, CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  api.cuGetErrorName(r, &name);
  api.cuGetErrorString(r, &text);
  const ErrorKind kind = r == CUDA_ERROR_OUT_OF_MEMORY ? ErrorKind::Device : ErrorKind::Internal;
  fail(kind, "cuda", what, " failed: ", name ? name : "error", " (", text ? text : "", ")");
}

}  // namespace wick::cuda
