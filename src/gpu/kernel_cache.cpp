#include "gpu/kernel_cache.h"

#include <chrono>
#include <cstdio>
#include <sstream>

#include "gpu/hash.h"
#include "wick/config.h"
#include "wick/error.h"

namespace wick::gpu {

// ---- sources ----------------------------------------------------------------------------------

SourceTable::SourceTable(std::span<const EmbeddedFile> files) {
  for (const EmbeddedFile& f : files) files_.emplace(f.name, std::string(f.text, f.size));
}

void SourceTable::add(const std::string& name, std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  files_[name] = std::move(text);
  closure_.clear();
}

bool SourceTable::resolve(const std::string& name, std::string& text) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(name);
  if (it == files_.end()) return false;
  text = it->second;
  return true;
}

// The names in `#include "name"` lines.
std::vector<std::string> include_names(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t p = line.find_first_not_of(" \t");
    if (p == std::string::npos || line.compare(p, 8, "#include") != 0) continue;
    const size_t a = line.find('"', p), b = a == std::string::npos ? a : line.find('"', a + 1);
    if (b != std::string::npos) out.push_back(line.substr(a + 1, b - a - 1));
  }
  return out;
}

std::string SourceTable::closure_hash(const std::string& text) const {
  std::string acc = hash_hex128(text);
  for (const std::string& inc : include_names(text)) acc += name_hash(inc);
  return hash_hex128(acc);
}

std::string SourceTable::name_hash(const std::string& name) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = closure_.find(name);
    if (it != closure_.end()) return it->second;
  }
  std::string text;
  // A missing file makes the compiler fail with its own message; hash the name only.
  const std::string h = resolve(name, text) ? closure_hash(text) : "missing:" + name;
  std::lock_guard<std::mutex> lock(mu_);
  closure_[name] = h;
  return h;
}

// ---- the cache --------------------------------------------------------------------------------

struct KernelCache::ModuleSlot {
  std::once_flag once;
  std::mutex mu;  // guards code once built: a rejected disk entry is replaced
  std::shared_ptr<const ModuleCode> code;
  bool from_disk = false;
};

struct KernelCache::PipelineSlot {
  std::once_flag once;
  std::unique_ptr<Pipeline> pipeline;
};

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// "qmatvec.comp QTYPE=3 ACT_Q8=1 WG_SIZE=32 [1,2]": a pipeline's source, defines (not the
// device's WICK_ capabilities) and constants.
std::string pipeline_label(const KernelKey& key) {
  std::string s = key.source;
  if (key.entry != "main") s.append(":").append(key.entry);
  for (const auto& [name, value] : key.defines) {
    if (name.starts_with("WICK_")) continue;  // the device's capabilities, the same everywhere
    s.append(" ").append(name);
    if (!value.empty()) s.append("=").append(value);
  }
  for (size_t i = 0; i < key.constants.size(); i++)
    s.append(i ? "," : " [").append(std::to_string(key.constants[i]));
  if (!key.constants.empty()) s.append("]");
  return s;
}

}  // namespace

KernelCache::KernelCache(Driver& driver, const SourceTable& sources, DiskCache disk, bool fast_math)
    : driver_(driver), sources_(sources), disk_(std::move(disk)), fast_math_(fast_math) {}

KernelCache::~KernelCache() = default;

std::string KernelCache::disk_key(const std::string& module_key) const {
  return std::string("wick ") + version() + "\n" + driver_.identity() + "\n" + module_key;
}

void KernelCache::warn_bad_entry(const KernelKey& key, const char* what) {
  static std::once_flag warned;
  std::call_once(warned, [&] {
    std::fprintf(stderr, "wick: kernel cache entry for %s in %s %s; compiling it again\n",
                 key.source.c_str(), disk_.folder().c_str(), what);
  });
  std::lock_guard<std::mutex> lock(mu_);
  stats_.disk_rejects++;
}

ModuleCode KernelCache::build_module(const KernelKey& key, const std::string& module_key,
                                     bool compile, bool& from_disk) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dk = disk_key(module_key);
  if (!compile) {
    if (auto hit = disk_.load(dk)) {
      if (driver_.validate_module(*hit, key.entry)) {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.disk_hits++;
        stats_.compile_ms += ms_since(t0);
        from_disk = true;
        return std::move(*hit);
      }
      warn_bad_entry(key, "is not a valid module");
    }
  }
  CompileRequest req;
  req.name = key.source;
  if (!key.text.empty()) {
    req.source = key.text;
  } else if (!sources_.resolve(key.source, req.source)) {
    fail(ErrorKind::Internal, "kernel", "no kernel source named '", key.source, "'");
  }
  req.defines = key.defines;
  if (driver_.language().constants_at_compile)
    for (size_t i = 0; i < key.constants.size(); i++)
      req.defines.emplace_back("WICK_SPEC_" + std::to_string(i),
                               std::to_string(key.constants[i]) + "u");
  req.fast_math = fast_math_;
  req.includes = &sources_;
  ModuleCode code = driver_.compile(req);
  const bool stored = disk_.store(dk, code);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.compiles++;
  if (stored) stats_.disk_writes++;
  stats_.compile_ms += ms_since(t0);
  from_disk = false;
  return code;
}

