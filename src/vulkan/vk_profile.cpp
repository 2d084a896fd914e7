#include "vulkan/vk_profile.h"

#include <algorithm>
#include <cstdio>

namespace wick::vulkan {

namespace {
constexpr uint32_t kQueries = 4096;  // timestamps per command buffer; later dispatches untimed
}  // namespace

std::unique_ptr<VkProfiler> VkProfiler::create(VkDevice device, uint32_t valid_bits,
                                               float ns_per_tick, std::string device_name) {
  if (valid_bits == 0 || ns_per_tick <= 0) {
    std::fprintf(stderr, "wick: WICK_VK_PROFILE: %s writes no timestamps on its compute queue\n",
                 device_name.c_str());
    return nullptr;
  }
  const uint64_t mask = valid_bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << valid_bits) - 1;
  return std::unique_ptr<VkProfiler>(
      new VkProfiler(device, ns_per_tick, mask, std::move(device_name)));
}

VkProfiler::~VkProfiler() {
  print();
  for (VkQueryPool p : pools_) vkDestroyQueryPool(device_, p, nullptr);
}

void VkProfiler::begin(VkCommandBuffer cb, Marks& marks) {
  if (!marks.pool) {
    VkQueryPoolCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = kQueries;
    if (vkCreateQueryPool(device_, &ci, nullptr, &marks.pool) != VK_SUCCESS) {
      marks.pool = VK_NULL_HANDLE;
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    pools_.push_back(marks.pool);
  }
  marks.kernels.clear();
  marks.harvested = 0;
  vkCmdResetQueryPool(cb, marks.pool, 0, kQueries);
  vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, marks.pool, 0);
}

void VkProfiler::after_dispatch(VkCommandBuffer cb, Marks& marks, const std::string& label) {
  if (!marks.pool || marks.kernels.size() + 1 >= kQueries) return;
  Kernel* k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    k = &kernels_[label.empty() ? std::string("(unnamed pipeline)") : label];
  }
  marks.kernels.push_back(k);
  vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, marks.pool,
                      static_cast<uint32_t>(marks.kernels.size()));
}

void VkProfiler::harvest(Marks& marks, uint64_t submission) {
  if (!marks.pool || marks.kernels.empty() || submission == 0 || marks.harvested == submission)
    return;
  marks.harvested = submission;
  const size_t n = marks.kernels.size() + 1;
  std::vector<uint64_t> ticks(n);
  if (vkGetQueryPoolResults(device_, marks.pool, 0, static_cast<uint32_t>(n), n * sizeof(uint64_t),
                            ticks.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
    return;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 1; i < n; i++) {
    const double ns = double((ticks[i] - ticks[i - 1]) & mask_) * ns_per_tick_;
    marks.kernels[i - 1]->calls++;
    marks.kernels[i - 1]->ns += ns;
    total_ns_ += ns;
  }
  buffers_++;
}

void VkProfiler::print() {
  std::lock_guard<std::mutex> lock(mu_);
  if (buffers_ == printed_buffers_) return;
  printed_buffers_ = buffers_;
  std::vector<std::pair<const std::string*, const Kernel*>> rows;
  uint64_t calls = 0;
  for (const auto& [label, k] : kernels_)
    if (k.calls) {
      rows.emplace_back(&label, &k);
      calls += k.calls;
    }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second->ns > b.second->ns; });
  std::fprintf(stderr,
               "wick: WICK_VK_PROFILE, %s: %llu command buffers, %llu dispatches, %.3f ms of GPU "
               "time (each kernel from the end of the dispatch before it)\n"
               "  share  total ms    calls  mean us  kernel\n",
               name_.c_str(), static_cast<unsigned long long>(buffers_),
               static_cast<unsigned long long>(calls), total_ns_ / 1e6);
  for (const auto& [label, k] : rows)
    std::fprintf(stderr, "  %4.1f%% %9.3f %8llu %8.2f  %s\n", 100.0 * k->ns / total_ns_,
                 k->ns / 1e6, static_cast<unsigned long long>(k->calls), k->ns / 1e3 / k->calls,
                 label->c_str());
}

}  // namespace wick::vulkan
