#pragma once
#include "wick/config.h"

namespace wick::core {
inline const Knobs& knobs() { return wick::knobs(); }
}  // namespace wick::core
