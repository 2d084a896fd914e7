#include "wick/device.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "backend/backend.h"
#include "backend/registry.h"
#include "core/knobs.h"

namespace wick {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::Vulkan:
      return "vulkan";
    case DeviceKind::Cuda:
      return "cuda";
  }
  return "?";
}

Device Device::cpu() {
  static const Device dev(backend::cpu_device());
  return dev;
}

Device Device::vulkan(int ordinal) {
  return Device(backend::open_device(DeviceKind::Vulkan, ordinal));
}
Device Device::cuda(int ordinal) {
  return Device(backend::open_device(DeviceKind::Cuda, ordinal));
}

Device Device::parse(std::string_view spec) {
  DeviceKind kind;
  std::string_view rest;
  if (spec.substr(0, 3) == "cpu") {
    kind = DeviceKind::Cpu;
    rest = spec.substr(3);
  } else if (spec.substr(0, 6) == "vulkan") {
    kind = DeviceKind::Vulkan;
    rest = spec.substr(6);
  } else if (spec.substr(0, 4) == "cuda") {
    kind = DeviceKind::Cuda;
    rest = spec.substr(4);
  } else {
    fail(ErrorKind::Parse, "Device::parse", "unknown device '", spec,
         "' (expected cpu, vulkan[:N], cuda[:N])");
  }
  int ordinal = 0;
  if (!rest.empty()) {
    if (rest[0] != ':' || rest.size() < 2)
      fail(ErrorKind::Parse, "Device::parse", "bad device '", spec, "'");
    ordinal = 0;
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9' || ordinal > 1000)
        fail(ErrorKind::Parse, "Device::parse", "bad device ordinal in '", spec, "'");
      ordinal = ordinal * 10 + (c - '0');
    }
  }
  if (kind == DeviceKind::Cpu) {
    if (ordinal != 0)
      fail(ErrorKind::Device, "Device::parse", "cpu has only ordinal 0: '", spec, "'");
    return cpu();
  }
  // Named devices are shared per process so that every "vulkan:0" is one device.
  static std::mutex mu;
  static std::map<std::pair<int, int>, Device> opened;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(static_cast<int>(kind), ordinal);
  auto it = opened.find(key);
  if (it != opened.end()) return it->second;
  Device dev(backend::open_device(kind, ordinal));
  opened.emplace(key, dev);
  return dev;
}

Device Device::default_device() {
  const std::string& spec = core::knobs().device;
  return spec.empty() ? cpu() : parse(spec);
}

DeviceKind Device::kind() const {
  return impl_->kind();
}
int Device::ordinal() const {
  return impl_->ordinal();
}
uint64_t Device::id() const {
  return impl_->id();
}
std::string Device::name() const {
  return impl_->name();
}
void Device::set_seed(uint64_t seed) const {
  impl_->set_seed(seed);
}

bool Device::can_capture() const {
  return impl_->can_capture();
}

Recording Device::capture(const std::function<void()>& record) const {
  if (!record) fail(ErrorKind::Unsupported, "capture", "no function to capture");
  return Recording(*this, impl_->capture(record));
}

void Recording::replay() const {
  if (!impl_) fail(ErrorKind::Unsupported, "Recording::replay", "an empty recording");
  impl_->replay();
}

uint64_t Recording::ops() const {
  return impl_ ? impl_->ops() : 0;
}

uint64_t Recording::dispatches() const {
  return impl_ ? impl_->dispatches() : 0;
}
void Device::synchronize() const {
  impl_->synchronize();
}

std::vector<Device> available_devices() {
  std::vector<Device> out{Device::cpu()};
  for (DeviceKind kind : {DeviceKind::Vulkan, DeviceKind::Cuda}) {
    const int n = backend::device_count(kind);
    for (int i = 0; i < n; i++)
      out.push_back(Device::parse(std::string(device_kind_name(kind)) + ":" + std::to_string(i)));
  }
  return out;
}

}  // namespace wick
