// Front end of the element-wise ops: unary, binary (broadcasting), compare, where_cond.
#include "core/tensor_impl.h"

namespace wick {

using backend::BinaryOp;
using backend::CmpOp;
using backend::UnaryOp;
using backend::UnaryParams;

namespace {

// Integer dtypes are taken by the ops that are exact on integers.
bool unary_takes_int(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: case UnaryOp::Abs: case UnaryOp::Sqr: case UnaryOp::Relu:
    case UnaryOp::Sign: case UnaryOp::Affine: case UnaryOp::Clamp:
      return true;
    default:
      return false;
  }
}

Tensor unary(const Tensor& x, UnaryOp op, UnaryParams p = {}) {
  if (!is_float(x.dtype()) && !unary_takes_int(op))
    fail(ErrorKind::DType, backend::unary_op_name(op), "expects a float tensor, got ",
         core::describe(x));
  // Wrapping -x modulo 2^bits is almost never what the caller meant.
  if (op == UnaryOp::Neg && (x.dtype() == DType::U8 || x.dtype() == DType::U32))
    fail(ErrorKind::DType, "neg", "unsigned tensors have no negation, got ", core::describe(x));
  Tensor out = core::empty(x.shape(), x.dtype(), x.device(), backend::unary_op_name(op));
  if (x.numel()) x.device().backend().unary(op, p, core::view(x), *out.storage());
  return out;
}

// The shape a and b broadcast to; a's own shape (no copy) when they agree, the common case.
const Shape& broadcast_shape(const Tensor& a, const Tensor& b, Shape& scratch, const char* op) {
  if (a.shape() == b.shape()) return a.shape();
  scratch = broadcast_shapes(a.shape(), b.shape(), op);
  return scratch;
}

// t's layout broadcast to `shape`; t's own (no copy) when it already has that shape.
const Layout& layout_as(const Tensor& t, const Shape& shape, Layout& scratch, const char* op) {
  if (t.shape() == shape) return t.layout();
  scratch = core::broadcast_layout(t.layout(), shape, op);
  return scratch;
}

// A 0-d operand of another dtype converts to the other operand's dtype (b's when both are 0-d):
// tensors of other ranks must agree.
void convert_scalar_operand(Tensor& a, Tensor& b) {
  if (a.dtype() == b.dtype()) return;
  if (b.rank() == 0)
    b = b.to_dtype(a.dtype());
  else if (a.rank() == 0)
    a = a.to_dtype(b.dtype());
}

Tensor binary(Tensor a, Tensor b, BinaryOp op) {
  const char* name = backend::binary_op_name(op);
  core::check_same_device(name, a, b);
  convert_scalar_operand(a, b);
  core::check_same_dtype(name, a, b);
  if (op == BinaryOp::Pow) core::check_float(name, a);
  Shape shape_scratch;
  const Shape& shape = broadcast_shape(a, b, shape_scratch, name);
  Tensor out = core::empty(shape, a.dtype(), a.device(), name);
  if (out.numel() == 0) return out;
  Layout la_scratch, lb_scratch;
  const Layout& la = layout_as(a, shape, la_scratch, name);
  const Layout& lb = layout_as(b, shape, lb_scratch, name);
  a.device().backend().binary(op, {*a.storage(), la}, {*b.storage(), lb}, *out.storage());
  return out;
}

Tensor compare(Tensor a, Tensor b, CmpOp op) {
  const char* name = backend::cmp_op_name(op);
  core::check_same_device(name, a, b);
  convert_scalar_operand(a, b);
  core::check_same_dtype(name, a, b);
  Shape shape_scratch;
  const Shape& shape = broadcast_shape(a, b, shape_scratch, name);
  Tensor out = core::empty(shape, DType::U8, a.device(), name);
  if (out.numel() == 0) return out;
  Layout la_scratch, lb_scratch;
  const Layout& la = layout_as(a, shape, la_scratch, name);
  const Layout& lb = layout_as(b, shape, lb_scratch, name);
  a.device().backend().compare(op, {*a.storage(), la}, {*b.storage(), lb}, *out.storage());
  return out;
}

// s as a 0-d tensor of t's dtype and device, converted as to_dtype converts (tensor.h).
Tensor scalar_like(const Tensor& t, double s) {
  return dispatch_dtype(t.dtype(), [&](auto z) {
    using T = decltype(z);
    const T v = from_f64<T>(s);
    return Tensor::from_data(&v, t.dtype(), Shape{}, t.device());
  });
}

Tensor binary_scalar(const Tensor& a, double s, BinaryOp op) {
  if (op == BinaryOp::Pow) core::check_float(backend::binary_op_name(op), a);
  return binary(a, scalar_like(a, s), op);
}

// s (op) a.
Tensor scalar_binary(double s, const Tensor& a, BinaryOp op) {
  return binary(scalar_like(a, s), a, op);
}

Tensor compare_scalar(const Tensor& a, double s, CmpOp op) {
  return compare(a, scalar_like(a, s), op);
}

}  // namespace

