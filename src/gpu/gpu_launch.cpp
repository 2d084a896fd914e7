// What every GPU op shares: kernel keys with the device's capabilities, dtype checks, parameter
// blocks, and the strided launch (dim collapsing, rank peeling, grid shape).
#include <cstring>
#include <limits>

#include "core/strided_plan.h"
#include "gpu/gpu_device.h"

namespace wick::gpu {

using backend::Storage;

namespace {

constexpr size_t kMaxRank = WICK_MAX_RANK;
constexpr size_t kMaxOperands = 4;  // three inputs and the output (where_cond)

}  // namespace

uint32_t to_index(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<uint32_t>::max())
    fail(ErrorKind::Unsupported, "gpu", what, " ", v, " does not fit the kernels' 32-bit indices");
  return static_cast<uint32_t>(v);
}

void PushConstants::u32(uint32_t v) {
  WICK_ASSERT(n_ < w_.size());
  w_[n_++] = v;
}

void PushConstants::param(const PushParam& p) {
  switch (p.kind) {
    case PushParam::U32:
      u32(static_cast<uint32_t>(p.value));
      break;
    case PushParam::F32: {
      const float f = static_cast<float>(p.value);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      u32(bits);
      break;
    }
    case PushParam::F64: {
      if (n_ % 2) u32(0);  // std430: doubles are 8-byte aligned
      uint32_t bits[2];
      std::memcpy(bits, &p.value, 8);
      u32(bits[0]);
      u32(bits[1]);
      break;
    }
  }
}

std::array<uint32_t, 3> GpuDevice::grid(uint64_t n) const {
  const uint64_t groups = std::max<uint64_t>((n + kWorkgroupSize - 1) / kWorkgroupSize, 1);
  const uint64_t x = std::min<uint64_t>(groups, device_caps().max_group_count_x);
  return {static_cast<uint32_t>(x), static_cast<uint32_t>((groups + x - 1) / x), 1};
}

Buffer& GpuDevice::buffer(const Storage& s) {
  return static_cast<const GpuStorage&>(s).buffer();
}

void GpuDevice::require(DType dt, const char* op) const {
  require_storage(dt, op);
  if (dt == DType::I32)
    fail(ErrorKind::Unsupported, op, "no ", name(),
         " kernel takes i32 yet (it stores, copies and converts it): convert with to_dtype or run "
         "on the cpu");
}

void GpuDevice::require_storage(DType dt, const char* op) const {
  const DeviceCaps& c = device_caps();
  const char* missing = nullptr;
  if ((dt == DType::F16 || dt == DType::BF16) && !c.storage16) missing = "16-bit storage buffers";
  if (dt == DType::U8 && !c.storage8) missing = "8-bit storage buffers";
  if (dt == DType::F64 && !c.float64) missing = "64-bit floats (shaderFloat64)";
  if (dt == DType::I64 && !c.int64) missing = "64-bit integers (shaderInt64)";
  if (missing)
    fail(ErrorKind::Unsupported, op, dt, " needs ", missing, ", which ", c.name, " lacks");
}

void GpuDevice::add_dtype(Defines& defines, const std::string& prefix, DType dt) {
  const char* kind = dt == DType::F64   ? "1"
                     : dt == DType::I64 ? "3"
                     : dt == DType::I32 ? "4"
                     : is_float(dt)     ? "0"
                                        : "2";
  defines.emplace_back(prefix + "DT", dtype_name(dt));
  defines.emplace_back(prefix + "DT_KIND", kind);
}

PushParam::Kind GpuDevice::param_kind(DType dt) const {
  if (dt == DType::F64) return PushParam::F64;
  if (is_float(dt)) return PushParam::F32;
  return device_caps().float64 ? PushParam::F64 : PushParam::F32;  // integers: as precise as we can
}

std::string GpuDevice::param_type(DType dt) const {
  return param_kind(dt) == PushParam::F64 ? "double" : "float";
}

KernelKey GpuDevice::key_for(const char* source, Defines defines, std::vector<uint32_t> constants,
                             uint32_t block) const {
  driver_->add_capability_defines(defines);
  defines.emplace_back("WG_SIZE", std::to_string(block));
  KernelKey k;
  k.source = std::string(source) + driver_->language().extension;
  k.defines = std::move(defines);
  k.constants = std::move(constants);
  k.block = block;
  return k;
}

