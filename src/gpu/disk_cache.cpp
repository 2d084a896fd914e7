#include "gpu/disk_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gpu/hash.h"

namespace wick::gpu {

namespace fs = std::filesystem;

namespace {

// File layout: magic, key length (u64), key, payload length (u64), payload, payload hash (u64).
constexpr char kMagic[8] = {'W', 'I', 'C', 'K', 'K', 'C', '1', '\n'};

void put_u64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}

bool get_u64(const std::string& in, size_t& pos, uint64_t& v) {
  if (in.size() < pos + 8) return false;
  std::memcpy(&v, in.data() + pos, 8);
  pos += 8;
  return true;
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
  std::ifstream f(path_for(key), std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string in = ss.str();
  size_t pos = sizeof(kMagic);
  uint64_t key_len, len, sum;
  if (in.size() < pos || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0) return std::nullopt;
  if (!get_u64(in, pos, key_len) || in.size() - pos < key_len) return std::nullopt;
  if (in.compare(pos, key_len, key) != 0 || key_len != key.size()) return std::nullopt;
  pos += key_len;
  if (!get_u64(in, pos, len) || in.size() - pos < len) return std::nullopt;
  const std::string_view payload(in.data() + pos, len);
  pos += len;
  if (!get_u64(in, pos, sum) || sum != hash64(payload) || pos != in.size()) return std::nullopt;
  return std::vector<uint8_t>(payload.begin(), payload.end());
}

bool DiskCache::store(const std::string& key, std::span<const uint8_t> data) const {
  if (!enabled()) return false;
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (ec) return false;
  const std::string_view payload(reinterpret_cast<const char*>(data.data()), data.size());
  std::string out(kMagic, sizeof(kMagic));
  put_u64(out, key.size());
  out += key;
  put_u64(out, payload.size());
  out.append(payload);
  put_u64(out, hash64(payload));
  // A temporary name unique to this process and thread, then an atomic rename.
  static std::atomic<uint64_t> counter{0};
  const std::string final_path = path_for(key);
  std::ostringstream tmp;
  tmp << final_path << ".tmp." << ::getpid() << "."
      << std::hash<std::thread::id>{}(std::this_thread::get_id()) << "." << counter++;
  {
    std::ofstream f(tmp.str(), std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!f.good()) {
      f.close();
      fs::remove(tmp.str(), ec);
      return false;
    }
  }
  fs::rename(tmp.str(), final_path, ec);
  if (ec) {
    fs::remove(tmp.str(), ec);
    return false;
  }
  return true;
}

}  // namespace wick::gpu
