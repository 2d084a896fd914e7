// Shapes and strided layouts. Views (narrow, transpose, broadcast, ...) are pure layout arithmetic.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace wick {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const;
  // Row-major strides of a contiguous tensor of this shape.
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
  // Smallest and one-past-largest storage element index the layout touches (for bounds checks).
  std::pair<int64_t, int64_t> storage_span() const;
  std::string str() const;
};

}  // namespace wick
