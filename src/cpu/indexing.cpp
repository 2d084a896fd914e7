// CPU indexing: index_select and gather read through indices; scatter_add and index_add add
// into dst in place.
//
// Each op is one joint walk (strided.h) over three layouts of one shape: the output or source,
// the ids, and an "indexed" layout whose indexed dim has stride 0; the kernel adds
// id * (that dim's real stride). index_select and index_add see their 1-D ids as a layout with
// stride 0 outside the indexed dim, so they share the kernels of gather and scatter_add.
// Indices are checked before any parallel loop: nothing is read or written out of bounds and
// nothing throws inside OpenMP.
#include <algorithm>
#include <atomic>
#include <type_traits>

#include "cpu/cpu_device.h"
#include "cpu/strided.h"

namespace wick::cpu {

using backend::Storage;
using backend::StoragePtr;
using backend::View;

namespace {

template <typename F>
void dispatch_index_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::U8:
      return f(uint8_t{});
    case DType::U32:
      return f(uint32_t{});
    case DType::I64:
      return f(int64_t{});
    case DType::I32:
      return f(int32_t{});
    default:  // the front end refuses float ids
      fail(ErrorKind::Internal, "indexing", "ids of dtype ", dt, " reached the cpu kernel");
  }
}

// Throws OutOfRange naming op, a bad index and the dim's size when an id is outside [0, size).
void check_ids(const char* op, View ids, size_t dim, int64_t size) {
  std::atomic<bool> found{false};
  std::atomic<int64_t> bad{0};
  const auto plan = make_plan<1>(ids.layout.shape, {&ids.layout});
  dispatch_index_dtype(ids.storage.dtype(), [&](auto i0) {
    using I = decltype(i0);
    const I* p = data_of<I>(ids);
    visit(plan, [&](const std::array<int64_t, 1>& o, int64_t n, const std::array<int64_t, 1>& st) {
      for (int64_t j = 0; j < n; j++) {
        const auto v = static_cast<int64_t>(p[o[0] + j * st[0]]);
        if (v < 0 || v >= size) {
          bad.store(v, std::memory_order_relaxed);
          found.store(true, std::memory_order_release);
          return;
        }
      }
    });
  });
  if (found.load(std::memory_order_acquire))
    fail(ErrorKind::OutOfRange, op, "index ", bad.load(), " out of range for dim ", dim,
         " of size ", size);
}

// l with shape `shape` and the stride of `dim` set to 0: where an element sits before its index
// along dim is added. l's other dims must have shape's sizes (or any size when l has stride 0).
Layout indexed_layout(const Layout& l, const Shape& shape, size_t dim) {
  Layout out(shape, l.strides, l.start_offset);
  out.strides[dim] = 0;
  return out;
}

// 1-D ids seen over `shape`: ids[i] wherever dim's index is i, whatever the other indices.
Layout spread_ids(const Layout& ids, const Shape& shape, size_t dim) {
  std::vector<int64_t> strides(shape.rank(), 0);
  strides[dim] = ids.strides[0];
  return Layout(shape, std::move(strides), ids.start_offset);
}

// dst[e] = src[src_at(e) + ids[e] * src_dim_stride] for every element e of shape (dst contiguous).
void gather_into(View src, const Layout& src_at, int64_t src_dim_stride, View ids,
                 const Layout& ids_at, const Shape& shape, Storage& dst) {
  const Layout dst_at = Layout::contiguous(shape);
  const auto plan = make_plan<3>(shape, {&dst_at, &src_at, &ids_at});
  dispatch_dtype(src.storage.dtype(), [&](auto t0) {
    using T = decltype(t0);
    const T* s = data_of<T>(src);
    T* d = cpu_storage(dst).as<T>();
    dispatch_index_dtype(ids.storage.dtype(), [&](auto i0) {
      using I = decltype(i0);
      const I* id = data_of<I>(ids);
      visit(plan, [&](const std::array<int64_t, 3>& o, int64_t n,
                      const std::array<int64_t, 3>& st) {
        T* dr = d + o[0];
        const T* sr = s + o[1];
        const I* ir = id + o[2];
        if (st[2] == 0) {  // one index for the whole row: a strided row copy
          sr += static_cast<int64_t>(ir[0]) * src_dim_stride;
          if (st[0] == 1 && st[1] == 1)
            std::copy(sr, sr + n, dr);
          else
            for (int64_t j = 0; j < n; j++) dr[j * st[0]] = sr[j * st[1]];
        } else {
          for (int64_t j = 0; j < n; j++)
            dr[j * st[0]] = sr[j * st[1] + static_cast<int64_t>(ir[j * st[2]]) * src_dim_stride];
        }
      });
    });
  });
}

// d + s. Integers wrap modulo 2^bits (through the unsigned type: no signed-overflow UB).
template <typename Acc, typename T>
inline Acc accumulate(Acc d, T s) {
  if constexpr (std::is_integral_v<Acc>) {
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(static_cast<U>(static_cast<U>(d) + static_cast<U>(s)));
  } else {
    return d + static_cast<Acc>(s);
  }
}

