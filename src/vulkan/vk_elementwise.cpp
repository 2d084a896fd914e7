// Vulkan element-wise ops: unary (incl. affine, powf, elu, clamp), binary with broadcasting
// through strides, compare and where_cond. One dispatch per op; views are read in place.
#include "vulkan/vk_device.h"

namespace wick::vulkan {

using backend::BinaryOp;
using backend::CmpOp;
using backend::Storage;
using backend::UnaryOp;
using backend::View;

namespace {

// f64 ops that need transcendentals GLSL has only in single precision.
bool needs_float_math(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Log:
    case UnaryOp::Sin:
    case UnaryOp::Cos:
    case UnaryOp::Tanh:
    case UnaryOp::Gelu:
    case UnaryOp::GeluErf:
    case UnaryOp::Erf:
    case UnaryOp::Silu:
    case UnaryOp::Sigmoid:
    case UnaryOp::Powf:
    case UnaryOp::Elu:
      return true;
    default:
      return false;
  }
}

void refuse_f64(const char* op) {
  fail(ErrorKind::Unsupported, op, "f64 is not supported on vulkan (GLSL has no double-precision ",
       "exp/log/sin/cos/pow); use f32 or the CPU");
}

}  // namespace

void VulkanDevice::unary(UnaryOp op, backend::UnaryParams p, View x, Storage& dst) {
  const DType dt = x.storage.dtype();
  const char* name = backend::unary_op_name(op);
  require(dt, name);
  if (dt == DType::F64 && needs_float_math(op)) refuse_f64(name);
  gpu::Defines d;
  add_dtype(d, "", dt);
  d.emplace_back("PARAM_T", param_type(dt));
  const Layout out = Layout::contiguous(x.layout.shape);
  const PushParam::Kind pk = param_kind(dt);
  launch_strided(key_for("unary.comp", d, {static_cast<uint32_t>(op)}),
                 {{&buffer(x.storage), &x.layout}}, {&buffer(dst), &out}, false,
                 {{pk, p.p0}, {pk, p.p1}});
}

void VulkanDevice::binary(BinaryOp op, View a, View b, Storage& dst) {
  const DType dt = a.storage.dtype();
  const char* name = backend::binary_op_name(op);
  require(dt, name);
  if (dt == DType::F64 && op == BinaryOp::Pow) refuse_f64(name);
  gpu::Defines d;
  add_dtype(d, "", dt);
  const Layout out = Layout::contiguous(a.layout.shape);
  launch_strided(key_for("binary.comp", d, {static_cast<uint32_t>(op)}),
                 {{&buffer(a.storage), &a.layout}, {&buffer(b.storage), &b.layout}},
                 {&buffer(dst), &out}, false);
}

void VulkanDevice::compare(CmpOp op, View a, View b, Storage& dst) {
  const DType dt = a.storage.dtype();
  const char* name = backend::cmp_op_name(op);
  require(dt, name);
  require(DType::U8, name);
  gpu::Defines d;
  add_dtype(d, "", dt);
  const Layout out = Layout::contiguous(a.layout.shape);
  launch_strided(key_for("compare.comp", d, {static_cast<uint32_t>(op)}),
                 {{&buffer(a.storage), &a.layout}, {&buffer(b.storage), &b.layout}},
                 {&buffer(dst), &out}, false);
}

void VulkanDevice::where_cond(View cond, View on_true, View on_false, Storage& dst) {
  const DType dt = on_true.storage.dtype();
  require(cond.storage.dtype(), "where_cond");
  require(dt, "where_cond");
  gpu::Defines d;
  add_dtype(d, "", dt);
  add_dtype(d, "COND_", cond.storage.dtype());
  const Layout out = Layout::contiguous(cond.layout.shape);
  launch_strided(key_for("where.comp", d),
                 {{&buffer(cond.storage), &cond.layout},
                  {&buffer(on_true.storage), &on_true.layout},
                  {&buffer(on_false.storage), &on_false.layout}},
                 {&buffer(dst), &out}, false);
}

}  // namespace wick::vulkan
