// Helpers for the Vulkan tests: the shared device, private devices with their own options and
// counters, and child processes of this test binary (for knobs and the disk cache).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "harness.h"
#include "vulkan/vk_device.h"

namespace wick::testing {

// The process's shared "vulkan:0" (what WICK_TEST_DEVICES=vulkan:0 tests).
inline Device vk0() {
  return Device::parse("vulkan:0");
}

inline vulkan::VulkanDevice& vk(const Device& d) {
  return dynamic_cast<vulkan::VulkanDevice&>(d.backend());
}

// A new device with its own queue, pools and counters; `tweak` edits the knob-derived options.
inline Device private_device(const std::function<void(vulkan::VulkanOptions&)>& tweak = {}) {
  vulkan::VulkanOptions opts = vulkan::VulkanOptions::from_knobs(vk(vk0()).caps());
  if (tweak) tweak(opts);
  return Device(std::make_shared<vulkan::VulkanDevice>(0, &opts));
}

// Turns allocation poisoning off for a scope: poisoning records a fill per allocation, which
// would show up in exact barrier and commit counts.
class PoisonOff {
 public:
  PoisonOff() : prev_(backend::poison_allocations()) { backend::set_poison_allocations(false); }
  ~PoisonOff() { backend::set_poison_allocations(prev_); }

 private:
  bool prev_;
};

inline std::string self_exe() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

// Runs one (disabled) test of the binary `exe` in a child process with `env` ("A=1 B=2")
// prepended, from folder `cwd`. Returns the "key=value" pairs the child printed on lines starting
// with "CHILD "; fails the calling test when the child fails.
inline std::map<std::string, std::string> run_child(const std::string& exe, const std::string& env,
                                                    const std::string& test,
                                                    const std::string& cwd = ".") {
  const std::string cmd = "cd '" + cwd + "' && env " + env + " '" + exe +
                          "' --gtest_also_run_disabled_tests --gtest_filter=" + test + " 2>&1";
  std::map<std::string, std::string> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "cannot run " << cmd;
    return out;
  }
  std::string all;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) all.append(buf, n);
  const int status = pclose(p);
  EXPECT_EQ(status, 0) << cmd << "\n" << all;
  std::istringstream lines(all);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("CHILD ", 0) != 0) continue;
    std::istringstream kv(line.substr(6));
    std::string item;
    while (kv >> item)
      if (auto eq = item.find('='); eq != std::string::npos)
        out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  EXPECT_FALSE(out.empty()) << "the child printed nothing:\n" << all;
  return out;
}

// A number the child printed; fails (and returns 0) when it is missing.
inline uint64_t number(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  if (it == kv.end() || it->second.empty() ||
      it->second.find_first_not_of("0123456789") != std::string::npos) {
    ADD_FAILURE() << "the child printed no number '" << key << "'";
    return 0;
  }
  return std::stoull(it->second);
}

}  // namespace wick::testing
