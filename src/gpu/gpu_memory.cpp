// GPU memory ops: allocation, upload, read-back, strided copies, casts and fill.
//
// Read-back follows the seed's flush_and_wait_current protocol, race-free by construction: the
// gather of the view's elements into a host-visible staging buffer is recorded, then the commit
// under the queue's lock returns a submission that holds the gather (or follows it), and the
// thread waits for that submission only. Another thread's commit cannot make it wait too little.
#include <cstring>

#include "core/convert.h"
#include "gpu/gpu_device.h"

namespace wick::gpu {

using backend::check_span;
using backend::Storage;
using backend::StoragePtr;
using backend::View;

namespace {

// Byte offset and size of a contiguous layout's elements.
std::pair<uint64_t, uint64_t> byte_range(const Layout& l, DType dt) {
  const uint64_t size = dtype_size(dt);
  return {static_cast<uint64_t>(l.start_offset) * size, static_cast<uint64_t>(l.numel()) * size};
}

}  // namespace

const Pipeline& GpuDevice::copy_kernel(DType from, DType to) {
  return kernel(KernelFamily::Copy, {static_cast<uint32_t>(from), static_cast<uint32_t>(to)}, [&] {
    Defines d;
    add_dtype(d, "SRC_", from);
    add_dtype(d, "DST_", to);
    d.emplace_back("SAME_DT", from == to ? "1" : "0");
    return key_for("copy", std::move(d));
  });
}

GpuStorage::GpuStorage(GpuDevice* dev, DType dt, size_t numel, BufferRef buffer)
    : Storage(dev, dt, numel), gpu_(dev), buffer_(std::move(buffer)) {}

GpuStorage::~GpuStorage() {
  // Other code may still have work queued that uses the memory: let it finish before the pool
  // can hand the memory to another tensor.
  if (lent_.load(std::memory_order_relaxed)) gpu_->wait_for_other_work();
}

StoragePtr GpuDevice::alloc(DType dt, size_t numel) {
  require_storage(dt, "alloc");
  BufferRef buf = device_pool_->acquire(numel * dtype_size(dt));
  if (backend::poison_allocations()) {
    Buffer& b = *buf;
    queue_->record([&](CommandQueue::Recorder& r) { r.fill(b, 0, b.alloc.size, 0xffffffffu); });
  }
  return std::make_shared<GpuStorage>(this, dt, numel, std::move(buf));
}

void GpuDevice::upload(Buffer& dst, const void* data, size_t bytes) {
  if (bytes == 0) return;
  // Host writes go to a staging buffer no submission still uses, then a copy on the queue.
  BufferRef staging = host_pool_->acquire(bytes);
  std::memcpy(staging->alloc.mapped, data, bytes);
  queue_->record([&](CommandQueue::Recorder& r) { r.copy(*staging, 0, dst, 0, bytes); });
}

StoragePtr GpuDevice::from_host(DType dt, const void* data, size_t numel) {
  require_storage(dt, "from_data");
  BufferRef buf = device_pool_->acquire(numel * dtype_size(dt));
  upload(*buf, data, numel * dtype_size(dt));
  return std::make_shared<GpuStorage>(this, dt, numel, std::move(buf));
}

// ---- memory shared with other code -------------------------------------------------------------
//
// Adopted memory is a buffer outside the pool (BufferPool::adopt) whose owner goes back to the
// other code only once no submission uses it. Its values are what the other code's work left:
// that work is waited for first (Driver::wait_for_other_work). Handing out an address waits for
// wick's own work, and marks the storage lent, so that the pool reuses its memory only after
// the work the other code queued on it.

StoragePtr GpuDevice::adopt_memory(DType dt, size_t numel, std::byte* data,
                                   std::shared_ptr<void> owner) {
  require_storage(dt, "from_blob");
  const size_t bytes = numel * dtype_size(dt);
  const Allocation a = driver_->adopt(reinterpret_cast<uintptr_t>(data), bytes);
  BufferRef buf = device_pool_->adopt(a, std::move(owner));
  driver_->wait_for_other_work();
  return std::make_shared<GpuStorage>(this, dt, numel, std::move(buf));
}

std::byte* GpuDevice::memory_address(const Storage& s) {
  const auto& storage = static_cast<const GpuStorage&>(s);
  const uint64_t address = driver_->device_address(storage.buffer().alloc);
  if (address == 0) return nullptr;
  storage.lend();
  synchronize();
  return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(address));
}