Tensor Tensor::neg() const { return unary(*this, UnaryOp::Neg); }
Tensor Tensor::abs() const { return unary(*this, UnaryOp::Abs); }
Tensor Tensor::exp() const { return unary(*this, UnaryOp::Exp); }
Tensor Tensor::log() const { return unary(*this, UnaryOp::Log); }
Tensor Tensor::sin() const { return unary(*this, UnaryOp::Sin); }
Tensor Tensor::cos() const { return unary(*this, UnaryOp::Cos); }
Tensor Tensor::tanh() const { return unary(*this, UnaryOp::Tanh); }
Tensor Tensor::sqrt() const { return unary(*this, UnaryOp::Sqrt); }
Tensor Tensor::sqr() const { return unary(*this, UnaryOp::Sqr); }
Tensor Tensor::recip() const { return unary(*this, UnaryOp::Recip); }
Tensor Tensor::relu() const { return unary(*this, UnaryOp::Relu); }
Tensor Tensor::gelu() const { return unary(*this, UnaryOp::Gelu); }
Tensor Tensor::gelu_erf() const { return unary(*this, UnaryOp::GeluErf); }
Tensor Tensor::erf() const { return unary(*this, UnaryOp::Erf); }
Tensor Tensor::silu() const { return unary(*this, UnaryOp::Silu); }
Tensor Tensor::sigmoid() const { return unary(*this, UnaryOp::Sigmoid); }
Tensor Tensor::floor() const { return unary(*this, UnaryOp::Floor); }
Tensor Tensor::ceil() const { return unary(*this, UnaryOp::Ceil); }
Tensor Tensor::round() const { return unary(*this, UnaryOp::Round); }
Tensor Tensor::sign() const { return unary(*this, UnaryOp::Sign); }
Tensor Tensor::affine(double mul, double add) const { return unary(*this, UnaryOp::Affine, {mul, add}); }
Tensor Tensor::powf(double e) const { return unary(*this, UnaryOp::Powf, {e, 0}); }
Tensor Tensor::elu(double alpha) const { return unary(*this, UnaryOp::Elu, {alpha, 0}); }
Tensor Tensor::clamp(double lo, double hi) const {
  if (!(lo <= hi)) fail(ErrorKind::OutOfRange, "clamp", "lo ", lo, " > hi ", hi);
  return unary(*this, UnaryOp::Clamp, {lo, hi});
}

