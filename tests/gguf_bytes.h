// Test helpers for GGUF files: a byte builder that writes any layout by hand (version 2 files,
// malformed files) independently of GgufWriter, and a temporary folder per test.
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"
#include "wick/gguf.h"

namespace wick::testing {

class GgufBytes {
 public:
  std::vector<std::byte> bytes;

  GgufBytes& raw(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  template <typename T>
  GgufBytes& pod(T v) {
    return raw(&v, sizeof(T));
  }
  GgufBytes& u8(uint8_t v) { return pod(v); }
  GgufBytes& u32(uint32_t v) { return pod(v); }
  GgufBytes& u64(uint64_t v) { return pod(v); }
  GgufBytes& str(std::string_view s) { return u64(s.size()).raw(s.data(), s.size()); }
  GgufBytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  }
  // A key and its type id; the value follows with pod()/str()/...
  GgufBytes& key(std::string_view k, GgufValueType t) {
    return str(k).u32(static_cast<uint32_t>(t));
  }
  GgufBytes& kv_u32(std::string_view k, uint32_t v) { return key(k, GgufValueType::U32).u32(v); }
  GgufBytes& tensor_info(std::string_view name, const std::vector<uint64_t>& ne, QuantType type,
                         uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(static_cast<uint32_t>(type)).u64(offset);
  }
  GgufBytes& zeros(size_t n) {
    bytes.insert(bytes.end(), n, std::byte{0});
    return *this;
  }
  GgufBytes& pad(size_t alignment) {
    return zeros((alignment - bytes.size() % alignment) % alignment);
  }
  size_t size() const { return bytes.size(); }
  std::span<const std::byte> span() const { return bytes; }
};

// A fresh folder under the system temp folder, removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("wick_") + (info ? info->name() : "test") + "_" +
                       std::to_string(getpid()) + "_" + std::to_string(counter_++);
    for (char& ch : name)
      if (ch == '/') ch = '_';
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(std::string_view name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

inline void write_file(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

}  // namespace wick::testing
