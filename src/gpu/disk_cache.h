// wick's own on-disk cache of compiled kernels (and of driver pipeline-cache blobs).
//
// Entries are content-addressed: the file name is a hash of the full key, and the file stores the
// key itself, so an entry hits in any process that asks for the same key, wherever its binary
// lives. Keys name everything that changes the bytes (source hash, options, device/driver
// identity, wick version). An entry's checksum covers its key and its payload: load() returns a
// payload only from a file that is exactly the entry stored for that key (a truncated, spliced or
// older-format file is a miss, and the next store() replaces it). Only regular files of a bounded
// size are read (a FIFO or a link to a device is a miss, at once). Writes go to a temporary file
// renamed into place, so concurrent processes never see half an entry. Any I/O problem is a
// miss, never an error.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace wick::gpu {

class DiskCache {
 public:
  // An empty folder turns the cache off.
  explicit DiskCache(std::string folder);
  // The folder for a WICK_KERNEL_CACHE value: "off" -> "" (off), "" -> default_folder().
  static std::string folder_for(const std::string& knob);
  // $XDG_CACHE_HOME/wick/kernels, else $HOME/.cache/wick/kernels, else "" (off).
  static std::string default_folder();

  bool enabled() const { return !folder_.empty(); }
  const std::string& folder() const { return folder_; }
  std::optional<std::vector<uint8_t>> load(const std::string& key) const;
  // Returns false when the entry could not be written (the cache then simply misses later).
  bool store(const std::string& key, std::span<const uint8_t> data) const;
  // The file an entry lives in.
  std::string path_for(const std::string& key) const;

 private:
  std::string folder_;
};

}  // namespace wick::gpu
