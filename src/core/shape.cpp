#include "wick/shape.h"

#include <algorithm>
#include <sstream>

#include "wick/error.h"

namespace wick {

int64_t Shape::numel(const char* op) const {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : dims_) {
    if (d < 0) fail(ErrorKind::Shape, op, "negative dim in shape ", *this);
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(n, d, &n) || n >= kSizeLimit)
      fail(ErrorKind::Shape, op, "shape ", *this,
           " is too large: its dims multiply to 2^62 or more (wick's size limit)");
  }
  return empty ? 0 : n;
}

std::vector<int64_t> Shape::contiguous_strides() const {
  numel("contiguous_strides");  // every partial product below is then in range
  std::vector<int64_t> st(dims_.size());
  int64_t s = 1;
  for (size_t i = dims_.size(); i-- > 0;) {
    st[i] = s;
    s *= dims_[i];
  }
  return st;
}

size_t Shape::dim(int64_t d, const char* op) const {
  const int64_t r = static_cast<int64_t>(dims_.size());
  const int64_t k = d < 0 ? d + r : d;
  if (k < 0 || k >= r) fail(ErrorKind::OutOfRange, op, "dim ", d, " out of range for shape ", *this);
  return static_cast<size_t>(k);
}

std::string Shape::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (size_t i = 0; i < s.rank(); i++) os << (i ? ", " : "") << s[i];
  return os << ']';
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t r = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; i++) {
    const int64_t da = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    const int64_t db = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    if (da != db && da != 1 && db != 1)
      fail(ErrorKind::Shape, op, "cannot broadcast shapes ", a, " and ", b);
    out[i] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

bool Layout::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = shape.rank(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

std::pair<int64_t, int64_t> Layout::storage_span() const {
  WICK_ASSERT(strides.size() == shape.rank());
  if (shape.numel() == 0) return {start_offset, start_offset};
  int64_t lo = start_offset, hi = start_offset;
  bool overflow = false;
  for (size_t i = 0; i < shape.rank() && !overflow; i++) {
    int64_t ext;
    overflow = __builtin_mul_overflow(shape[i] - 1, strides[i], &ext) ||
               __builtin_add_overflow(ext < 0 ? lo : hi, ext, ext < 0 ? &lo : &hi);
  }
  if (overflow || __builtin_add_overflow(hi, 1, &hi))
    fail(ErrorKind::OutOfRange, "layout", "layout ", str(), " reaches offsets beyond int64");
  return {lo, hi};
}

void Layout::check_fits(int64_t storage_numel, const char* op) const {
  if (strides.size() != shape.rank())
    fail(ErrorKind::Shape, op, "layout ", str(), " has ", strides.size(), " strides for ",
         shape.rank(), " dims");
  const int64_t n = shape.numel(op);
  if (start_offset < 0 || start_offset >= kSizeLimit)
    fail(ErrorKind::OutOfRange, op, "layout ", str(), " has an offset outside [0, 2^62)");
  for (int64_t s : strides)
    if (s <= -kSizeLimit || s >= kSizeLimit)
      fail(ErrorKind::OutOfRange, op, "layout ", str(), " has a stride beyond 2^62");
  if (n == 0) return;
  const auto [lo, hi] = storage_span();
  if (lo < 0 || hi > storage_numel)
    fail(ErrorKind::OutOfRange, op, "layout ", str(), " reaches elements [", lo, ", ", hi,
         ") outside its storage of ", storage_numel, " elements");
}

std::string Layout::str() const {
  std::ostringstream os;
  os << "{shape " << shape << ", strides [";
  for (size_t i = 0; i < strides.size(); i++) os << (i ? ", " : "") << strides[i];
  os << "], offset " << start_offset << '}';
  return os.str();
}

}  // namespace wick
