// The CUDA driver API (libcuda), loaded at run time: wick never links it, so one binary runs on
// machines without an NVIDIA driver and `wick info` can say why CUDA is absent.
#pragma once

#include <cuda.h>

#include <string>

#include "cuda/cu_loader.h"

namespace wick::cuda {

// The entry points wick uses, resolved once per process. The names are the versioned symbols
// cuda.h maps the plain names to (cuMemAlloc -> cuMemAlloc_v2).
struct DriverApi {
#define WICK_CU_FN(name) decltype(&::name) name = nullptr;
#define WICK_CU_FUNCTIONS(X)                                                                      \
  X(cuInit)                                                                                       \
  X(cuDriverGetVersion)                                                                           \
  X(cuGetErrorName)                                                                               \
  X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)                       \
      X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)                     \
          X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuStreamCreate) X(cuStreamDestroy)    \
              X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)          \
                  X(cuEventQuery) X(cuEventSynchronize) X(cuMemAlloc) X(cuMemFree)                \
                      X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer)             \
                          X(cuMemcpyAsync) X(cuMemsetD32Async) X(cuModuleLoadData)                \
                              X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute)      \
                                  X(cuLaunchKernel) X(cuStreamBeginCapture) X(cuStreamEndCapture) \
                                      X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphDestroy)    \
                                          X(cuGraphExecDestroy) X(cuPointerGetAttribute)
  WICK_CU_FUNCTIONS(WICK_CU_FN)
  // Optional (null when the driver lacks them): launches with attributes (programmatic dependent
  // launch) and a module's global variables.
#define WICK_CU_OPTIONAL_FUNCTIONS(X) X(cuLaunchKernelEx) X(cuModuleGetGlobal)
  WICK_CU_OPTIONAL_FUNCTIONS(WICK_CU_FN)
#undef WICK_CU_FN
  std::string library;  // the library that loaded
};

// The driver API, or null when libcuda cannot be loaded or initialised; `why` then says what
// was tried (for `wick info` and the error of Device::parse("cuda")).
const DriverApi* driver_api(std::string* why = nullptr);

// Throws Error(Device) naming `what` and the driver's error name and text when r is not success.
void check(const DriverApi& api, CUresult r, const char* what);

}  // namespace wick::cuda
