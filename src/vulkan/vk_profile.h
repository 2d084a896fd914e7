// WICK_VK_PROFILE: where a Vulkan device's GPU time goes, kernel by kernel.
//
// Every command buffer gets a query pool; a timestamp is written at its start and after each
// dispatch (bottom of pipe), and once a submission has finished the differences are added to
// its kernels: a kernel's time runs from the end of the dispatch before it to its own end, so
// it includes the barrier, copies and fills before it and its launch, which is what replacing
// or fusing that dispatch would save. Replayed command buffers are counted at every replay
// whose results are read before the next one. The table goes to stderr when the device goes.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace wick::vulkan {

class VkProfiler {
 public:
  struct Kernel {
    uint64_t calls = 0;
    double ns = 0;
  };
  // One command buffer's timestamps.
  struct Marks {
    VkQueryPool pool = VK_NULL_HANDLE;
    std::vector<Kernel*> kernels;  // kernels[i]: the dispatch ending at timestamp i + 1
    uint64_t harvested = 0;        // the submission last added
  };

  // For a queue family whose timestamps have `valid_bits` bits of `ns_per_tick` each (its
  // timestampValidBits, the device's timestampPeriod). Null (with a warning on stderr) when
  // the family writes none.
  static std::unique_ptr<VkProfiler> create(VkDevice device, uint32_t valid_bits, float ns_per_tick,
                                            std::string device_name);
  ~VkProfiler();
  VkProfiler(const VkProfiler&) = delete;
  VkProfiler& operator=(const VkProfiler&) = delete;

  // At the start of recording `cb`: resets its queries and writes the first timestamp.
  void begin(VkCommandBuffer cb, Marks& marks);
  // After a dispatch of the pipeline labelled `label` (past the pool's size: not timed).
  void after_dispatch(VkCommandBuffer cb, Marks& marks, const std::string& label);
  // Adds the times of `submission`, which has finished, once.
  void harvest(Marks& marks, uint64_t submission);
  // The table, to stderr (once; later calls print nothing new unless more was harvested).
  void print();
  // At process exit, when no Vulkan call may be made: the destructor leaves the pools alone.
  void forget_pools() { pools_.clear(); }

 private:
  VkProfiler(VkDevice device, double ns_per_tick, uint64_t mask, std::string name)
      : device_(device), ns_per_tick_(ns_per_tick), mask_(mask), name_(std::move(name)) {}

  VkDevice device_;
  double ns_per_tick_;
  uint64_t mask_;  // the valid bits of a timestamp
  std::string name_;
  std::mutex mu_;
  std::map<std::string, Kernel> kernels_;
  std::vector<VkQueryPool> pools_;
  uint64_t buffers_ = 0, printed_buffers_ = 0;
  double total_ns_ = 0;
};

}  // namespace wick::vulkan
