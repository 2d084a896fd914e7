// CUDA GEMM: f32 (TF32 only when asked for), f16 and bf16 (f32 sums), f64 through cuBLASLt, with
// every operand read in place through its strides where cuBLASLt can express them: one unit
// stride per matrix and a leading dimension at least its rows, the batch dims collapsed (the
// innermost one batched by cuBLASLt, outer ones in a loop of calls), broadcast batch dims stride
// 0. Anything else (integer dtypes, a matrix with no unit stride, overlapping rows) goes to the
// shared SIMT kernel (GpuDevice::matmul), which reads any strides: a slower answer, never a
// wrong one.
#include <numeric>

#include "core/strided_plan.h"
#include "cuda/cu_device.h"

namespace wick::cuda {

using backend::Storage;
using backend::View;

namespace {

// The alignment in bytes (at most 16) of every address base + i * step.
uint32_t alignment(uint64_t base, uint64_t step) {
  const uint64_t g = std::gcd(base, step);
  uint32_t a = 1;
  while (a < 16 && (g == 0 || g % (a * 2) == 0)) a *= 2;
  return a;
}

}  // namespace

void CudaDevice::matmul(View a, View b, const backend::MatmulDims& d, Storage& dst) {
  if (lt_ && matmul_lt(a, b, d, dst)) return;
  GpuDevice::matmul(a, b, d, dst);
}

bool CudaDevice::matmul_lt(View a, View b, const backend::MatmulDims& d, Storage& dst) {
  const DType dt = a.storage.dtype();
  if (dt != DType::F32 && dt != DType::F16 && dt != DType::BF16 && dt != DType::F64) return false;
  const size_t r = a.layout.rank();
  LtProduct p;
  p.dtype = dt;
  p.m = d.m;
  p.n = d.n;
  p.k = d.k;
  p.tf32 = options_.tf32 && dt == DType::F32;
  if (!lt_operand(d.k, d.n, b.layout.strides[r - 2], b.layout.strides[r - 1], p.b_transposed,
                  p.ld_b) ||
      !lt_operand(d.m, d.k, a.layout.strides[r - 2], a.layout.strides[r - 1], p.a_transposed,
                  p.ld_a))
    return false;

  // Batch dims of both operands and the contiguous output, collapsed together: the innermost
  // collapsed dim is cuBLASLt's batch, the others are walked here.
  const auto plan = gpu::batch_plan(a, b, d);
  const size_t inner = plan.shape.size() - 1;
  if (plan.shape[inner] > INT32_MAX) return false;
  p.batch = static_cast<int32_t>(plan.shape[inner]);
  p.batch_a = plan.strides[0][inner];
  p.batch_b = plan.strides[1][inner];
  if (p.batch == 1) p.batch_a = p.batch_b = 0;

  const size_t size = dtype_size(dt);
  const CUdeviceptr base_a = CuDriver::address(buffer(a.storage).alloc.handle) +
                             static_cast<uint64_t>(a.layout.start_offset) * size;
  const CUdeviceptr base_b = CuDriver::address(buffer(b.storage).alloc.handle) +
                             static_cast<uint64_t>(b.layout.start_offset) * size;
  const CUdeviceptr base_c = CuDriver::address(buffer(dst).alloc.handle);
  // Offsets of every outer batch index (elements).
  std::vector<std::array<int64_t, 3>> outer(1, {0, 0, 0});
  for (size_t dim = 0; dim < inner; dim++) {
    std::vector<std::array<int64_t, 3>> next;
    for (const auto& o : outer)
      for (int64_t i = 0; i < plan.shape[dim]; i++)
        next.push_back({o[0] + i * plan.strides[0][dim], o[1] + i * plan.strides[1][dim],
                        o[2] + i * plan.strides[2][dim]});
    outer = std::move(next);
  }
  // Every call's addresses share the alignment of the first call's and of the steps between.
  uint64_t step_a = static_cast<uint64_t>(p.batch_a) * size;
  uint64_t step_b = static_cast<uint64_t>(p.batch_b) * size;
  for (const auto& o : outer) {
    step_a = std::gcd(step_a, static_cast<uint64_t>(o[0]) * size);
    step_b = std::gcd(step_b, static_cast<uint64_t>(o[1]) * size);
  }
  p.align_a = alignment(base_a, step_a);
  p.align_b = alignment(base_b, step_b);
  p.align_c = alignment(base_c, static_cast<uint64_t>(d.m * d.n) * size);
  if (!lt_->supports(p)) return false;

  if (!workspace_) workspace_ = device_pool_->acquire(LtGemm::kWorkspaceBytes);
  gpu::Buffer& ws = *workspace_;
  const gpu::BufferAccess args[] = {{&buffer(a.storage), gpu::Access::Read},
                                    {&buffer(b.storage), gpu::Access::Read},
                                    {&buffer(dst), gpu::Access::Write},
                                    {&ws, gpu::Access::ReadWrite}};
  queue_->record([&](gpu::CommandQueue::Recorder& rec) {
    rec.external(args, [&] {
      const CUstream stream = cu_driver_.stream();
      for (const auto& o : outer)
        lt_->run(p, base_a + static_cast<uint64_t>(o[0]) * size,
                 base_b + static_cast<uint64_t>(o[1]) * size,
                 base_c + static_cast<uint64_t>(o[2]) * size, CuDriver::address(ws.alloc.handle),
                 ws.alloc.size, stream);
    });
  });
  cublas_matmuls_.fetch_add(1, std::memory_order_relaxed);
  coop_matmuls_.fetch_add(dt == DType::F32 && !p.tf32 ? 0 : 1, std::memory_order_relaxed);
  return true;
}

}  // namespace wick::cuda
