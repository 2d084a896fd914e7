// Element conversions between dtypes, as every backend's host code does them: floats round to
// nearest even (f64 -> f16/bf16 through round-to-odd f32, so it is correctly rounded), integer
// targets truncate toward zero and saturate, NaN -> 0. The CPU backend's casts and every GPU
// backend's read-back convert through these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "wick/dtype.h"

namespace wick {

// Copies/converts n elements: dst[j * ds] = src[j * ss].
template <typename S, typename D>
inline void convert_row(const S* s, int64_t ss, D* d, int64_t ds, int64_t n) {
  if constexpr (std::is_same_v<S, D>) {
    if (ss == 1 && ds == 1) {
      std::memcpy(d, s, static_cast<size_t>(n) * sizeof(S));
      return;
    }
    for (int64_t j = 0; j < n; j++) d[j * ds] = s[j * ss];
  } else if constexpr ((std::is_same_v<D, f16> || std::is_same_v<D, bf16>)&&(
                           std::is_same_v<S, float> || std::is_same_v<S, f16> ||
                           std::is_same_v<S, bf16>)) {
    for (int64_t j = 0; j < n; j++) d[j * ds] = D(static_cast<float>(s[j * ss]));
  } else if constexpr (std::is_same_v<D, float> &&
                       (std::is_same_v<S, f16> || std::is_same_v<S, bf16>)) {
    for (int64_t j = 0; j < n; j++) d[j * ds] = static_cast<float>(s[j * ss]);
  } else {
    for (int64_t j = 0; j < n; j++) d[j * ds] = from_f64<D>(to_f64(s[j * ss]));
  }
}

// n contiguous elements of src_dt at src, converted, to n contiguous elements of dst_dt at dst.
void convert_contiguous(const void* src, DType src_dt, void* dst, DType dst_dt, size_t n);

}  // namespace wick
