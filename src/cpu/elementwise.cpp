// STUB: replaced by the real kernels.
#include "cpu/cpu_device.h"

namespace wick::cpu {
using namespace backend;
void CpuDevice::unary(UnaryOp, UnaryParams, View, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::binary(BinaryOp, View, View, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::compare(CmpOp, View, View, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
void CpuDevice::where_cond(View, View, View, Storage&) { fail(ErrorKind::Unsupported, "cpu", "not implemented yet"); }
}  // namespace wick::cpu
