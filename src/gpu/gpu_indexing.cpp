// GPU indexing: index_select, gather, scatter_add, index_add. The indexed dim is taken out of
// the source layout (stride 0) and the kernel adds id * stride, so strided sources and ids are
// read in place. Ids are checked on the device: an out-of-range id is never dereferenced; it is
// recorded in the device's error words, and the op waits for itself and raises OutOfRange.
#include "gpu/gpu_device.h"

namespace wick::gpu {

using backend::Storage;
using backend::View;

namespace {

// `l` over `shape` with dim `d`'s stride zeroed (shape[d] may differ from l's).
Layout without_dim(const Layout& l, const Shape& shape, size_t d) {
  std::vector<int64_t> st = l.strides;
  st[d] = 0;
  return Layout(shape, std::move(st), l.start_offset);
}

// A 1-D ids view placed along dim `d` of `shape` (stride 0 elsewhere).
Layout along_dim(const Layout& ids, const Shape& shape, size_t d) {
  std::vector<int64_t> st(shape.rank(), 0);
  st[d] = ids.strides[0];
  return Layout(shape, std::move(st), ids.start_offset);
}

}  // namespace

const Pipeline& GpuDevice::indexed_kernel(KernelFamily family, const char* source, DType dt,
                                          DType id_dt) {
  return kernel(family, {static_cast<uint32_t>(dt), static_cast<uint32_t>(id_dt)}, [&] {
    Defines d;
    add_dtype(d, "", dt);
    add_dtype(d, "ID_", id_dt);
    return key_for(source, std::move(d));
  });
}

void GpuDevice::launch_index(uint32_t mode, const char* op, View src, View ids, size_t dim,
                             Storage& dst) {
  const DType dt = src.storage.dtype();
  require(dt, op);
  require(ids.storage.dtype(), op);
  // index_select: src's shape with dim resized to the ids; gather: the ids' shape.
  Shape out_shape = ids.layout.shape;
  if (mode == 0) {
    out_shape = src.layout.shape;
    out_shape[dim] = ids.layout.shape[0];
  }
  const Layout base = without_dim(src.layout, out_shape, dim);
  const Layout id_layout = mode == 0 ? along_dim(ids.layout, out_shape, dim) : ids.layout;
  const Layout out = Layout::contiguous(out_shape);
  const DType id_dt = ids.storage.dtype();
  const Pipeline& pipeline = indexed_kernel(KernelFamily::Index, "index", dt, id_dt);
  BufferRef record = errors_->acquire();
  const uint64_t submission =
      launch_strided(pipeline, {{&buffer(src.storage), &base}, {&buffer(ids.storage), &id_layout}},
                     {&buffer(dst), &out}, false,
                     {PushParam::u32(to_index(src.layout.strides[dim], "stride")),
                      PushParam::u32(to_index(src.layout.shape[dim], "dim")),
                      PushParam::u32(mode == 0 ? WICK_ERROR_INDEX_SELECT : WICK_ERROR_GATHER)},
                     record.get());
  refuse_device_errors(std::move(record), submission, op);
}

void GpuDevice::launch_scatter(uint32_t mode, const char* op, Storage& dst, const Shape& dst_shape,
                               View ids, View src, size_t dim) {
  const DType dt = dst.dtype();
  require(dt, op);
  require(ids.storage.dtype(), op);
  const Layout base = without_dim(src.layout, dst_shape, dim);
  const Layout id_base = mode == 0 ? without_dim(ids.layout, dst_shape, dim)
                                   : Layout(dst_shape, std::vector<int64_t>(dst_shape.rank(), 0),
                                            ids.layout.start_offset);
  const int64_t ids_stride = mode == 0 ? ids.layout.strides[dim] : ids.layout.strides[0];
  int64_t inner = 1;
  for (size_t i = dim + 1; i < dst_shape.rank(); i++) inner *= dst_shape[i];
  const Layout out = Layout::contiguous(dst_shape);
  const DType id_dt = ids.storage.dtype();
  const Pipeline& pipeline = indexed_kernel(KernelFamily::Scatter, "scatter", dt, id_dt);
  BufferRef record = errors_->acquire();
  const uint64_t submission = launch_strided(
      pipeline, {{&buffer(src.storage), &base}, {&buffer(ids.storage), &id_base}},
      {&buffer(dst), &out}, false,
      {PushParam::u32(to_index(src.layout.strides[dim], "stride")),
       PushParam::u32(to_index(ids_stride, "stride")),
       PushParam::u32(to_index(src.layout.shape[dim], "dim")),
       PushParam::u32(to_index(inner, "dim")), PushParam::u32(to_index(dst_shape[dim], "dim")),
       PushParam::u32(mode == 0 ? WICK_ERROR_SCATTER_ADD : WICK_ERROR_INDEX_ADD)},
      record.get());
  refuse_device_errors(std::move(record), submission, op);
}

void GpuDevice::index_select(View src, View ids, size_t dim, Storage& dst) {
  launch_index(0, "index_select", src, ids, dim, dst);
}
void GpuDevice::gather(View src, View ids, size_t dim, Storage& dst) {
  launch_index(1, "gather", src, ids, dim, dst);
}
void GpuDevice::scatter_add(Storage& dst, const Shape& dst_shape, View ids, View src, size_t dim) {
  launch_scatter(0, "scatter_add", dst, dst_shape, ids, src, dim);
}
void GpuDevice::index_add(Storage& dst, const Shape& dst_shape, View ids, View src, size_t dim) {
  launch_scatter(1, "index_add", dst, dst_shape, ids, src, dim);
}

}  // namespace wick::gpu
