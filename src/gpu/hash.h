// A fast 64-bit content hash for cache keys (not cryptographic; disk entries also store and
// compare their full key, so a collision is a miss, never a wrong kernel).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wick::gpu {

uint64_t hash64(std::string_view data, uint64_t seed = 0);
// 32 hex digits from two independently seeded hashes.
std::string hash_hex128(std::string_view data);

}  // namespace wick::gpu
