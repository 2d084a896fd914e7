// `wick info`.
#pragma once

#include <iosfwd>

namespace wick::cli {

// Prints version, machine, devices and knobs; returns the exit status.
int run_info(std::ostream& os);

}  // namespace wick::cli
