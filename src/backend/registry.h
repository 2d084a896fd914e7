// Opens backend devices by kind. The only place that knows which backends are compiled in.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"

namespace wick::backend {

std::shared_ptr<BackendDevice> cpu_device();
// Throws Error(Device) when the kind is not compiled in or the ordinal does not exist.
std::shared_ptr<BackendDevice> open_device(DeviceKind kind, int ordinal);
// How many devices of `kind` this process can open (0 when not compiled in).
int device_count(DeviceKind kind);

}  // namespace wick::backend
