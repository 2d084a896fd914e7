// Devices: cheap values that share one backend instance. Two Device values are the same device
// exactly when their process-unique ids are equal.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wick {

namespace backend {
class BackendDevice;
class CapturedWork;
}  // namespace backend

class Recording;

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

  // Whether capture() works on this device: GPUs (CUDA graphs, Vulkan command buffers), not the
  // CPU, which runs ops as they come.
  bool can_capture() const;
  // Records the ops `record` runs on this device, in this thread, once, without running them:
  // Recording::replay() runs them, as often as wanted, at the cost of one submission instead of
  // one recording per op. Shapes, views and scalars are fixed at capture; what changes between
  // replays lives in tensors the ops read (write them before replay(), e.g. with const_set or
  // slice_set). Tensors made inside are the same tensors at every replay, rewritten by it.
  // Inside `record`, reading a result back or waiting on the device is an error (nothing has
  // run yet); other threads' ops on this device wait until the capture ends. Throws
  // Unsupported where can_capture() is false.
  Recording capture(const std::function<void()>& record) const;

  bool operator==(const Device& o) const { return id() == o.id(); }
  bool operator!=(const Device& o) const { return id() != o.id(); }

  // Internal: the backend behind this device.
  backend::BackendDevice& backend() const { return *impl_; }
  explicit Device(std::shared_ptr<backend::BackendDevice> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<backend::BackendDevice> impl_;
};

// Ops captured once on a device (Device::capture), run again by replay().
class Recording {
 public:
  Recording() = default;
  // Runs the captured ops again, after the work recorded before it and asynchronously like any
  // op: they read what their input tensors hold now and write the same output tensors. A
  // tensor the ops read that was made before the capture and has been freed since is an error
  // (Error(Device)), never a read of memory nobody owns. Errors the kernels find (an
  // out-of-range position) raise at this thread's next wait, as for any op, and at every
  // replay after that.
  void replay() const;
  uint64_t ops() const;         // ops captured
  uint64_t dispatches() const;  // kernels (and library calls) one replay submits
  bool defined() const { return impl_ != nullptr; }

 private:
  friend class Device;
  Recording(Device dev, std::shared_ptr<backend::CapturedWork> impl)
      : dev_(std::move(dev)), impl_(std::move(impl)) {}
  Device dev_ = Device::cpu();  // keeps the device alive as long as the recording
  std::shared_ptr<backend::CapturedWork> impl_;
};

// Every device wick can open in this process: the CPU, then one per Vulkan physical device and
// one per CUDA device.
std::vector<Device> available_devices();

}  // namespace wick
