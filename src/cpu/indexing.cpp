// STUB: replaced by the real kernels.
#include "cpu/cpu_device.h"

namespace wick::cpu {
using namespace backend;
void CpuDevice::index_select(View, View, size_t, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::gather(View, View, size_t, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::scatter_add(Storage&, const Shape&, View, View, size_t) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::index_add(Storage&, const Shape&, View, View, size_t) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
}  // namespace wick::cpu
