#include "core/convert.h"

namespace wick {

void convert_contiguous(const void* src, DType src_dt, void* dst, DType dst_dt, size_t n) {
  dispatch_dtype(src_dt, [&](auto s0) {
    using S = decltype(s0);
    dispatch_dtype(dst_dt, [&](auto d0) {
      using D = decltype(d0);
      convert_row<S, D>(static_cast<const S*>(src), 1, static_cast<D*>(dst), 1,
                        static_cast<int64_t>(n));
    });
  });
}

}  // namespace wick