void GpuDevice::wait_for_other_work() noexcept {
  try {
    if (!driver_->shutting_down()) driver_->wait_for_other_work();
  } catch (const Error&) {
    // A failed device has no work left to wait for.
  }
}

void GpuDevice::to_host(View src, void* dst, DType dst_dt) {
  check_span(src.layout, src.storage, "to_host");
  const DType dt = src.storage.dtype();
  const int64_t n = src.layout.numel();
  if (n == 0) return;
  const size_t bytes = static_cast<size_t>(n) * dtype_size(dt);
  BufferRef staging = host_pool_->acquire(bytes);
  const Layout packed = Layout::contiguous(src.layout.shape);
  Buffer& from = buffer(src.storage);
  uint64_t id;
  if (src.layout.is_contiguous()) {
    const auto [offset, size] = byte_range(src.layout, dt);
    id = queue_->record_and_submit(
        [&](CommandQueue::Recorder& r) { r.copy(from, offset, *staging, 0, size); });
  } else {
    // Gather the view's elements on the GPU.
    launch_strided(copy_kernel(dt, dt), {{&from, &src.layout}}, {staging.get(), &packed}, true);
    id = queue_->flush();
  }
  queue_->wait(id);
  // Convert on the host, with every backend's conversions (the CPU's, the reference semantics).
  convert_contiguous(staging->alloc.mapped, dt, dst, dst_dt, static_cast<size_t>(n));
  staging.reset();
  trim_pools();
  raise_device_errors();
}

void GpuDevice::cast(View x, Storage& dst) {
  check_span(x.layout, x.storage, "to_dtype");
  require_storage(x.storage.dtype(), "to_dtype");
  require_storage(dst.dtype(), "to_dtype");
  const Layout out = Layout::contiguous(x.layout.shape);
  launch_strided(copy_kernel(x.storage.dtype(), dst.dtype()), {{&buffer(x.storage), &x.layout}},
                 {&buffer(dst), &out}, true);
}

void GpuDevice::copy_strided(View src, Storage& dst, const Layout& dst_layout) {
  check_span(src.layout, src.storage, "copy");
  check_span(dst_layout, dst, "copy");
  WICK_ASSERT(src.storage.dtype() == dst.dtype());
  const DType dt = dst.dtype();
  if (src.layout.is_contiguous() && dst_layout.is_contiguous()) {
    const auto [from, size] = byte_range(src.layout, dt);
    const uint64_t to = byte_range(dst_layout, dt).first;
    Buffer &s = buffer(src.storage), &t = buffer(dst);
    queue_->record([&](CommandQueue::Recorder& r) { r.copy(s, from, t, to, size); });
    return;
  }
  launch_strided(copy_kernel(dt, dt), {{&buffer(src.storage), &src.layout}},
                 {&buffer(dst), &dst_layout}, true);
}

void GpuDevice::fill(Storage& dst, const Layout& dst_layout, double value) {
  check_span(dst_layout, dst, "fill");
  const DType dt = dst.dtype();
  require_storage(dt, "fill");
  // The element's bits, converted exactly as the CPU converts.
  uint64_t bits = 0;
  dispatch_dtype(dt, [&](auto z) {
    using T = decltype(z);
    const T v = from_f64<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  const size_t size = dtype_size(dt);
  // A contiguous range whose pattern repeats every 4 bytes is a plain buffer fill.
  uint32_t pattern = static_cast<uint32_t>(bits);
  bool repeats = true;
  if (size == 1) pattern = 0x01010101u * (pattern & 0xffu);
  if (size == 2) pattern = 0x00010001u * (pattern & 0xffffu);
  if (size == 8) repeats = (bits >> 32) == (bits & 0xffffffffu);
  const auto [offset, bytes] = byte_range(dst_layout, dt);
  if (repeats && dst_layout.is_contiguous() && offset % 4 == 0 && bytes % 4 == 0) {
    Buffer& b = buffer(dst);
    queue_->record([&](CommandQueue::Recorder& r) { r.fill(b, offset, bytes, pattern); });
    return;
  }
  const Pipeline& pipeline = kernel(KernelFamily::Fill, {static_cast<uint32_t>(size)}, [&] {
    return key_for("fill", {{"ELEM_BYTES", std::to_string(size)}});
  });
  launch_strided(pipeline, {}, {&buffer(dst), &dst_layout}, true,
                 {PushParam::u32(static_cast<uint32_t>(bits)),
                  PushParam::u32(static_cast<uint32_t>(bits >> 32))});
}

}  // namespace wick::gpu