uint64_t GpuDevice::launch_strided(const Pipeline& pipeline, std::initializer_list<Operand> inputs,
                                   Operand out, bool out_strided,
                                   std::initializer_list<PushParam> params, Buffer* error_record) {
  WICK_ASSERT(inputs.size() + 1 <= kMaxOperands);
  const Shape& shape = out.layout->shape;
  // Collapse dims jointly over all operands; unused slots repeat the output, which merges freely.
  std::array<const Layout*, kMaxOperands> layouts;
  layouts.fill(out.layout);
  size_t n_ops = 0;
  for (const Operand& in : inputs) layouts[n_ops++] = in.layout;
  const size_t out_slot = n_ops++;
  const auto plan = make_plan<kMaxOperands>(shape, layouts);
  to_index(plan.numel, "element count");
  for (size_t k = 0; k < n_ops; k++) {
    to_index(plan.offsets[k], "offset");
    for (int64_t s : plan.strides[k]) to_index(s, "stride");
  }
  const size_t n_strided = out_strided ? n_ops : n_ops - 1;

  // Dims beyond the kernels' MAX_RANK are walked here, one dispatch per outer index.
  const size_t rank = plan.shape.size();
  const size_t outer = rank > kMaxRank ? rank - kMaxRank : 0;
  int64_t outer_count = 1, inner_numel = 1;
  for (size_t d = 0; d < rank; d++) (d < outer ? outer_count : inner_numel) *= plan.shape[d];
  // Push constants of the dispatch for outer index o at multi-index idx.
  auto push_for = [&](int64_t o, const std::vector<int64_t>& idx) {
    PushConstants pc;
    pc.u32(static_cast<uint32_t>(inner_numel));
    pc.u32(static_cast<uint32_t>(rank - outer));
    for (size_t d = 0; d < kMaxRank; d++)
      pc.u32(outer + d < rank ? static_cast<uint32_t>(plan.shape[outer + d]) : 1);
    for (size_t k = 0; k < n_ops; k++) {
      int64_t off = plan.offsets[k];
      for (size_t d = 0; d < outer; d++) off += idx[d] * plan.strides[k][d];
      // A contiguous output advances by the inner element count per outer index.
      if (k == out_slot && !out_strided) off = plan.offsets[k] + o * inner_numel;
      pc.u32(to_index(off, "offset"));
    }
    for (size_t k = 0; k < n_strided; k++)
      for (size_t d = 0; d < kMaxRank; d++)
        pc.u32(outer + d < rank ? static_cast<uint32_t>(plan.strides[k][outer + d]) : 0);
    for (const PushParam& p : params) pc.param(p);
    return pc;
  };
  std::array<BufferAccess, kMaxOperands + 1> args;
  size_t n_args = 0;
  for (const Operand& in : inputs) args[n_args++] = {in.buffer, Access::Read};
  args[n_args++] = {out.buffer, Access::Write};
  if (error_record) args[n_args++] = {error_record, Access::Unordered};
  const auto groups = grid(static_cast<uint64_t>(inner_numel));
  const std::span<const BufferAccess> bound(args.data(), n_args);
  if (outer == 0) {  // the common case: one dispatch, nothing on the heap
    const PushConstants pc = push_for(0, {});
    return queue_->record(
        [&](CommandQueue::Recorder& r) { r.dispatch(pipeline, bound, pc.words(), groups); });
  }
  std::vector<PushConstants> pushes;
  std::vector<int64_t> idx(outer, 0);
  for (int64_t o = 0; o < outer_count; o++) {
    pushes.push_back(push_for(o, idx));
    for (size_t d = outer; d-- > 0;) {
      if (++idx[d] < plan.shape[d]) break;
      idx[d] = 0;
    }
  }
  return queue_->record([&](CommandQueue::Recorder& r) {
    for (const PushConstants& pc : pushes) r.dispatch(pipeline, bound, pc.words(), groups);
  });
}

}  // namespace wick::gpu
