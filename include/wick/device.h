// Devices: cheap values that share one backend instance. Two Device values are the same device
// exactly when their process-unique ids are equal.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wick {

namespace backend {
class BackendDevice;
}

enum class DeviceKind { Cpu, Vulkan, Cuda };
const char* device_kind_name(DeviceKind kind);

class Device {
 public:
  // The process's CPU device (always the same id).
  static Device cpu();
  // A new Vulkan device on physical device `ordinal`; throws Error(Device) when Vulkan support is
  // not compiled in or no such device exists. Each call creates a new device with its own id.
  static Device vulkan(int ordinal = 0);
  // A new CUDA device on device `ordinal` (each call a new device with its own id); throws
  // Error(Device) when CUDA is not compiled in, the driver or NVRTC is missing, or no such device.
  static Device cuda(int ordinal = 0);
  // Parses "cpu", "vulkan[:N]", "cuda[:N]": one process-wide shared device per kind and ordinal.
  static Device parse(std::string_view spec);
  // The default device: WICK_DEVICE when set, else the CPU.
  static Device default_device();

  DeviceKind kind() const;
  int ordinal() const;
  uint64_t id() const;
  // "cpu", "vulkan:0 (NVIDIA H200)", ...
  std::string name() const;
  bool is_cpu() const { return kind() == DeviceKind::Cpu; }

  // Seeds the device's random generator (rand/randn).
  void set_seed(uint64_t seed) const;
  // Waits until all work recorded on this device has finished.
  void synchronize() const;

  bool operator==(const Device& o) const { return id() == o.id(); }
  bool operator!=(const Device& o) const { return id() != o.id(); }

  // Internal: the backend behind this device.
  backend::BackendDevice& backend() const { return *impl_; }
  explicit Device(std::shared_ptr<backend::BackendDevice> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<backend::BackendDevice> impl_;
};

// Every device wick can open in this process: the CPU, then one per Vulkan physical device and
// one per CUDA device.
std::vector<Device> available_devices();

}  // namespace wick
