#include "gpu/disk_cache.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "gpu/hash.h"
#include "io/file.h"
#include "wick/error.h"

namespace wick::gpu {

namespace {

// File layout: magic, key length (u64), key, payload length (u64), payload, then a hash (u64) of
// everything before it. Version 2: version 1 hashed the payload alone, so another entry's payload
// (with its hash) spliced in under this entry's key passed the check.
constexpr char kMagic[8] = {'W', 'I', 'C', 'K', 'K', 'C', '2', '\n'};
constexpr size_t kFixedBytes = sizeof(kMagic) + 3 * 8;
// Entries are kernels and driver pipeline caches; a file larger than this is not one of them.
constexpr uint64_t kMaxEntryBytes = 256u << 20;

void put_u64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::string_view as_text(const uint8_t* p, size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

// The payload of `entry` when it is exactly one well-formed entry for `key`.
std::optional<std::vector<uint8_t>> payload_of(const std::vector<uint8_t>& entry,
                                               const std::string& key) {
  const size_t size = entry.size();
  const uint8_t* in = entry.data();
  if (size < kFixedBytes || std::memcmp(in, kMagic, sizeof(kMagic)) != 0) return std::nullopt;
  size_t pos = sizeof(kMagic);
  const uint64_t key_len = get_u64(in + pos);
  pos += 8;
  if (key_len != key.size() || key_len > size - kFixedBytes || as_text(in + pos, key_len) != key)
    return std::nullopt;
  pos += key_len;
  const uint64_t len = get_u64(in + pos);
  pos += 8;
  if (len != size - pos - 8) return std::nullopt;
  const uint64_t sum = get_u64(in + pos + len);
  if (sum != hash64(as_text(in, pos + len))) return std::nullopt;
  return std::vector<uint8_t>(in + pos, in + pos + len);
}

}  // namespace

DiskCache::DiskCache(std::string folder) : folder_(std::move(folder)) {}

std::string DiskCache::default_folder() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/wick/kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/wick/kernels";
  return "";
}

std::string DiskCache::folder_for(const std::string& knob) {
  if (knob == "off" || knob == "0" || knob == "none") return "";
  return knob.empty() ? default_folder() : knob;
}

std::string DiskCache::path_for(const std::string& key) const {
  return folder_ + "/" + hash_hex128(key) + ".bin";
}

std::optional<std::vector<uint8_t>> DiskCache::load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::string why;
  const std::optional<io::ReadableFile> file = io::try_open_regular_file(path_for(key), why);
  if (!file) return std::nullopt;
  const std::optional<std::vector<uint8_t>> entry = io::read_whole_file(*file, kMaxEntryBytes);
  if (!entry) return std::nullopt;
  return payload_of(*entry, key);
}

bool DiskCache::store(const std::string& key, std::span<const uint8_t> data) const {
  if (!enabled() || kFixedBytes + key.size() + data.size() > kMaxEntryBytes) return false;
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec) return false;
  std::string out(kMagic, sizeof(kMagic));
  put_u64(out, key.size());
  out += key;
  put_u64(out, data.size());
  out.append(as_text(data.data(), data.size()));
  put_u64(out, hash64(out));
  try {
    // A symlink where the entry belongs is replaced, never written through.
    io::AtomicFileWriter file(path_for(key), "DiskCache::store", {.follow_symlink = false});
    file.write(out.data(), out.size());
    file.commit();
  } catch (const Error&) {
    return false;  // the cache then simply misses
  }
  return true;
}

}  // namespace wick::gpu
