// The CUDA backend's entry in the registry's table (src/backend/registry.cpp).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace wick::cuda {

std::shared_ptr<backend::BackendDevice> open_device(int ordinal);
// Devices with both the driver and NVRTC present (0 otherwise).
int device_count();
std::string absent_reason();

}  // namespace wick::cuda
