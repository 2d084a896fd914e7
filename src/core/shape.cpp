#include "wick/shape.h"

#include <algorithm>
#include <sstream>

#include "wick/error.h"

namespace wick {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::vector<int64_t> Shape::contiguous_strides() const {
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
  if (shape.numel() == 0) return {start_offset, start_offset};
  int64_t lo = start_offset, hi = start_offset;
  for (size_t i = 0; i < shape.rank(); i++) {
    const int64_t ext = (shape[i] - 1) * strides[i];
    if (ext < 0) lo += ext; else hi += ext;
  }
  return {lo, hi + 1};
}

std::string Layout::str() const {
  std::ostringstream os;
  os << "{shape " << shape << ", strides [";
  for (size_t i = 0; i < strides.size(); i++) os << (i ? ", " : "") << strides[i];
  os << "], offset " << start_offset << '}';
  return os.str();
}

}  // namespace wick
