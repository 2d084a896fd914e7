// GPU element-wise ops: unary (incl. affine, powf, elu, clamp), binary with broadcasting
// through strides, compare and where_cond. One dispatch per op; views are read in place.
#include "gpu/gpu_device.h"

namespace wick::gpu {

using backend::BinaryOp;
using backend::CmpOp;
using backend::Storage;
using backend::UnaryOp;
using backend::View;

const Pipeline& GpuDevice::op_kernel(KernelFamily family, const char* source, uint32_t code,
                                     DType dt, bool with_params) {
  return kernel(family, {code, static_cast<uint32_t>(dt)}, [&] {
    Defines d;
    add_dtype(d, "", dt);
    if (with_params) d.emplace_back("PARAM_T", param_type(dt));
    return key_for(source, std::move(d), {code});
  });
}

void GpuDevice::unary(UnaryOp op, backend::UnaryParams p, View x, Storage& dst) {
  const DType dt = x.storage.dtype();
  const char* name = backend::unary_op_name(op);
  require(dt, name);
  const Pipeline& pipeline =
      op_kernel(KernelFamily::Unary, "unary", static_cast<uint32_t>(op), dt, true);
  const Layout out = Layout::contiguous(x.layout.shape);
  const PushParam::Kind pk = param_kind(dt);
  launch_strided(pipeline, {{&buffer(x.storage), &x.layout}}, {&buffer(dst), &out}, false,
                 {{pk, p.p0}, {pk, p.p1}});
}

void GpuDevice::binary(BinaryOp op, View a, View b, Storage& dst) {
  const DType dt = a.storage.dtype();
  const char* name = backend::binary_op_name(op);
  require(dt, name);
  // Integer kernels report a division by zero through the device's error words.
  const bool integer = !is_float(dt);
  const auto op_code = static_cast<uint32_t>(op);
  const Pipeline& pipeline =
      kernel(KernelFamily::Binary, {op_code, static_cast<uint32_t>(dt)}, [&] {
        Defines d;
        add_dtype(d, "", dt);
        if (integer) d.emplace_back("DTYPE_CODE", std::to_string(static_cast<int>(dt)) + "u");
        return key_for("binary", std::move(d), {op_code});
      });
  const Layout out = Layout::contiguous(a.layout.shape);
  // Only a division can fail; the other integer ops bind a record nobody reads (the kernel
  // names the binding whatever its op).
  const bool can_fail = integer && op == BinaryOp::Div;
  BufferRef record = can_fail ? errors_->acquire() : nullptr;
  const uint64_t submission =
      launch_strided(pipeline, {{&buffer(a.storage), &a.layout}, {&buffer(b.storage), &b.layout}},
                     {&buffer(dst), &out}, false, {},
                     can_fail  ? record.get()
                     : integer ? unused_record_.get()
                               : nullptr);
  if (can_fail) refuse_device_errors(std::move(record), submission, name, a.layout.shape.str());
}

void GpuDevice::compare(CmpOp op, View a, View b, Storage& dst) {
  const DType dt = a.storage.dtype();
  const char* name = backend::cmp_op_name(op);
  require(dt, name);
  require(DType::U8, name);
  const Pipeline& pipeline =
      op_kernel(KernelFamily::Compare, "compare", static_cast<uint32_t>(op), dt, false);
  const Layout out = Layout::contiguous(a.layout.shape);
  launch_strided(pipeline, {{&buffer(a.storage), &a.layout}, {&buffer(b.storage), &b.layout}},
                 {&buffer(dst), &out}, false);
}

void GpuDevice::where_cond(View cond, View on_true, View on_false, Storage& dst) {
  const DType dt = on_true.storage.dtype();
  require(cond.storage.dtype(), "where_cond");
  require(dt, "where_cond");
  const DType cond_dt = cond.storage.dtype();
  const Pipeline& pipeline =
      kernel(KernelFamily::Where, {static_cast<uint32_t>(dt), static_cast<uint32_t>(cond_dt)}, [&] {
        Defines d;
        add_dtype(d, "", dt);
        add_dtype(d, "COND_", cond_dt);
        return key_for("where", std::move(d));
      });
  const Layout out = Layout::contiguous(cond.layout.shape);
  launch_strided(pipeline,
                 {{&buffer(cond.storage), &cond.layout},
                  {&buffer(on_true.storage), &on_true.layout},
                  {&buffer(on_false.storage), &on_false.layout}},
                 {&buffer(dst), &out}, false);
}

}  // namespace wick::gpu
