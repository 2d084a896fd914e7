// CPU binary element-wise ops, comparisons and where_cond.
//
// Floats compute in their compute type (f16/bf16 in f32, rounded once); maximum and minimum
// propagate NaN (as PyTorch). Integers: add, sub and mul wrap modulo 2^bits; div truncates toward
// zero and i64 min / -1 wraps to i64 min; division by zero throws OutOfRange (noticed while
// dividing, thrown once the loop is done: the output is then discarded).
#include <atomic>
#include <cmath>
#include <type_traits>

#include "cpu/elementwise.h"

namespace wick::cpu {

using backend::BinaryOp;
using backend::CmpOp;
using backend::Storage;
using backend::View;

namespace {

template <BinaryOp OP>
using BinaryTag = std::integral_constant<BinaryOp, OP>;

// Calls f(BinaryTag<op>{}) so that each op gets its own loop.
template <typename F>
void with_binary_op(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::Add:
      return f(BinaryTag<BinaryOp::Add>{});
    case BinaryOp::Sub:
      return f(BinaryTag<BinaryOp::Sub>{});
    case BinaryOp::Mul:
      return f(BinaryTag<BinaryOp::Mul>{});
    case BinaryOp::Div:
      return f(BinaryTag<BinaryOp::Div>{});
    case BinaryOp::Maximum:
      return f(BinaryTag<BinaryOp::Maximum>{});
    case BinaryOp::Minimum:
      return f(BinaryTag<BinaryOp::Minimum>{});
    case BinaryOp::Pow:
      return f(BinaryTag<BinaryOp::Pow>{});
  }
  fail(ErrorKind::Internal, "binary", "unknown op ", static_cast<int>(op));
}

template <BinaryOp OP, typename C>
struct FloatBinary {
  WICK_ALWAYS_INLINE C operator()(C a, C b) const {
    if constexpr (OP == BinaryOp::Add) return a + b;
    if constexpr (OP == BinaryOp::Sub) return a - b;
    if constexpr (OP == BinaryOp::Mul) return a * b;
    if constexpr (OP == BinaryOp::Div) return a / b;
    if constexpr (OP == BinaryOp::Maximum) return (a > b) | (a != a) ? a : b;
    if constexpr (OP == BinaryOp::Minimum) return (a < b) | (a != a) ? a : b;
    if constexpr (OP == BinaryOp::Pow) return std::pow(a, b);
  }
};

template <BinaryOp OP, typename T>
struct IntBinary {
  std::atomic<bool>* div_by_zero;
  WICK_ALWAYS_INLINE T operator()(T a, T b) const {
    using W = ew::WrapT<T>;
    if constexpr (OP == BinaryOp::Add) return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    if constexpr (OP == BinaryOp::Sub) return static_cast<T>(static_cast<W>(a) - static_cast<W>(b));
    if constexpr (OP == BinaryOp::Mul) return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    if constexpr (OP == BinaryOp::Div) {
      if (b == 0) {
        div_by_zero->store(true, std::memory_order_relaxed);
        return T(0);
      }
      if constexpr (std::is_signed_v<T>)
        if (b == -1) return static_cast<T>(W(0) - static_cast<W>(a));  // i64 min / -1 traps
      return static_cast<T>(a / b);
    }
    if constexpr (OP == BinaryOp::Maximum) return a > b ? a : b;
    if constexpr (OP == BinaryOp::Minimum) return a < b ? a : b;
  }
};

template <CmpOp OP>
struct Compare {
  template <typename C>
  WICK_ALWAYS_INLINE uint8_t operator()(C a, C b) const {
    if constexpr (OP == CmpOp::Eq) return a == b;
    if constexpr (OP == CmpOp::Ne) return a != b;
    if constexpr (OP == CmpOp::Lt) return a < b;
    if constexpr (OP == CmpOp::Le) return a <= b;
    if constexpr (OP == CmpOp::Gt) return a > b;
    if constexpr (OP == CmpOp::Ge) return a >= b;
  }
};

template <CmpOp OP>
using CmpTag = std::integral_constant<CmpOp, OP>;

template <typename F>
void with_cmp_op(CmpOp op, F&& f) {
  switch (op) {
    case CmpOp::Eq:
      return f(CmpTag<CmpOp::Eq>{});
    case CmpOp::Ne:
      return f(CmpTag<CmpOp::Ne>{});
    case CmpOp::Lt:
      return f(CmpTag<CmpOp::Lt>{});
    case CmpOp::Le:
      return f(CmpTag<CmpOp::Le>{});
    case CmpOp::Gt:
      return f(CmpTag<CmpOp::Gt>{});
    case CmpOp::Ge:
      return f(CmpTag<CmpOp::Ge>{});
  }
  fail(ErrorKind::Internal, "compare", "unknown op ", static_cast<int>(op));
}

// y = f(a, b) over the broadcast shape of a and b (the same shape by now).
template <typename T, typename Y, typename F>
void run_zip(View a, View b, Y* y, const F& f, int64_t grain) {
  const T* pa = data_of<T>(a);
  const T* pb = data_of<T>(b);
  ew::for_each_row<2>(
      a.layout.shape, {&a.layout, &b.layout}, grain,
      [&](const std::array<int64_t, 3>& o, int64_t n, const std::array<int64_t, 3>& st) {
        auto row = [&]() WICK_ALWAYS_INLINE {
          ew::zip_row(pa + o[0], st[0], pb + o[1], st[1], y + o[2], n, f);
        };
        // Integer ops are memory-bound: wider builds buy nothing.
        if constexpr (ew::kIsFloat<T>)
          with_best_isa(row);
        else
          row();
      });
}

void check_operands(const char* op, View a, View b, const Storage& dst) {
  ew::check_view(a, op);
  ew::check_view(b, op);
  WICK_ASSERT(a.storage.dtype() == b.storage.dtype() && a.layout.shape == b.layout.shape &&
              dst.numel() == static_cast<size_t>(a.layout.numel()));
}

// The unsigned type of an element size: where_cond moves values without looking at them.
template <size_t Bytes>
using Bits = std::conditional_t<
    Bytes == 1, uint8_t,
    std::conditional_t<Bytes == 2, uint16_t, std::conditional_t<Bytes == 4, uint32_t, uint64_t>>>;

template <typename Cond, typename V>
void where_row(const Cond* c, int64_t sc, const V* t, int64_t st, const V* f, int64_t sf, V* y,
               int64_t n) {
  // The vectorisable cases: a contiguous condition, each value contiguous or one scalar
  // (where(mask, x, 0) and friends).
  if (sc == 1 && st == 1 && sf == 1) {
    for (int64_t j = 0; j < n; j++) y[j] = c[j] != 0 ? t[j] : f[j];
  } else if (sc == 1 && st == 1 && sf == 0) {
    const V fv = f[0];
    for (int64_t j = 0; j < n; j++) y[j] = c[j] != 0 ? t[j] : fv;
  } else if (sc == 1 && st == 0 && sf == 1) {
    const V tv = t[0];
    for (int64_t j = 0; j < n; j++) y[j] = c[j] != 0 ? tv : f[j];
  } else if (sc == 1 && st == 0 && sf == 0) {
    const V tv = t[0], fv = f[0];
    for (int64_t j = 0; j < n; j++) y[j] = c[j] != 0 ? tv : fv;
  } else {
    for (int64_t j = 0; j < n; j++) y[j] = c[j * sc] != 0 ? t[j * st] : f[j * sf];
  }
}

template <typename Cond, typename V>
void run_where(View cond, View on_true, View on_false, Storage& dst) {
  const Cond* pc = data_of<Cond>(cond);
  const V* pt = data_of<V>(on_true);
  const V* pf = data_of<V>(on_false);
  V* y = cpu_storage(dst).as<V>();
  ew::for_each_row<3>(
      cond.layout.shape, {&cond.layout, &on_true.layout, &on_false.layout}, kParallelGrain,
      [&](const std::array<int64_t, 4>& o, int64_t n, const std::array<int64_t, 4>& s) {
        where_row(pc + o[0], s[0], pt + o[1], s[1], pf + o[2], s[2], y + o[3], n);
      });
}

}  // namespace

