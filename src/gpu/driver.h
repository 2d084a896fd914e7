// The small interface a GPU API driver (Vulkan now, CUDA later) supplies to the gpu/ runtime.
//
// Everything above it — when to commit, where barriers go, which buffer to reuse, what to cache —
// is shared code in gpu/ (CommandQueue, HazardTracker, BufferPool, KernelCache). A driver only
// allocates, compiles, creates pipelines, records into one open command list and submits it.
// Recording calls are serialised by the caller (CommandQueue's lock); allocate/free, compile,
// pipeline creation, wait and completed() may be called from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace wick::gpu {

enum class MemoryKind : uint8_t {
  DeviceLocal,  // fastest for kernels; maybe not visible to the host
  HostVisible,  // mapped, coherent: uploads and read-back
};

// One driver allocation. `handle` is opaque to the runtime.
struct Allocation {
  uint64_t handle = 0;
  std::byte* mapped = nullptr;  // set for HostVisible
  size_t size = 0;              // bytes usable (at least what was asked for)
};

// A compiled kernel module (SPIR-V words for Vulkan), as bytes so it can go to disk unchanged.
using ModuleCode = std::vector<uint8_t>;

// Macro definitions passed to the kernel compiler, e.g. {"X_DT", "f16"}.
using Defines = std::vector<std::pair<std::string, std::string>>;

// Resolves an #include name to its text; returns false when there is no such file.
struct IncludeResolver {
  virtual ~IncludeResolver() = default;
  virtual bool resolve(const std::string& name, std::string& text) const = 0;
};

struct CompileRequest {
  std::string name;    // for messages and #include resolution, e.g. "unary.comp"
  std::string source;  // the text
  Defines defines;
  bool fast_math = true;
  const IncludeResolver* includes = nullptr;
};

// A driver's pipeline object (kernel entry + specialization constants, ready to dispatch).
class Pipeline {
 public:
  virtual ~Pipeline() = default;
};

// A buffer bound to a dispatch (the whole allocation, at binding index = position).
struct Binding {
  uint64_t handle;
};

struct Dispatch {
  const Pipeline* pipeline = nullptr;
  std::span<const Binding> buffers;
  std::span<const uint32_t> push_constants;  // at most kMaxPushConstantBytes
  std::array<uint32_t, 3> groups{1, 1, 1};
};

inline constexpr size_t kMaxPushConstantBytes = 128;  // the Vulkan minimum guaranteed limit
inline constexpr size_t kMaxBindings = 8;

class Driver {
 public:
  virtual ~Driver() = default;

  // ---- memory -------------------------------------------------------------------------------
  virtual Allocation allocate(size_t bytes, MemoryKind kind) = 0;
  // Only called once no submitted work uses the allocation any more.
  virtual void free(const Allocation& a) = 0;

  // ---- kernels ------------------------------------------------------------------------------
  // Throws Error(Internal) with the compiler's log when the source does not compile.
  virtual ModuleCode compile(const CompileRequest& req) = 0;
  virtual std::unique_ptr<Pipeline> create_pipeline(const ModuleCode& code,
                                                    const std::string& entry,
                                                    std::span<const uint32_t> constants) = 0;
  // Everything about the device and driver that changes compiled code (for disk-cache keys).
  virtual std::string identity() const = 0;

  // ---- recording (serialised by the caller) -------------------------------------------------
  virtual void record_dispatch(const Dispatch& d) = 0;
  // A full memory barrier between everything recorded before and after it.
  virtual void record_barrier() = 0;
  virtual void record_copy(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
                           uint64_t bytes) = 0;
  // Fills bytes [offset, offset + bytes) with the 32-bit pattern (bytes: multiple of 4).
  virtual void record_fill(uint64_t dst, uint64_t offset, uint64_t bytes, uint32_t pattern) = 0;
  // Submits what was recorded as submission number `id` (ids increase by one per commit). The
  // submission starts only after submission id - 1 finished, with all its writes visible.
  virtual void commit(uint64_t id) = 0;

  // ---- completion (any thread) --------------------------------------------------------------
  virtual void wait(uint64_t id) = 0;
  // The highest submission id known to have finished (0 before any).
  virtual uint64_t completed() = 0;
};

}  // namespace wick::gpu
