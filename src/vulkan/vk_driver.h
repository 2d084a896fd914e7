// The Vulkan driver under the gpu/ runtime: instance and physical-device choice, memory, shaderc,
// pipelines, command buffers and the timeline semaphore that orders submissions.
//
// One timeline semaphore per device: submission `id` waits for value id - 1 and signals id, which
// gives the runtime's contract (each command buffer starts after the previous one finished, with
// its writes visible) and makes wait(id) / completed() one semaphore query. Buffers are bound
// through VK_KHR_push_descriptor where the device has it, else through per-command-buffer
// descriptor pools. Every pipeline shares one layout: kMaxBindings storage buffers and 128 bytes
// of push constants.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/disk_cache.h"
#include "gpu/driver.h"
#include "vulkan/vk_profile.h"

namespace wick::gpu {
// The files of kernels/glsl and kernels/shared (generated at build time).
std::span<const EmbeddedFile> glsl_kernel_files();
}  // namespace wick::gpu

namespace wick::vulkan {

// What the chosen physical device offers: the runtime's capabilities and Vulkan's own.
struct DeviceCaps : gpu::DeviceCaps {
  std::string driver_name, driver_info;
  uint32_t vendor_id = 0, device_id = 0, driver_version = 0, api_version = 0;
  std::string pipeline_cache_uuid;  // hex
  bool push_descriptor = false;
  // Float controls the kernels ask for where offered: keep NaN/inf/-0, keep subnormals.
  bool preserve_nan32 = false, preserve_nan64 = false;
  bool preserve_denorm32 = false, preserve_denorm64 = false;
  std::string cooperative_matrix;  // the cooperative-matrix extensions present
  // VK_NV_cooperative_matrix enabled with a 16x16x16 f16 x f16 -> f32 subgroup shape, and the
  // features its kernels need (shaderFloat16, the Vulkan memory model): matmul_coop.comp runs.
  bool coopmat_f16 = false;
};

struct VulkanInstance;  // the process-wide VkInstance

// Physical devices with a compute queue and Vulkan >= 1.2 (0 when there is no loader or driver).
int physical_device_count();

class VkDriver final : public gpu::Driver {
 public:
  // Opens physical device `ordinal`; throws Error(Device) when it does not exist.
  explicit VkDriver(int ordinal);
  ~VkDriver() override;
  VkDriver(const VkDriver&) = delete;
  VkDriver& operator=(const VkDriver&) = delete;

  const DeviceCaps& caps() const override { return caps_; }
  const gpu::KernelLanguage& language() const override;
  // WICK_F64 / WICK_I64 and the float controls the device offers (include/common.glsl).
  void add_capability_defines(gpu::Defines& defines) const override;
  bool shutting_down() const override { return exiting(); }
  // The driver's own pipeline cache (VkPipelineCache), persisted through wick's disk cache:
  // loaded from `disk`, saved back there when the device goes (or the process exits).
  void load_pipeline_cache(const gpu::DiskCache& disk);
  void save_pipeline_cache();
  // True once the process is exiting: from then on no Vulkan call is made (see vk_driver.cpp).
  static bool exiting();
  // At exit: waits for the queue and saves the pipeline cache (while the driver still works).
  void finish_for_exit();

