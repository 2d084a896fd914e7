// CPU memory: allocation, host transfers, strided copies, casts, fill and random numbers.
#include <cmath>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/sysinfo.h>
#endif

#include "core/convert.h"
#include "cpu/cpu_device.h"
#include "cpu/strided.h"

namespace wick::cpu {

using backend::check_span;
using backend::Storage;
using backend::StoragePtr;
using backend::View;

namespace {

constexpr size_t kAlign = 64;

// Small blocks come from plain malloc (16-byte aligned, and much cheaper for the tiny tensors
// of per-token work); larger ones are cache-line aligned for the vector kernels.
constexpr size_t kSmallBlock = 256;

// The host's memory plus swap in bytes (0 where unknown). No allocation can get more, and
// Linux's default overcommit refuses a larger one too; asking malloc anyway can abort a
// sanitizer build, so such requests never reach it.
uint64_t host_memory_bytes() {
  static const uint64_t bytes = [] {
#if defined(__linux__)
    struct sysinfo si {};
    if (sysinfo(&si) == 0) return (static_cast<uint64_t>(si.totalram) + si.totalswap) * si.mem_unit;
#endif
    return uint64_t{0};
  }();
  return bytes;
}

void* host_alloc(size_t bytes) {
  const uint64_t limit = host_memory_bytes();
  if (limit && bytes > limit)
    fail(ErrorKind::OutOfMemory, "alloc", bytes, " bytes asked for, more than the host's ", limit,
         " bytes of memory and swap");
  void* p = bytes <= kSmallBlock
                ? std::malloc(std::max<size_t>(bytes, 1))
                : std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  if (!p)
    fail(ErrorKind::OutOfMemory, "alloc", "out of host memory allocating ", bytes, " bytes",
         limit ? detail::concat(" (the host has ", limit, " bytes of memory and swap)") : "");
  return p;
}

// dst (through dst_layout, dtype D) <- src (through src layout, dtype S), same shape.
void strided_convert(View src, std::byte* dst, DType dst_dt, const Layout& dst_layout) {
  const auto plan = make_plan<2>(src.layout.shape, {&src.layout, &dst_layout});
  dispatch_dtype(src.storage.dtype(), [&](auto s0) {
    using S = decltype(s0);
    const S* s = data_of<S>(src);
    dispatch_dtype(dst_dt, [&](auto d0) {
      using D = decltype(d0);
      D* d = reinterpret_cast<D*>(dst);
      visit(plan,
            [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
              convert_row<S, D>(s + o[0], st[0], d + o[1], st[1], n);
            });
    });
  });
}

}  // namespace

CpuDevice::CpuDevice() : rng_(299792458) {}

StoragePtr CpuDevice::wrap(DType dt, size_t numel, std::shared_ptr<void> owner, std::byte* data) {
  return std::make_shared<CpuStorage>(this, dt, numel, std::move(owner), data);
}

StoragePtr CpuDevice::alloc(DType dt, size_t numel) {
  size_t bytes;
  if (__builtin_mul_overflow(numel, dtype_size(dt), &bytes) || bytes >= size_t{kSizeLimit})
    fail(ErrorKind::OutOfMemory, "alloc", numel, " elements of ", dt,
         " pass wick's size limit of 2^62 bytes");
  auto* data = static_cast<std::byte*>(host_alloc(bytes));
  if (backend::poison_allocations()) std::memset(data, 0xff, bytes);
  return std::make_shared<CpuStorage>(this, dt, numel, data);
}

StoragePtr CpuDevice::from_host(DType dt, const void* data, size_t numel) {
  auto s = alloc(dt, numel);
  if (numel) std::memcpy(cpu_storage(*s).data(), data, numel * dtype_size(dt));
  return s;
}

void CpuDevice::to_host(View src, void* dst, DType dst_dt) {
  check_span(src.layout, src.storage, "to_host");
  strided_convert(src, static_cast<std::byte*>(dst), dst_dt, Layout::contiguous(src.layout.shape));
}

void CpuDevice::cast(View x, Storage& dst) {
  check_span(x.layout, x.storage, "to_dtype");
  strided_convert(x, cpu_storage(dst).data(), dst.dtype(), Layout::contiguous(x.layout.shape));
}

void CpuDevice::copy_strided(View src, Storage& dst, const Layout& dst_layout) {
  check_span(src.layout, src.storage, "copy");
  check_span(dst_layout, dst, "copy");
  WICK_ASSERT(src.storage.dtype() == dst.dtype());
  strided_convert(src, cpu_storage(dst).data(), dst.dtype(), dst_layout);
}

void CpuDevice::fill(Storage& dst, const Layout& dst_layout, double value) {
  check_span(dst_layout, dst, "fill");
  const auto plan = make_plan<1>(dst_layout.shape, {&dst_layout});
  dispatch_dtype(dst.dtype(), [&](auto d0) {
    using D = decltype(d0);
    const D v = from_f64<D>(value);
    D* d = cpu_storage(dst).as<D>();
    visit(plan, [&](const std::array<int64_t, 1>& o, int64_t n, const std::array<int64_t, 1>& st) {
      D* p = d + o[0];
      if (st[0] == 1)
        for (int64_t j = 0; j < n; j++) p[j] = v;
      else
        for (int64_t j = 0; j < n; j++) p[j * st[0]] = v;
    });
  });
}

void CpuDevice::set_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  rng_.seed(seed);
}

void CpuDevice::rand_uniform(Storage& dst, double lo, double hi) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  std::uniform_real_distribution<double> dist(lo, hi);
  dispatch_dtype(dst.dtype(), [&](auto d0) {
    using D = decltype(d0);
    D* d = cpu_storage(dst).as<D>();
    for (size_t i = 0; i < dst.numel(); i++) {
      D v = from_f64<D>(dist(rng_));
      if (to_f64(v) >= hi && hi > lo)
        v = from_f64<D>(lo);  // rounding to a narrow type can reach hi
      d[i] = v;
    }
  });
}

void CpuDevice::rand_normal(Storage& dst, double mean, double std) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  std::normal_distribution<double> dist(mean, std > 0 ? std : 1.0);
  dispatch_dtype(dst.dtype(), [&](auto d0) {
    using D = decltype(d0);
    D* d = cpu_storage(dst).as<D>();
    for (size_t i = 0; i < dst.numel(); i++) d[i] = from_f64<D>(std > 0 ? dist(rng_) : mean);
  });
}

}  // namespace wick::cpu