void CpuDevice::binary(BinaryOp op, View a, View b, Storage& dst) {
  const char* name = backend::binary_op_name(op);
  check_operands(name, a, b, dst);
  WICK_ASSERT(dst.dtype() == a.storage.dtype());
  dispatch_dtype(dst.dtype(), [&](auto z) {
    using T = decltype(z);
    T* y = cpu_storage(dst).as<T>();
    with_binary_op(op, [&](auto tag) {
      constexpr BinaryOp kOp = decltype(tag)::value;
      const int64_t grain = kOp == BinaryOp::Pow ? ew::kExpensiveGrain : kParallelGrain;
      if constexpr (ew::kIsFloat<T>) {
        run_zip<T>(a, b, y, FloatBinary<kOp, ew::compute_t<T>>{}, grain);
      } else if constexpr (kOp == BinaryOp::Pow) {
        fail(ErrorKind::Unsupported, name, "cpu has no pow of ", dtype_of<T>::value);
      } else {
        std::atomic<bool> div_by_zero{false};
        run_zip<T>(a, b, y, IntBinary<kOp, T>{&div_by_zero}, grain);
        if (div_by_zero.load())
          fail(ErrorKind::OutOfRange, name, "integer division by zero in ", a.layout.shape, ' ',
               dtype_of<T>::value, " / ", b.layout.shape, ' ', dtype_of<T>::value);
      }
    });
  });
}

