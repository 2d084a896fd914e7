// STUB: replaced by the real kernels.
#include "cpu/cpu_device.h"

namespace wick::cpu {
using namespace backend;
void CpuDevice::matmul(View, View, const MatmulDims&, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
}  // namespace wick::cpu
