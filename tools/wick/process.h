// Re-running the wick binary itself in a child process. Knobs are read once per process, so a
// benchmark that compares knob settings (or a cold start) needs a fresh process per setting.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wick::cli {

// Environment changes for the child: {name, value}, or {name, nullopt} to unset it.
using EnvChanges = std::vector<std::pair<std::string, std::optional<std::string>>>;

// Runs this executable with `args` (argv[1..]) and the environment changed by `env`; returns
// its standard output (its standard error goes to ours). Throws Error(Internal) naming `what`
// when it cannot start or exits with a non-zero status.
std::string run_self(const std::vector<std::string>& args, const EnvChanges& env,
                     const std::string& what);

}  // namespace wick::cli