// acc[acc_at(e) + ids[e] * acc_dim_stride] += src[e] for every element e of shape.
// Elements that differ only along dim may hit the same target, so a thread owns whole lines
// along dim and adds them in order: every contribution lands, and the result is deterministic.
template <typename Acc, typename T, typename I>
void scatter_lines(Acc* acc, const Layout& acc_at, int64_t acc_dim_stride, const I* ids,
                   const Layout& ids_at, const T* src, const Layout& src_at, const Shape& shape,
                   size_t dim) {
  Shape lines = shape;
  lines[dim] = 1;
  const int64_t len = shape[dim];
  const int64_t ids_step = ids_at.strides[dim], src_step = src_at.strides[dim];
  const auto plan = make_plan<3>(lines, {&acc_at, &ids_at, &src_at});
  const auto add_lines = [&](const std::array<int64_t, 3>& o, int64_t n,
                             const std::array<int64_t, 3>& st) {
    Acc* ar = acc + o[0];
    for (int64_t k = 0; k < len; k++) {
      const I* ir = ids + o[1] + k * ids_step;
      const T* sr = src + o[2] + k * src_step;
      for (int64_t j = 0; j < n; j++) {
        Acc& target = ar[j * st[0] + static_cast<int64_t>(ir[j * st[1]]) * acc_dim_stride];
        target = accumulate(target, sr[j * st[2]]);
      }
    }
  };
  visit(plan, add_lines, std::max<int64_t>(1, kParallelGrain / len));
}

// dst (contiguous dst_shape) += src scattered along dim through ids seen as ids_at.
// f16/bf16 accumulate in an f32 copy of dst and are rounded back once per element.
void scatter_into(CpuDevice& dev, Storage& dst, const Shape& dst_shape, View ids,
                  const Layout& ids_at, View src, size_t dim) {
  const Shape& shape = src.layout.shape;
  const Layout acc_at = indexed_layout(Layout::contiguous(dst_shape), shape, dim);
  const int64_t acc_dim_stride = Layout::contiguous(dst_shape).strides[dim];
  dispatch_dtype(dst.dtype(), [&](auto t0) {
    using T = decltype(t0);
    const T* s = data_of<T>(src);
    dispatch_index_dtype(ids.storage.dtype(), [&](auto i0) {
      using I = decltype(i0);
      const I* id = data_of<I>(ids);
      if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
        const Layout flat = Layout::contiguous(Shape{dst_shape.numel()});
        StoragePtr wide = dev.alloc(DType::F32, static_cast<size_t>(dst_shape.numel()));
        dev.cast(View{dst, flat}, *wide);
        scatter_lines(cpu_storage(*wide).as<float>(), acc_at, acc_dim_stride, id, ids_at, s,
                      src.layout, shape, dim);
        dev.cast(View{*wide, flat}, dst);
      } else {
        scatter_lines(cpu_storage(dst).as<T>(), acc_at, acc_dim_stride, id, ids_at, s, src.layout,
                      shape, dim);
      }
    });
  });
}

}  // namespace

void CpuDevice::index_select(View src, View ids, size_t dim, Storage& dst) {
  WICK_ASSERT(ids.layout.rank() == 1 && dim < src.layout.rank());
  check_ids("index_select", ids, dim, src.layout.shape[dim]);
  Shape shape = src.layout.shape;
  shape[dim] = ids.layout.shape[0];
  gather_into(src, indexed_layout(src.layout, shape, dim), src.layout.strides[dim], ids,
              spread_ids(ids.layout, shape, dim), shape, dst);
}

void CpuDevice::gather(View src, View ids, size_t dim, Storage& dst) {
  WICK_ASSERT(ids.layout.rank() == src.layout.rank() && dim < src.layout.rank());
  check_ids("gather", ids, dim, src.layout.shape[dim]);
  const Shape& shape = ids.layout.shape;
  gather_into(src, indexed_layout(src.layout, shape, dim), src.layout.strides[dim], ids, ids.layout,
              shape, dst);
}

void CpuDevice::scatter_add(Storage& dst, const Shape& dst_shape, View ids, View src, size_t dim) {
  WICK_ASSERT(ids.layout.shape == src.layout.shape && src.layout.rank() == dst_shape.rank());
  check_ids("scatter_add", ids, dim, dst_shape[dim]);
  scatter_into(*this, dst, dst_shape, ids, ids.layout, src, dim);
}

void CpuDevice::index_add(Storage& dst, const Shape& dst_shape, View ids, View src, size_t dim) {
  WICK_ASSERT(ids.layout.rank() == 1 && src.layout.rank() == dst_shape.rank());
  WICK_ASSERT(ids.layout.shape[0] == src.layout.shape[dim]);
  check_ids("index_add", ids, dim, dst_shape[dim]);
  scatter_into(*this, dst, dst_shape, ids, spread_ids(ids.layout, src.layout.shape, dim), src, dim);
}

}  // namespace wick::cpu