  gpu::Allocation allocate(size_t bytes, gpu::MemoryKind kind) override;
  void free(const gpu::Allocation& a) override;
  gpu::ModuleCode compile(const gpu::CompileRequest& req) override;
  std::unique_ptr<gpu::Pipeline> create_pipeline(const gpu::ModuleCode& code,
                                                 const std::string& entry,
                                                 std::span<const uint32_t> constants,
                                                 uint32_t block) override;
  // Whole SPIR-V (every instruction complete, every function ended, the ones it calls defined)
  // with a GLCompute entry point `entry`.
  bool validate_module(const gpu::ModuleCode& code, const std::string& entry) override;
  std::string identity() const override;
  void record_dispatch(const gpu::Dispatch& d) override;
  void record_barrier() override;
  void record_copy(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
                   uint64_t bytes) override;
  void record_fill(uint64_t dst, uint64_t offset, uint64_t bytes, uint32_t pattern) override;
  // A capture is one command buffer recorded for simultaneous use, kept by the recording and
  // submitted again by replay (push constants and descriptors are recorded into it).
  bool can_capture() const override { return true; }
  void begin_capture() override;
  std::unique_ptr<gpu::Recording> end_capture() override;
  void replay(const gpu::Recording& r, uint64_t id) override;
  void commit(uint64_t id) override;
  void wait(uint64_t id) override;
  uint64_t completed() override;

 private:
  struct BufferObj;
  struct MemoryBlock;
  struct PipelineObj;
  struct CmdList;
  struct CapturedList;

  static BufferObj& buffer_of(uint64_t handle);
  void create_device();
  // Whether the device lists the cooperative-matrix shape matmul_coop.comp uses.
  bool has_coopmat_f16_shape() const;
  uint32_t memory_type(uint32_t allowed, gpu::MemoryKind kind) const;
  // A range of `bytes` at `alignment` in a shared block of memory type `type` (a new block when
  // none has room); null when the block cannot be allocated (the caller then tries alone).
  MemoryBlock* place(uint32_t type, gpu::MemoryKind kind, VkDeviceSize bytes,
                     VkDeviceSize alignment, VkDeviceSize& offset);
  void release(MemoryBlock* block, VkDeviceSize offset, VkDeviceSize bytes);
  CmdList& current();  // the open command buffer, begun on first use
  // Ends the open command buffer with the barrier that makes its writes visible to the host.
  void end_open();
  // Submits `cb` (may be null) as submission `id`: waits for id - 1 on the timeline, signals id.
  void submit(VkCommandBuffer cb, uint64_t id);
  // Takes back a captured command buffer (any thread): reused once its last submission finished.
  void return_list(std::unique_ptr<CmdList> list);
  VkDescriptorSet allocate_set(CmdList& list);

  std::shared_ptr<VulkanInstance> instance_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  DeviceCaps caps_;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  gpu::DiskCache pipeline_disk_{""};
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set_ = nullptr;
  std::atomic<uint64_t> pipelines_created_{0};
  uint64_t pipelines_at_last_exit_hook_ = 0;  // see commit()

  // Recording state (serialised by CommandQueue).
  std::vector<std::unique_ptr<CmdList>> lists_;
  CmdList* open_ = nullptr;
  bool capturing_ = false;
  std::unique_ptr<CmdList> capture_list_;  // while capturing: the recording's command buffer
  std::mutex returned_mu_;
  std::vector<std::unique_ptr<CmdList>> returned_;  // from destroyed recordings
  VkPipeline bound_ = VK_NULL_HANDLE;
  // What the open command buffer last pushed (every pipeline shares one layout, so both persist
  // across binds): a dispatch with the same buffers or the same constants skips that call, one
  // driver call of four per op in a run of same-shaped ops. A freed buffer may hand its VkBuffer
  // value to a new one, so the buffer cache holds only while no buffer was freed since.
  bool pushed_valid_ = false;
  size_t pushed_count_ = 0;
  std::array<VkBuffer, gpu::kMaxBindings> pushed_buffers_{};
  uint64_t pushed_at_free_count_ = 0;
  std::atomic<uint64_t> free_count_{0};
  size_t pushed_words_n_ = 0;  // 0: nothing pushed in this command buffer
  std::array<uint32_t, gpu::kMaxPushConstantBytes / 4> pushed_words_{};
  std::unique_ptr<VkProfiler> profile_;  // WICK_VK_PROFILE only
  // Small buffers share blocks of device memory (allocate()): one vkAllocateMemory per block.
  std::mutex blocks_mu_;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;
};

}  // namespace wick::vulkan
