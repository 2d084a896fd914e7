// STUB: replaced by the real kernels.
#include "cpu/cpu_device.h"

namespace wick::cpu {
using namespace backend;
void CpuDevice::reduce(ReduceOp, View, const std::vector<size_t>&, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::softmax_last_dim(View, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::log_softmax_last_dim(View, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::rms_norm(View, View, double, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::layer_norm(View, View, View, double, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::rope(View, View, View, bool, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::arg_sort_last_dim(View, bool, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
}  // namespace wick::cpu
