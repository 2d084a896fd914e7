// CPU unary element-wise ops.
//
// Float dtypes compute in their compute type (f16/bf16 in f32, rounded once). Integer dtypes
// take the ops the front end lets through, with these semantics:
//   neg, abs, sqr: wrap modulo 2^bits (abs(i64 min) stays i64 min); neg of u8/u32 is refused
//     by the front end;
//   relu, sign: exact (sign of an unsigned value is 0 or 1);
//   affine: x * p0 + p1 computed in double, truncated toward zero and saturated to the dtype
//     (exact while |x| < 2^53);
//   clamp: x is kept when inside [p0, p1], else the bound converted like affine's result.
#include <cmath>
#include <type_traits>

#include "cpu/elementwise.h"
#include "cpu/float_math.h"
#include "cpu/fused_rows.h"

namespace wick::cpu {

using backend::Storage;
using backend::UnaryOp;
using backend::UnaryParams;
using backend::View;

namespace {

template <UnaryOp OP>
using UnaryTag = std::integral_constant<UnaryOp, OP>;

// Calls f(UnaryTag<op>{}) so that each op gets its own loop.
template <typename F>
void with_unary_op(UnaryOp op, F&& f) {
  switch (op) {
    case UnaryOp::Neg:
      return f(UnaryTag<UnaryOp::Neg>{});
    case UnaryOp::Abs:
      return f(UnaryTag<UnaryOp::Abs>{});
    case UnaryOp::Exp:
      return f(UnaryTag<UnaryOp::Exp>{});
    case UnaryOp::Log:
      return f(UnaryTag<UnaryOp::Log>{});
    case UnaryOp::Sin:
      return f(UnaryTag<UnaryOp::Sin>{});
    case UnaryOp::Cos:
      return f(UnaryTag<UnaryOp::Cos>{});
    case UnaryOp::Tanh:
      return f(UnaryTag<UnaryOp::Tanh>{});
    case UnaryOp::Sqrt:
      return f(UnaryTag<UnaryOp::Sqrt>{});
    case UnaryOp::Sqr:
      return f(UnaryTag<UnaryOp::Sqr>{});
    case UnaryOp::Recip:
      return f(UnaryTag<UnaryOp::Recip>{});
    case UnaryOp::Relu:
      return f(UnaryTag<UnaryOp::Relu>{});
    case UnaryOp::Gelu:
      return f(UnaryTag<UnaryOp::Gelu>{});
    case UnaryOp::GeluErf:
      return f(UnaryTag<UnaryOp::GeluErf>{});
    case UnaryOp::Erf:
      return f(UnaryTag<UnaryOp::Erf>{});
    case UnaryOp::Silu:
      return f(UnaryTag<UnaryOp::Silu>{});
    case UnaryOp::Sigmoid:
      return f(UnaryTag<UnaryOp::Sigmoid>{});
    case UnaryOp::Floor:
      return f(UnaryTag<UnaryOp::Floor>{});
    case UnaryOp::Ceil:
      return f(UnaryTag<UnaryOp::Ceil>{});
    case UnaryOp::Round:
      return f(UnaryTag<UnaryOp::Round>{});
    case UnaryOp::Sign:
      return f(UnaryTag<UnaryOp::Sign>{});
    case UnaryOp::Affine:
      return f(UnaryTag<UnaryOp::Affine>{});
    case UnaryOp::Powf:
      return f(UnaryTag<UnaryOp::Powf>{});
    case UnaryOp::Elu:
      return f(UnaryTag<UnaryOp::Elu>{});
    case UnaryOp::Clamp:
      return f(UnaryTag<UnaryOp::Clamp>{});
  }
  fail(ErrorKind::Internal, "unary", "unknown op ", static_cast<int>(op));
}

// Ops that call into libm per element (float_math.h has no vectorised form for them, or C is
// double) cost tens of cycles an element: they are split over threads earlier.
template <typename C>
constexpr bool calls_libm(UnaryOp op) {
  switch (op) {
    case UnaryOp::Sin:
    case UnaryOp::Cos:
    case UnaryOp::Powf:
      return true;
    case UnaryOp::Exp:
    case UnaryOp::Log:
    case UnaryOp::Tanh:
    case UnaryOp::Gelu:
    case UnaryOp::GeluErf:
    case UnaryOp::Erf:
    case UnaryOp::Silu:
    case UnaryOp::Sigmoid:
    case UnaryOp::Elu:
      return std::is_same_v<C, double>;
    default:
      return false;
  }
}

// One float op on compute type C (float or double); p0/p1 are the op's parameters. Selects pick
// between values computed beforehand, so that the loops vectorise (see float_math.h).
template <UnaryOp OP, typename C>
struct FloatUnary {
  C p0, p1;
  WICK_ALWAYS_INLINE C operator()(C x) const {
    if constexpr (OP == UnaryOp::Neg) return -x;
    if constexpr (OP == UnaryOp::Abs) return std::abs(x);
    if constexpr (OP == UnaryOp::Exp) return vmath::exp(x);
    if constexpr (OP == UnaryOp::Log) return vmath::log(x);
    if constexpr (OP == UnaryOp::Sin) return std::sin(x);
    if constexpr (OP == UnaryOp::Cos) return std::cos(x);
    if constexpr (OP == UnaryOp::Tanh) return vmath::tanh(x);
    if constexpr (OP == UnaryOp::Sqrt) return std::sqrt(x);
    if constexpr (OP == UnaryOp::Sqr) return x * x;
    if constexpr (OP == UnaryOp::Recip) return C(1) / x;
    if constexpr (OP == UnaryOp::Relu) return x < 0 ? C(0) : x;  // NaN passes through
    if constexpr (OP == UnaryOp::Gelu) return vmath::gelu_tanh(x);
    if constexpr (OP == UnaryOp::GeluErf) return vmath::gelu_erf(x);
    if constexpr (OP == UnaryOp::Erf) return vmath::erf(x);
    if constexpr (OP == UnaryOp::Silu) return x * vmath::sigmoid(x);
    if constexpr (OP == UnaryOp::Sigmoid) return vmath::sigmoid(x);
    if constexpr (OP == UnaryOp::Floor) return std::floor(x);
    if constexpr (OP == UnaryOp::Ceil) return std::ceil(x);
    if constexpr (OP == UnaryOp::Round) return std::round(x);  // half away from zero
    if constexpr (OP == UnaryOp::Sign) {
      const C neg_or_x = x < 0 ? C(-1) : x;  // keeps NaN and -0
      return x > 0 ? C(1) : neg_or_x;
    }
    if constexpr (OP == UnaryOp::Affine) return x * p0 + p1;
    if constexpr (OP == UnaryOp::Powf) return std::pow(x, p0);
    if constexpr (OP == UnaryOp::Elu) {
      const C neg = p0 * vmath::expm1_nonpositive(std::min(x, C(0)));
      return x > 0 ? x : neg;
    }
    if constexpr (OP == UnaryOp::Clamp) {
      const C above_lo = x < p0 ? p0 : x;  // NaN passes through both
      return above_lo > p1 ? p1 : above_lo;
    }
  }
};

constexpr bool takes_int(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sqr:
    case UnaryOp::Relu:
    case UnaryOp::Sign:
    case UnaryOp::Affine:
    case UnaryOp::Clamp:
      return true;
    default:
      return false;
  }
}

// One integer op (see the file comment for the semantics).
template <UnaryOp OP, typename T>
struct IntUnary {
  double p0, p1;
  WICK_ALWAYS_INLINE T operator()(T x) const {
    using W = ew::WrapT<T>;
    if constexpr (OP == UnaryOp::Neg) return static_cast<T>(W(0) - static_cast<W>(x));
    if constexpr (OP == UnaryOp::Abs) {
      if constexpr (std::is_signed_v<T>)
        return x < 0 ? static_cast<T>(W(0) - static_cast<W>(x)) : x;
      else
        return x;
    }
    if constexpr (OP == UnaryOp::Sqr) return static_cast<T>(static_cast<W>(x) * static_cast<W>(x));
    if constexpr (OP == UnaryOp::Relu) return x < 0 ? T(0) : x;
    if constexpr (OP == UnaryOp::Sign) return x > 0 ? T(1) : x < 0 ? T(-1) : T(0);
    if constexpr (OP == UnaryOp::Affine) return from_f64<T>(static_cast<double>(x) * p0 + p1);
    if constexpr (OP == UnaryOp::Clamp) {
      const auto d = static_cast<double>(x);
      return d < p0 ? from_f64<T>(p0) : d > p1 ? from_f64<T>(p1) : x;
    }
  }
};

template <typename T, typename F>
void run_map(View x, Storage& dst, const F& f, int64_t grain) {
  const T* xs = data_of<T>(x);
  T* y = cpu_storage(dst).as<T>();
  ew::for_each_row<1>(
      x.layout.shape, {&x.layout}, grain,
      [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
        auto row = [&]() WICK_ALWAYS_INLINE { ew::map_row(xs + o[0], st[0], y + o[1], n, f); };
        // Integer ops are simple enough that wider builds buy nothing.
        if constexpr (ew::kIsFloat<T>)
          with_best_isa(row);
        else
          row();
      });
}

template <typename T>
void unary_typed(UnaryOp op, UnaryParams p, View x, Storage& dst) {
  with_unary_op(op, [&](auto tag) {
    constexpr UnaryOp kOp = decltype(tag)::value;
    using C = ew::compute_t<T>;
    const int64_t grain = calls_libm<C>(kOp) ? ew::kExpensiveGrain : kParallelGrain;
    if constexpr (ew::kIsFloat<T>) {
      run_map<T>(x, dst, FloatUnary<kOp, C>{static_cast<C>(p.p0), static_cast<C>(p.p1)}, grain);
    } else if constexpr (takes_int(kOp) && !(kOp == UnaryOp::Neg && std::is_unsigned_v<T>)) {
      run_map<T>(x, dst, IntUnary<kOp, T>{p.p0, p.p1}, grain);
    } else {
      fail(ErrorKind::Unsupported, backend::unary_op_name(kOp), "cpu has no ",
           backend::unary_op_name(kOp), " of ", dtype_of<T>::value);
    }
  });
}

}  // namespace

void swiglu_row(const float* gate, const float* up, int64_t n, float* y) {
  const FloatUnary<UnaryOp::Silu, float> silu{0, 0};
  with_best_isa([&]() WICK_ALWAYS_INLINE {
    for (int64_t i = 0; i < n; i++) y[i] = silu(gate[i]) * up[i];
  });
}

void CpuDevice::unary(UnaryOp op, UnaryParams p, View x, Storage& dst) {
  ew::check_view(x, backend::unary_op_name(op));
  WICK_ASSERT(x.storage.dtype() == dst.dtype() &&
              dst.numel() == static_cast<size_t>(x.layout.numel()));
  dispatch_dtype(dst.dtype(), [&](auto z) { unary_typed<decltype(z)>(op, p, x, dst); });
}

}  // namespace wick::cpu
