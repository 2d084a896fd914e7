// A scripted gpu::Driver for testing the gpu/ runtime without a GPU: it logs what is recorded,
// completes submissions only when told to (or when waited on), and compiles by echoing the source.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpu/driver.h"
#include "wick/error.h"

namespace wick::testing {

class FakeDriver : public gpu::Driver {
 public:
  struct Event {
    std::string kind;               // "dispatch", "barrier", "copy", "fill", "commit"
    std::vector<uint64_t> handles;  // buffers touched; for "commit": {id}
  };
  struct FakePipeline : gpu::Pipeline {
    std::string module, entry;
    std::vector<uint32_t> constants;
    uint32_t block = 0;
  };

  // When true, every submission finishes as soon as it is committed.
  std::atomic<bool> auto_complete{true};
  // Compiles of sources whose text contains this string sleep this long first.
  std::string slow_marker;
  std::chrono::milliseconds slow_for{0};
  std::string identity_text = "fake-device/1";
  // Modules loaded from disk are rejected by validate_module() while set.
  std::atomic<bool> reject_modules{false};
  // Appended to every compiled module (to tell a disk copy from a fresh compile).
  std::string compile_tag;
  // create_pipeline() fails for modules whose text contains this string.
  std::string fail_pipeline_marker;
  gpu::DeviceCaps fake_caps;
  gpu::KernelLanguage fake_language{{}, "", false};

  const gpu::DeviceCaps& caps() const override { return fake_caps; }
  const gpu::KernelLanguage& language() const override { return fake_language; }

  gpu::Allocation allocate(size_t bytes, gpu::MemoryKind kind) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_allocations_ > 0) {
      fail_allocations_--;
      fail(ErrorKind::Internal, "fake allocate", "out of memory");
    }
    gpu::Allocation a;
    a.handle = ++next_handle_;
    a.size = bytes;
    if (kind == gpu::MemoryKind::HostVisible) {
      host_memory_[a.handle].resize(bytes);
      a.mapped = reinterpret_cast<std::byte*>(host_memory_[a.handle].data());
    }
    live_.emplace(a.handle, bytes);
    live_bytes_ += bytes;
    allocations_++;
    return a;
  }
  void free(const gpu::Allocation& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (adopted_.erase(a.handle)) {
      forgotten_++;
      return;
    }
    auto it = live_.find(a.handle);
    if (it == live_.end()) {
      double_frees_++;
      return;
    }
    live_bytes_ -= it->second;
    live_.erase(it);
    host_memory_.erase(a.handle);
    frees_++;
  }

  // Other code's memory: an address the "device" shares (free() only forgets it).
  gpu::Allocation adopt(uint64_t address, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    gpu::Allocation a;
    a.handle = ++next_handle_;
    a.size = bytes;
    adopted_.emplace(a.handle, address);
    return a;
  }
  uint64_t device_address(const gpu::Allocation& a) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = adopted_.find(a.handle);
    return it != adopted_.end() ? it->second : 0;
  }
  void wait_for_other_work() override { other_work_waits_++; }

  gpu::ModuleCode compile(const gpu::CompileRequest& req) override {
    if (!slow_marker.empty() && req.source.find(slow_marker) != std::string::npos)
      std::this_thread::sleep_for(slow_for);
    compiles_++;
    std::string text = req.name + "|" + req.source + "|fast_math=" + (req.fast_math ? "1" : "0");
    for (const auto& [k, v] : req.defines) text += "|" + k + "=" + v;
    text += compile_tag;
    return gpu::ModuleCode(text.begin(), text.end());
  }
  std::unique_ptr<gpu::Pipeline> create_pipeline(const gpu::ModuleCode& code,
                                                 const std::string& entry,
                                                 std::span<const uint32_t> constants,
                                                 uint32_t block) override {
    auto p = std::make_unique<FakePipeline>();
    p->module.assign(code.begin(), code.end());
    if (!fail_pipeline_marker.empty() && p->module.find(fail_pipeline_marker) != std::string::npos)
      fail(ErrorKind::Internal, "fake create_pipeline", "the driver refuses this module");
    p->entry = entry;
    p->constants.assign(constants.begin(), constants.end());
    p->block = block;
    pipelines_++;
    return p;
  }
  std::string identity() const override { return identity_text; }
  bool validate_module(const gpu::ModuleCode&, const std::string&) override {
    return !reject_modules;
  }

  void record_dispatch(const gpu::Dispatch& d) override {
    Event e{"dispatch", {}};
    for (const gpu::Binding& b : d.buffers) e.handles.push_back(b.handle);
    push(std::move(e));
  }
  void record_barrier() override { push({"barrier", {}}); }
  void record_copy(uint64_t src, uint64_t, uint64_t dst, uint64_t, uint64_t) override {
    push({"copy", {src, dst}});
  }
  void record_fill(uint64_t dst, uint64_t, uint64_t, uint32_t) override { push({"fill", {dst}}); }
  void commit(uint64_t id) override {
    if (id != submitted_ + 1) bad_ids_++;
    submitted_ = id;
    push({"commit", {id}});
    if (auto_complete) finish(id);
  }
  void wait(uint64_t id) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      waited_.push_back(id);
    }
    finish(id);  // the "GPU" catches up with what the host waits for
  }
  uint64_t completed() override { return done_.load(); }

  // Marks submissions up to `id` finished.
  void finish(uint64_t id) {
    uint64_t d = done_.load();
    while (d < id && !done_.compare_exchange_weak(d, id)) {
    }
  }
  void fail_next_allocations(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_allocations_ = n;
  }

  std::vector<Event> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  size_t live_buffers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.size();
  }
  uint64_t live_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_bytes_;
  }
  int double_frees() const { return double_frees_; }
  size_t adopted_buffers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return adopted_.size();
  }
  uint64_t forgotten() const { return forgotten_; }
  int other_work_waits() const { return other_work_waits_; }
  int bad_ids() const { return bad_ids_; }
  int compiles() const { return compiles_; }
  int pipelines() const { return pipelines_; }
  uint64_t allocations() const { return allocations_; }
  uint64_t frees() const { return frees_; }
  std::vector<uint64_t> waited() const {
    std::lock_guard<std::mutex> lock(mu_);
    return waited_;
  }

 private:
  void push(Event e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
  }

  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::map<uint64_t, size_t> live_;
  std::map<uint64_t, std::vector<uint8_t>> host_memory_;
  std::map<uint64_t, uint64_t> adopted_;  // handle -> address
  uint64_t forgotten_ = 0;
  std::atomic<int> other_work_waits_{0};
  uint64_t next_handle_ = 0, live_bytes_ = 0, allocations_ = 0, frees_ = 0;
  int fail_allocations_ = 0;
  int double_frees_ = 0, bad_ids_ = 0;
  std::atomic<int> compiles_{0}, pipelines_{0};
  uint64_t submitted_ = 0;
  std::atomic<uint64_t> done_{0};
  std::vector<uint64_t> waited_;
};

}  // namespace wick::testing
