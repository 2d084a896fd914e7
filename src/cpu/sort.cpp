// CPU arg-sort over the last dim.
//
// Each element becomes an unsigned key whose integer order is the value order; keys are sorted
// together with their indices, the index breaking ties, so the sort is stable in both directions.
// NaN is the largest value: last in ascending order, first in descending order (as PyTorch);
// -0.0 and +0.0 are equal (their order is their index order).
#include <algorithm>
#include <bit>
#include <vector>

#include "cpu/cpu_device.h"
#include "cpu/row_math.h"

namespace wick::cpu {

using backend::Storage;
using backend::View;

namespace {

// 32-bit keys for f32/f16/bf16/u8/u32, 64-bit keys for f64/i64.
template <typename T>
using key_t = std::conditional_t<sizeof(compute_t<T>) <= 4, uint32_t, uint64_t>;

template <typename T>
key_t<T> sort_key(T raw) {
  using K = key_t<T>;
  constexpr K kTop = K(1) << (sizeof(K) * 8 - 1);
  const auto v = to_compute(raw);
  if constexpr (std::is_floating_point_v<decltype(v)>) {
    if (v != v) return ~K(0);
    const K bits = std::bit_cast<K>(v == 0 ? decltype(v)(0) : v);  // -0 -> +0
    return (bits & kTop) ? ~bits : bits | kTop;  // negatives reversed, below positives
  } else if constexpr (std::is_signed_v<decltype(v)>) {
    return static_cast<K>(v) ^ kTop;
  } else {
    return static_cast<K>(v);
  }
}

template <typename T>
void arg_sort_rows(View x, bool ascending, uint32_t* out) {
  using K = key_t<T>;
  const LastDimRows rows = last_dim_rows(x.layout);
  const T* xp = data_of<T>(x);
  const int64_t n = rows.n, st = rows.stride;
  const K flip = ascending ? K(0) : ~K(0);
  parallel_rows(rows, 16, [&](int64_t b, int64_t e) {
    if constexpr (sizeof(K) == 4) {
      // key << 32 | index: one integer sort orders by key, then by index.
      std::vector<uint64_t> keys(static_cast<size_t>(n));
      visit_rows(rows, b, e, [&](int64_t row, int64_t off) {
        for (int64_t j = 0; j < n; j++)
          keys[static_cast<size_t>(j)] =
              uint64_t{sort_key(xp[off + j * st]) ^ flip} << 32 | static_cast<uint64_t>(j);
        std::sort(keys.begin(), keys.end());
        uint32_t* o = out + row * n;
        for (int64_t j = 0; j < n; j++) o[j] = static_cast<uint32_t>(keys[static_cast<size_t>(j)]);
      });
    } else {
      struct KeyIndex {
        K key;
        uint32_t index;
        bool operator<(const KeyIndex& o) const {
          return key < o.key || (key == o.key && index < o.index);
        }
      };
      std::vector<KeyIndex> keys(static_cast<size_t>(n));
      visit_rows(rows, b, e, [&](int64_t row, int64_t off) {
        for (int64_t j = 0; j < n; j++)
          keys[static_cast<size_t>(j)] = {sort_key(xp[off + j * st]) ^ flip,
                                          static_cast<uint32_t>(j)};
        std::sort(keys.begin(), keys.end());
        uint32_t* o = out + row * n;
        for (int64_t j = 0; j < n; j++) o[j] = keys[static_cast<size_t>(j)].index;
      });
    }
  });
}

}  // namespace

void CpuDevice::arg_sort_last_dim(View x, bool ascending, Storage& dst) {
  WICK_ASSERT(x.layout.rank() >= 1 && dst.dtype() == DType::U32);
  if (x.layout.shape.dims().back() > int64_t{1} << 32)
    fail(ErrorKind::Unsupported, "arg_sort_last_dim", "last dim of ", x.layout.shape,
         " does not fit u32 indices");
  dispatch_dtype(x.storage.dtype(), [&](auto zero) {
    arg_sort_rows<decltype(zero)>(x, ascending, cpu_storage(dst).as<uint32_t>());
  });
}

}  // namespace wick::cpu
