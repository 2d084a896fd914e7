// The small interface a GPU API driver (Vulkan, CUDA) supplies to the gpu/ runtime.
//
// Everything above it — when to commit, where barriers go, which buffer to reuse, what to cache,
// how an op becomes dispatches — is shared code in gpu/ (GpuDevice, CommandQueue, HazardTracker,
// BufferPool, KernelCache). A driver only says what the device can do and in which language its
// kernels are written, allocates, compiles, creates pipelines, records into one open command
// list and submits it.
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

#include "shared/params.h"

namespace wick::gpu {

// What the ops need to know about a device, whatever its API.
struct DeviceCaps {
  std::string name;
  bool is_cpu = false;                    // a CPU implementation (lavapipe): tuning tables differ
  bool float64 = false;                   // kernels can compute in double
  bool int64 = false;                     // kernels can use 64-bit integers
  bool storage16 = false;                 // 16-bit values in buffers (f16, bf16)
  bool storage8 = false;                  // 8-bit values in buffers (u8)
  uint64_t max_storage_buffer_range = 0;  // bytes one kernel binding can address
  uint32_t max_group_count_x = 0;
  uint32_t max_group_count_z = 0;
  uint32_t max_workgroup_size = 256;  // threads of a 1-D workgroup
  uint32_t subgroup_size = 0;
  uint32_t max_shared_memory = 0;    // bytes of shared memory per workgroup
  bool subgroup_arithmetic = false;  // subgroupAdd etc. (warp shuffles)
  bool int8_mma = false;  // warp-wide 8-bit integer MMA in the kernels (CUDA sm_80+: qmatvec's MMA)
  bool int_dot = false;   // dot products of four packed 8-bit integers (Vulkan: WICK_INT_DOT)
  uint64_t device_local_bytes = 0;  // the largest device-local heap
};

// A kernel source file compiled into the binary (see cmake/embed_kernels.cmake).
struct EmbeddedFile {
  const char* name;  // path under kernels/<api>/, e.g. "unary.comp", "include/dtype.glsl"
  const char* text;
  size_t size;
};

// The language a driver's kernels are written in: the files (kernels/<api>/ and kernels/shared/,
// embedded at build time) and how a kernel family's file is named ("unary" -> "unary.comp").
struct KernelLanguage {
  std::span<const EmbeddedFile> files;
  const char* extension;
  // Specialization constants applied when the pipeline is created (Vulkan), or compiled into the
  // module as the defines WICK_SPEC_0, WICK_SPEC_1, ... (CUDA): then they are part of the module's
  // key, and the compiler receives them.
  bool constants_at_compile = false;
};

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
  Defines defines;     // with KernelLanguage::constants_at_compile, WICK_SPEC_i included
  bool fast_math = true;
  const IncludeResolver* includes = nullptr;
};

// A driver's pipeline object (kernel entry + specialization constants, ready to dispatch).
class Pipeline {
 public:
  virtual ~Pipeline() = default;
  // What the kernel cache built it from (source, defines, constants): for profiles and messages.
  std::string label;
};

// A buffer bound to a dispatch (the whole allocation, at binding index = position).
struct Binding {
  uint64_t handle;
};

struct Dispatch {
  const Pipeline* pipeline = nullptr;
  std::span<const Binding> buffers;
  std::span<const uint32_t> push_constants;  // the parameter block: at most kMaxPushConstantBytes
  std::array<uint32_t, 3> groups{1, 1, 1};   // workgroups; their size is the pipeline's
};

// The largest parameter block of any kernel (kernels/shared/params.h; Vulkan guarantees 128
// bytes of push constants, CUDA passes them as a kernel argument).
inline constexpr size_t kMaxPushConstantBytes = WICK_MAX_PARAM_BYTES;
inline constexpr size_t kMaxBindings = WICK_MAX_BINDINGS;

// Commands recorded once that the driver can submit again (a CUDA graph, a Vulkan command
// buffer). Owned by the runtime; destroyed only once no submission of it is pending.
class Recording {
 public:
  virtual ~Recording() = default;
};

class Driver {
 public:
  virtual ~Driver() = default;

  // ---- the device ---------------------------------------------------------------------------
  virtual const DeviceCaps& caps() const = 0;
  virtual const KernelLanguage& language() const = 0;
  // Defines every kernel of this device is compiled with (what the device offers the kernels).
  virtual void add_capability_defines(Defines& defines) const { (void)defines; }
  // True once the driver must not be called any more (process exit after the API tore down).
  virtual bool shutting_down() const { return false; }

  // ---- memory -------------------------------------------------------------------------------
  virtual Allocation allocate(size_t bytes, MemoryKind kind) = 0;
  // Only called once no submitted work uses the allocation any more.
  virtual void free(const Allocation& a) = 0;

  // ---- memory shared with other code (Tensor::from_blob, Tensor::data_ptr) ----------------
  // An allocation over `bytes` of device memory at `address` that other code allocated and
  // frees: free() only forgets it. Error(Device) when the range is not this device's memory, or
  // where the API's memory has no address other code can use (the default: Vulkan).
  virtual Allocation adopt(uint64_t address, size_t bytes);
  // The device address of an allocation's first byte, for other code; 0 where memory has no
  // such address (the default).
  virtual uint64_t device_address(const Allocation& a) const {
    (void)a;
    return 0;
  }
  // Waits on the host until the work other code queued on the device in the API's default
  // order has finished (CUDA: the legacy default stream): memory shared with that code then
  // holds what it wrote, and it no longer uses memory it was lent. Nothing by default.
  virtual void wait_for_other_work() {}

  // ---- kernels ------------------------------------------------------------------------------
  // Throws Error(Internal) with the compiler's log when the source does not compile.
  virtual ModuleCode compile(const CompileRequest& req) = 0;
  // A pipeline of `block` threads per workgroup (the kernel's WG_SIZE define; GLSL kernels also
  // declare it as their local size).
  virtual std::unique_ptr<Pipeline> create_pipeline(const ModuleCode& code,
                                                    const std::string& entry,
                                                    std::span<const uint32_t> constants,
                                                    uint32_t block) = 0;
  // Checks a module loaded from the disk cache before use (structure, entry point); false: the
  // entry is dropped and the kernel compiled again.
  virtual bool validate_module(const ModuleCode& code, const std::string& entry) {
    (void)code;
    (void)entry;
    return true;
  }
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

  // ---- capture (serialised by the caller) -------------------------------------------------
  // Whether begin_capture() works on this device.
  virtual bool can_capture() const { return false; }
  // From now on what is recorded goes into a recording, not into the next commit. Called with
  // nothing recorded since the last commit.
  virtual void begin_capture();
  // Ends the capture (also after a failure during it): what was recorded since begin_capture().
  virtual std::unique_ptr<Recording> end_capture();
  // Submits `r` again as submission `id`, under commit()'s contract (it starts after id - 1
  // finished, with all its writes visible). Nothing is being recorded when it is called.
  virtual void replay(const Recording& r, uint64_t id);

  // ---- completion (any thread) --------------------------------------------------------------
  virtual void wait(uint64_t id) = 0;
  // The highest submission id known to have finished (0 before any).
  virtual uint64_t completed() = 0;
};

}  // namespace wick::gpu