Tensor Tensor::add(const Tensor& o) const { return binary(*this, o, BinaryOp::Add); }
Tensor Tensor::sub(const Tensor& o) const { return binary(*this, o, BinaryOp::Sub); }
Tensor Tensor::mul(const Tensor& o) const { return binary(*this, o, BinaryOp::Mul); }
Tensor Tensor::div(const Tensor& o) const { return binary(*this, o, BinaryOp::Div); }
Tensor Tensor::maximum(const Tensor& o) const { return binary(*this, o, BinaryOp::Maximum); }
Tensor Tensor::minimum(const Tensor& o) const { return binary(*this, o, BinaryOp::Minimum); }
Tensor Tensor::pow(const Tensor& o) const { return binary(*this, o, BinaryOp::Pow); }
Tensor Tensor::add(double s) const { return binary_scalar(*this, s, BinaryOp::Add); }
Tensor Tensor::sub(double s) const { return binary_scalar(*this, s, BinaryOp::Sub); }
Tensor Tensor::mul(double s) const { return binary_scalar(*this, s, BinaryOp::Mul); }
Tensor Tensor::div(double s) const { return binary_scalar(*this, s, BinaryOp::Div); }
Tensor Tensor::maximum(double s) const { return binary_scalar(*this, s, BinaryOp::Maximum); }
Tensor Tensor::minimum(double s) const { return binary_scalar(*this, s, BinaryOp::Minimum); }
Tensor Tensor::pow(double s) const { return binary_scalar(*this, s, BinaryOp::Pow); }
Tensor Tensor::rsub(double s) const {
  return scalar_binary(s, *this, BinaryOp::Sub);
}
Tensor Tensor::rdiv(double s) const {
  return scalar_binary(s, *this, BinaryOp::Div);
}

Tensor Tensor::eq(const Tensor& o) const { return compare(*this, o, CmpOp::Eq); }
Tensor Tensor::ne(const Tensor& o) const { return compare(*this, o, CmpOp::Ne); }
Tensor Tensor::lt(const Tensor& o) const { return compare(*this, o, CmpOp::Lt); }
Tensor Tensor::le(const Tensor& o) const { return compare(*this, o, CmpOp::Le); }
Tensor Tensor::gt(const Tensor& o) const { return compare(*this, o, CmpOp::Gt); }
Tensor Tensor::ge(const Tensor& o) const { return compare(*this, o, CmpOp::Ge); }
Tensor Tensor::eq(double s) const { return compare_scalar(*this, s, CmpOp::Eq); }
Tensor Tensor::ne(double s) const { return compare_scalar(*this, s, CmpOp::Ne); }
Tensor Tensor::lt(double s) const { return compare_scalar(*this, s, CmpOp::Lt); }
Tensor Tensor::le(double s) const { return compare_scalar(*this, s, CmpOp::Le); }
Tensor Tensor::gt(double s) const { return compare_scalar(*this, s, CmpOp::Gt); }
Tensor Tensor::ge(double s) const { return compare_scalar(*this, s, CmpOp::Ge); }

Tensor Tensor::where_cond(const Tensor& on_true, const Tensor& on_false) const {
  const char* name = "where_cond";
  core::check_same_device(name, *this, on_true);
  core::check_same_device(name, *this, on_false);
  core::check_same_dtype(name, on_true, on_false);
  if (is_float(dtype()))
    fail(ErrorKind::DType, name, "condition must be u8, u32 or i64, got ", core::describe(*this));
  Shape scratch_ct, scratch_out;
  const Shape& ct_shape = broadcast_shape(*this, on_true, scratch_ct, name);
  const Shape& out_shape = ct_shape == on_false.shape()
                               ? ct_shape
                               : (scratch_out = broadcast_shapes(ct_shape, on_false.shape(), name));
  Tensor out = core::empty(out_shape, on_true.dtype(), device(), name);
  if (out.numel() == 0) return out;
  Layout scratch_c, scratch_t, scratch_f;
  const Layout& lc = layout_as(*this, out_shape, scratch_c, name);
  const Layout& lt = layout_as(on_true, out_shape, scratch_t, name);
  const Layout& lf = layout_as(on_false, out_shape, scratch_f, name);
  device().backend().where_cond({*storage(), lc}, {*on_true.storage(), lt},
                                {*on_false.storage(), lf}, *out.storage());
  return out;
}

}  // namespace wick
