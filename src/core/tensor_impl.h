// Internals shared by the op front ends in src/core.
#pragma once

#include <optional>

#include "backend/backend.h"
#include "wick/tensor.h"

namespace wick {

struct Tensor::Impl {
  std::shared_ptr<backend::Storage> storage;
  Layout layout;
  DType dtype;
  Device device;
};

namespace core {

inline backend::View view(const Tensor& t) {
  return {*t.storage(), t.layout()};
}

// Throws unless numel(shape) elements of `dt` can be allocated at all: Shape errors as
// Shape::numel, OutOfMemory (naming `op`) when their bytes reach kSizeLimit.
void check_nbytes(const Shape& shape, DType dt, const char* op);

// A new contiguous tensor of `shape`/`dt` on `dev` with uninitialised storage; errors name `op`.
Tensor empty(const Shape& shape, DType dt, const Device& dev, const char* op = "alloc");

// Wraps a storage as a contiguous tensor.
inline Tensor wrap(std::shared_ptr<backend::Storage> s, const Shape& shape, DType dt,
                   const Device& dev) {
  return Tensor(std::move(s), Layout::contiguous(shape), dt, dev);
}

// Throws Device/DType errors naming `op` unless all tensors share a device (and dtype).
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);
void check_float(const char* op, const Tensor& t);
void check_index_dtype(const char* op, const Tensor& ids);

// A view of t with stride-0 dims so that it has shape `to` (numpy rules); throws Shape.
Layout broadcast_layout(const Layout& l, const Shape& to, const char* op);

// Strides that give layout l's elements, in row-major order, the shape `to` (same numel) without
// moving them, or nothing when no strides can (then a reshape copies). Dims of l that are
// contiguous with each other form runs; each run of `to`'s dims must multiply to one of them.
std::optional<std::vector<int64_t>> reshape_strides(const Layout& l, const Shape& to);

// "[2, 3] f32" for messages.
std::string describe(const Tensor& t);

}  // namespace core
}  // namespace wick