std::shared_ptr<const ModuleCode> KernelCache::module(const KernelKey& key,
                                                      const std::string& module_key,
                                                      bool& from_disk) {
  ModuleSlot* slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& s = modules_[module_key];
    if (!s) s = std::make_unique<ModuleSlot>();
    slot = s.get();
  }
  // Only callers of this key wait here; a throw leaves the slot empty for a retry.
  std::call_once(slot->once, [&] {
    bool disk = false;
    auto code = std::make_shared<const ModuleCode>(build_module(key, module_key, false, disk));
    std::lock_guard<std::mutex> lock(slot->mu);
    slot->code = std::move(code);
    slot->from_disk = disk;
  });
  std::lock_guard<std::mutex> lock(slot->mu);
  from_disk = slot->from_disk;
  return slot->code;
}

const Pipeline& KernelCache::pipeline(const KernelKey& key) {
  WICK_ASSERT(key.block > 0);
  const bool constants_in_module = driver_.language().constants_at_compile;
  // The in-memory key names a file by its name (files do not change once added) and inline
  // source by its hash; it is built on every op, so no include hashing here, and the strings are
  // reused per thread rather than allocated.
  thread_local std::string pk, options;
  pk = key.source;
  if (!key.text.empty()) {
    pk += '#';
    pk += hash_hex128(key.text);
  }
  options.clear();
  for (const auto& [name, value] : key.defines) {
    options += '\n';
    options += name;
    options += '=';
    options += value;
  }
  if (constants_in_module) {
    options += "\nconstants=";
    for (uint32_t c : key.constants) {
      options += std::to_string(c);
      options += ',';
    }
  }
  pk += options;
  pk += "\nentry=";
  pk += key.entry;
  pk += "\nblock=";
  pk += std::to_string(key.block);
  if (!constants_in_module) {
    pk += "\nconstants=";
    for (uint32_t c : key.constants) {
      pk += std::to_string(c);
      pk += ',';
    }
  }

  PipelineSlot* slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& s = pipelines_[pk];
    if (!s) s = std::make_unique<PipelineSlot>();
    slot = s.get();
  }
  std::call_once(slot->once, [&] {
    // The module key covers the source with its includes: what the compiled code depends on.
    const std::string module_key =
        key.source + "\n" +
        (key.text.empty() ? sources_.name_hash(key.source) : sources_.closure_hash(key.text)) +
        options + "\nfast_math=" + (fast_math_ ? "1" : "0");
    bool from_disk = false;
    std::shared_ptr<const ModuleCode> code = module(key, module_key, from_disk);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      slot->pipeline = driver_.create_pipeline(*code, key.entry, key.constants, key.block);
    } catch (const Error&) {
      if (!from_disk) throw;
      // A module from disk the driver cannot use: compile it again and replace the entry (and
      // the in-memory module other pipelines of it will use).
      warn_bad_entry(key, "failed to make a pipeline");
      bool disk = false;
      auto fresh = std::make_shared<const ModuleCode>(build_module(key, module_key, true, disk));
      {
        std::lock_guard<std::mutex> lock(mu_);
        ModuleSlot& m = *modules_[module_key];
        std::lock_guard<std::mutex> mlock(m.mu);
        m.code = fresh;
        m.from_disk = false;
      }
      slot->pipeline = driver_.create_pipeline(*fresh, key.entry, key.constants, key.block);
    }
    slot->pipeline->label = pipeline_label(key);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.pipelines++;
    stats_.pipeline_ms += ms_since(t0);
  });
  return *slot->pipeline;
}

size_t KernelCache::KernelIdHash::operator()(const KernelId& id) const {
  uint64_t h = id.family;
  for (uint32_t v : id.values) h = (h ^ v) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

const Pipeline* KernelCache::find(const KernelId& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

void KernelCache::remember(const KernelId& id, const Pipeline& p) {
  std::lock_guard<std::mutex> lock(mu_);
  by_id_.emplace(id, &p);
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace wick::gpu
