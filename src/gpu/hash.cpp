#include "gpu/hash.h"

#include <cstring>

namespace wick::gpu {

namespace {

// The splitmix64 finaliser: a cheap, well-mixing bijection.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t hash64(std::string_view data, uint64_t seed) {
  uint64_t h = mix(seed ^ 0x9e3779b97f4a7c15ull ^ data.size());
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    h = mix(h ^ w) + 0x9e3779b97f4a7c15ull;
  }
  uint64_t tail = 0;
  if (data.size() > i) std::memcpy(&tail, data.data() + i, data.size() - i);
  return mix(h ^ tail ^ (static_cast<uint64_t>(data.size() - i) << 56));
}

std::string hash_hex128(std::string_view data) {
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  const uint64_t h[2] = {hash64(data, 1), hash64(data, 0x5eed5eed5eed5eedull)};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 16; i++) out[k * 16 + i] = digits[(h[k] >> (60 - 4 * i)) & 15];
  return out;
}

}  // namespace wick::gpu