void CpuDevice::compare(CmpOp op, View a, View b, Storage& dst) {
  const char* name = backend::cmp_op_name(op);
  check_operands(name, a, b, dst);
  WICK_ASSERT(dst.dtype() == DType::U8);
  auto* y = cpu_storage(dst).as<uint8_t>();
  dispatch_dtype(a.storage.dtype(), [&](auto z) {
    using T = decltype(z);
    with_cmp_op(op, [&](auto tag) {
      run_zip<T>(a, b, y, Compare<decltype(tag)::value>{}, kParallelGrain);
    });
  });
}

void CpuDevice::where_cond(View cond, View on_true, View on_false, Storage& dst) {
  ew::check_view(cond, "where_cond");
  ew::check_view(on_true, "where_cond");
  ew::check_view(on_false, "where_cond");
  const DType vt = on_true.storage.dtype();
  WICK_ASSERT(on_false.storage.dtype() == vt && dst.dtype() == vt &&
              cond.layout.shape == on_true.layout.shape &&
              cond.layout.shape == on_false.layout.shape &&
              dst.numel() == static_cast<size_t>(cond.layout.numel()));
  const DType ct = cond.storage.dtype();
  if (is_float(ct))
    fail(ErrorKind::Unsupported, "where_cond", "cpu has no float condition, got ", ct);
  dispatch_dtype(ct, [&](auto c) {
    using Cond = decltype(c);
    if constexpr (std::is_integral_v<Cond>) {
      switch (dtype_size(vt)) {
        case 1:
          return run_where<Cond, Bits<1>>(cond, on_true, on_false, dst);
        case 2:
          return run_where<Cond, Bits<2>>(cond, on_true, on_false, dst);
        case 4:
          return run_where<Cond, Bits<4>>(cond, on_true, on_false, dst);
        default:
          return run_where<Cond, Bits<8>>(cond, on_true, on_false, dst);
      }
    }
  });
}

}  // namespace wick::cpu
