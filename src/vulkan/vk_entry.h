// The Vulkan backend's entry in the registry's table (src/backend/registry.cpp).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace wick::vulkan {

std::shared_ptr<backend::BackendDevice> open_device(int ordinal);
int device_count();
std::string absent_reason();

}  // namespace wick::vulkan
