// `wick serve`: an OpenAI-compatible HTTP server (docs/serve.md).
#pragma once

#include "args.h"

namespace wick::cli {

// Serves args.model until SIGINT or SIGTERM; the exit status.
int run_serve(const Args& args);

}  // namespace wick::cli
