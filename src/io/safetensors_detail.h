// Test hooks of the safetensors writer (not part of the public API).
#pragma once

#include <cstddef>

namespace wick::io {

// save_safetensors reads a non-contiguous or non-CPU tensor back in slices of dim 0 of at most
// this many bytes (default 64 MiB), so a huge strided tensor needs no full host copy. Tests
// lower it to exercise the slicing on small tensors.
size_t& safetensors_write_chunk_bytes();

}  // namespace wick::io
