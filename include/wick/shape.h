// Shapes and strided layouts. Views (narrow, transpose, broadcast, ...) are pure layout arithmetic.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace wick {

// wick's size limit, 2^62. Every tensor's element count (the product of its non-zero dims), every
// storage's size in bytes and every storage offset a tensor's layout reaches stay below it: sums
// and products of two such sizes, or of one and an element size, fit in int64, so kernels need no
// overflow checks of their own. Shape::numel and the Tensor constructor enforce it; an element
// count beyond it is a Shape error, a byte size beyond it OutOfMemory.
inline constexpr int64_t kSizeLimit = int64_t{1} << 62;

// A list of dims. Dims may be set freely (even to -1, as reshape takes); a shape is checked where
// it is used as one: numel() refuses a negative dim or too many elements, and no tensor can be
// built with such a shape.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  // The element count. Throws Error(Shape) naming `op` when a dim is negative or the product of
  // the non-zero dims reaches kSizeLimit (then even an empty shape's strides would overflow).
  int64_t numel(const char* op = "shape") const;
  // Row-major strides of a contiguous tensor of this shape (checks numel first).
  std::vector<int64_t> contiguous_strides() const;
  // Resolves a possibly negative dim index (-1 = last); throws OutOfRange naming `op`.
  size_t dim(int64_t d, const char* op) const;
  std::string str() const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// Numpy broadcasting of two shapes; throws Shape naming `op` when they do not fit.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Where a tensor's elements are in its storage: element (i0, i1, ...) lives at
// start_offset + sum(ik * strides[k]) (in elements). Strides may be 0 (broadcast).
// A plain aggregate that backends build and edit for their own loops; the Tensor constructor
// checks (check_fits) every layout a tensor is made with, so the ones kernels get fit.
struct Layout {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t start_offset = 0;

  Layout() = default;
  Layout(Shape s, std::vector<int64_t> st, int64_t off)
      : shape(std::move(s)), strides(std::move(st)), start_offset(off) {}
  static Layout contiguous(const Shape& s, int64_t offset = 0) {
    return Layout(s, s.contiguous_strides(), offset);
  }

  size_t rank() const { return shape.rank(); }
  int64_t numel() const { return shape.numel(); }
  bool is_contiguous() const;  // row-major, no gaps (size-1 dims may have any stride)
  // Smallest and one-past-largest storage element index the layout touches (for bounds checks);
  // throws Error(OutOfRange) when they do not fit in int64.
  std::pair<int64_t, int64_t> storage_span() const;
  // Throws, naming `op`, unless the layout is well formed and reaches only elements
  // [0, storage_numel): one stride per dim (Shape error), numel() within kSizeLimit (Shape),
  // offset and strides below kSizeLimit in magnitude, and the span of a non-empty layout inside
  // the storage (OutOfRange).
  void check_fits(int64_t storage_numel, const char* op) const;
  std::string str() const;
};

}  // namespace wick
