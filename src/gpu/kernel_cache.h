// Kernels compiled at run time from embedded source, cached at three levels:
//   1. modules: compiled code per (source + its includes, defines, fast math), in memory;
//   2. pipelines: per (module, entry, specialization constants), in memory;
//   3. disk: compiled modules keyed by (source hash, options, device/driver identity, wick
//      version), so a new process skips the compiler wherever its binary lives. What comes from
//      disk is checked by the driver first, and an entry the driver cannot use (invalid, or its
//      pipeline fails) is compiled again from source and replaced, with one warning per process.
// Each entry is built once; threads that need another entry are not blocked meanwhile.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/disk_cache.h"
#include "gpu/driver.h"

namespace wick::gpu {

// The names in a source's `#include "name"` lines (what the closure hash and NVRTC's header list
// follow).
std::vector<std::string> include_names(const std::string& text);

// Kernel sources by name: the #include resolver handed to the compiler.
class SourceTable : public IncludeResolver {
 public:
  SourceTable() = default;
  explicit SourceTable(std::span<const EmbeddedFile> files);
  // Adds (or, before any kernel used it, replaces) a file.
  void add(const std::string& name, std::string text);
  bool resolve(const std::string& name, std::string& text) const override;
  // A hash of `text` and, recursively, of every file it #includes.
  std::string closure_hash(const std::string& text) const;
  // closure_hash() of the file `name`, memoised (files do not change once added).
  std::string name_hash(const std::string& name) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> files_;
  mutable std::map<std::string, std::string> closure_;  // name -> name_hash
};

// A compact name of a KernelKey chosen by its caller: a family (one per place that builds keys)
// and the values the key is built from (op, dtypes, constants). Ops look their pipeline up by it
// on every call and build the full key, with its strings, only the first time.
struct KernelId {
  uint32_t family = 0;
  std::array<uint32_t, 7> values{};
  bool operator==(const KernelId&) const = default;
};

struct KernelKey {
  std::string source;  // a SourceTable name; with `text` set, only a name for messages
  Defines defines;
  std::vector<uint32_t> constants;  // specialization constants 0, 1, ...
  std::string entry = "main";
  std::string text;    // inline source (custom kernels)
  uint32_t block = 0;  // threads per workgroup: the WG_SIZE define (set by the device)
};

class KernelCache {
 public:
  KernelCache(Driver& driver, const SourceTable& sources, DiskCache disk, bool fast_math);
  ~KernelCache();

  // The pipeline for `key`, compiling and creating it on first use.
  const Pipeline& pipeline(const KernelKey& key);
  // The pipeline named `id`; make_key() gives its KernelKey and runs only while `id` is unknown.
  // The caller makes sure that one id always names the same key.
  template <typename MakeKey>
  const Pipeline& pipeline(const KernelId& id, MakeKey&& make_key) {
    if (const Pipeline* p = find(id)) return *p;
    const Pipeline& p = pipeline(make_key());
    remember(id, p);
    return p;
  }

  const DiskCache& disk() const { return disk_; }
  bool fast_math() const { return fast_math_; }

  struct Stats {
    uint64_t compiles = 0;      // modules compiled by the compiler
    uint64_t disk_hits = 0;     // modules loaded from disk
    uint64_t disk_writes = 0;   // modules written to disk
    uint64_t pipelines = 0;     // pipelines created
    uint64_t disk_rejects = 0;  // disk entries the driver could not use (compiled again)
    double compile_ms = 0;      // time spent compiling or loading modules
    double pipeline_ms = 0;     // time spent creating pipelines
  };
  Stats stats() const;

 private:
  struct ModuleSlot;
  struct PipelineSlot;
  struct KernelIdHash {
    size_t operator()(const KernelId& id) const;
  };
  const Pipeline* find(const KernelId& id) const;
  void remember(const KernelId& id, const Pipeline& p);
  // The module for `key`; from_disk says whether it was loaded rather than compiled.
  std::shared_ptr<const ModuleCode> module(const KernelKey& key, const std::string& module_key,
                                           bool& from_disk);
  // Loads (unless `compile` is set) or compiles the module and stores it on disk.
  ModuleCode build_module(const KernelKey& key, const std::string& module_key, bool compile,
                          bool& from_disk);
  // The module's disk-cache key.
  std::string disk_key(const std::string& module_key) const;
  void warn_bad_entry(const KernelKey& key, const char* what);

  Driver& driver_;
  const SourceTable& sources_;
  DiskCache disk_;
  bool fast_math_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<ModuleSlot>> modules_;
  std::unordered_map<std::string, std::unique_ptr<PipelineSlot>> pipelines_;
  std::unordered_map<KernelId, const Pipeline*, KernelIdHash> by_id_;
  Stats stats_;
};

}  // namespace wick::gpu
