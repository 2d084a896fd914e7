// `wick info`: version, machine, devices (with the time each took to open) and knobs.
#include "info.h"

#include <cstdlib>
#include <iostream>
#include <map>

#include "backend/registry.h"
#include "report.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

// Opens every device this build can open, one at a time, timing each: id -> ms.
std::map<uint64_t, double> open_devices_timed() {
  std::map<uint64_t, double> ms;
  for (DeviceKind kind : {DeviceKind::Cpu, DeviceKind::Vulkan, DeviceKind::Cuda}) {
    const int count = backend::device_count(kind);
    for (int i = 0; i < count; i++) {
      const std::string spec = kind == DeviceKind::Cpu
                                   ? "cpu"
                                   : std::string(device_kind_name(kind)) + ":" + std::to_string(i);
      const auto t0 = Clock::now();
      const Device d = Device::parse(spec);
      d.synchronize();
      ms[d.id()] = ms_since(t0);
    }
  }
  return ms;
}

}  // namespace

int run_info(std::ostream& os) {
  os << "wick " << version() << "\n\n";
  os << "machine: " << describe_machine() << "\n";
  os << "BLAS: " << describe_blas() << "\n\n";

  const std::map<uint64_t, double> open_ms = open_devices_timed();
  Table devices({"device", "kind", "ordinal", "id", "opened in"});
  for (const Device& d : available_devices()) {
    const auto it = open_ms.find(d.id());
    devices.add_row({d.name(), device_kind_name(d.kind()), std::to_string(d.ordinal()),
                     std::to_string(d.id()),
                     it == open_ms.end() ? "" : fixed(it->second, 3) + " ms"});
  }
  os << "devices:\n\n";
  devices.print(os);
  for (DeviceKind kind : {DeviceKind::Vulkan, DeviceKind::Cuda}) {
    const std::string why = backend::absent_reason(kind);
    if (!why.empty()) os << "\n" << device_kind_name(kind) << ": absent: " << why;
  }
  os << "\n";

  os << "\nenvironment:\n\n";
  Table knobs({"knob", "value", "set to"});
  for (const auto& [name, value] : describe_knobs()) {
    const char* raw = std::getenv(name.c_str());
    std::string set_to = "(unset)";
    if (raw) {
      set_to = "\"";
      set_to += raw;
      set_to += '"';
    }
    knobs.add_row({name, value, set_to});
  }
  knobs.print(os);
  return 0;
}

}  // namespace wick::cli
