// GPU reductions, softmax, norms and rope. Reductions and row ops see the input as (outer,
// inner) index pairs (include/rows.glsl): strided inputs are read in place; only when a group
// of dims cannot be collapsed to GROUP_RANK dims is the input first copied with its inner dims
// last.
#include <algorithm>
#include <numeric>

#include "core/strided_plan.h"
#include "gpu/gpu_device.h"
#include "gpu/kernel_params.h"

namespace wick::gpu {

using backend::ReduceOp;
using backend::Storage;
using backend::View;

namespace {

constexpr size_t kGroupRank = WICK_GROUP_RANK;
constexpr int64_t kPerGroupMin = 128;  // inner sizes from which a workgroup shares one output
// Rows from which a few (at most kWideRowsMax) get a workgroup of kWideWorkgroup threads each.
constexpr int64_t kWideRowMin = 16384, kWideRowsMax = 16;
constexpr uint32_t kWideWorkgroup = 1024;
// A split row's elements per workgroup: SPAN in reduce.cu (8 loads per thread of kWorkgroupSize).
constexpr int64_t kSplitSpan = 8 * kWorkgroupSize;
constexpr int64_t kMaxSortRow = 2048;  // MAX_SORT in sort.comp

// One group of dims (outer or inner) collapsed: shape and strides, innermost last.
struct Group {
  std::vector<int64_t> shape, strides;
  int64_t numel = 1;
};

Group collapse(const Layout& l, const std::vector<size_t>& dims) {
  std::vector<int64_t> sh, st;
  for (size_t d : dims) {
    sh.push_back(l.shape[d]);
    st.push_back(l.strides[d]);
  }
  Group g;
  if (sh.empty()) return g;
  const Layout sub(Shape(sh), st, 0);
  const auto plan = make_plan<1>(sub.shape, {&sub});
  g.shape = plan.shape.to_vector();
  g.strides = plan.strides[0].to_vector();
  g.numel = plan.numel;
  return g;
}

}  // namespace

void GpuDevice::launch_rows(const Pipeline& pipeline, View x, const std::vector<size_t>& inner,
                            Buffer& out, bool per_group, std::initializer_list<BoundView> extras,
                            std::initializer_list<PushParam> params, uint64_t groups_per_row) {
  const Layout& l = x.layout;
  std::vector<size_t> outer;
  for (size_t d = 0; d < l.rank(); d++)
    if (!std::binary_search(inner.begin(), inner.end(), d)) outer.push_back(d);
  Group og = collapse(l, outer), ig = collapse(l, inner);
  BufferRef tmp;  // a packed copy when the groups do not collapse far enough
  Buffer* in = &buffer(x.storage);
  int64_t offset = l.start_offset;
  if (og.shape.size() > kGroupRank || ig.shape.size() > kGroupRank) {
    std::vector<int64_t> perm(outer.begin(), outer.end());
    perm.insert(perm.end(), inner.begin(), inner.end());
    std::vector<int64_t> sh, st;
    for (int64_t d : perm) {
      sh.push_back(l.shape[static_cast<size_t>(d)]);
      st.push_back(l.strides[static_cast<size_t>(d)]);
    }
    const Layout permuted(Shape(sh), st, l.start_offset), packed = Layout::contiguous(Shape(sh));
    tmp = device_pool_->acquire(static_cast<size_t>(l.numel()) * dtype_size(x.storage.dtype()));
    launch_strided(copy_kernel(x.storage.dtype(), x.storage.dtype()), {{in, &permuted}},
                   {tmp.get(), &packed}, true);
    std::vector<size_t> o2(outer.size()), i2(inner.size());
    std::iota(o2.begin(), o2.end(), 0);
    std::iota(i2.begin(), i2.end(), outer.size());
    og = collapse(packed, o2);
    ig = collapse(packed, i2);
    in = tmp.get();
    offset = 0;
  }
  PushConstants pc;
  pc.u32(to_index(og.numel, "row count"));
  pc.u32(to_index(ig.numel, "row length"));
  pc.u32(static_cast<uint32_t>(og.shape.size()));
  pc.u32(static_cast<uint32_t>(ig.shape.size()));
  for (const Group* g : {&og, &ig}) {
    for (size_t d = 0; d < kGroupRank; d++)
      pc.u32(d < g->shape.size() ? to_index(g->shape[d], "dim") : 1);
    for (size_t d = 0; d < kGroupRank; d++)
      pc.u32(d < g->shape.size() ? to_index(g->strides[d], "stride") : 0);
  }
  pc.u32(to_index(offset, "offset"));
  pc.u32(0);  // output offset
  for (const PushParam& p : params) pc.param(p);

  std::vector<BufferAccess> args{{in, Access::Read}};
  for (const BoundView& e : extras) args.push_back({e.buffer, e.access});
  args.push_back({&out, Access::Write});
  const auto groups = per_group
                          ? grid(static_cast<uint64_t>(og.numel) * groups_per_row * kWorkgroupSize)
                          : grid(static_cast<uint64_t>(og.numel));
  queue_->record(
      [&](CommandQueue::Recorder& r) { r.dispatch(pipeline, args, pc.words(), groups); });
}

void GpuDevice::reduce(ReduceOp op, View x, const std::vector<size_t>& dims, Storage& dst) {
  const DType dt = x.storage.dtype();
  const char* name = backend::reduce_op_name(op);
  require(dt, name);
  int64_t n_inner = 1;
  for (size_t d : dims) n_inner *= x.layout.shape[d];
  const bool per_group = n_inner >= kPerGroupMin;
  const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  const auto op_code = static_cast<uint32_t>(op), group = per_group ? 1u : 0u;
  // A few long rows (decode's argmax over the vocabulary) leave most of the GPU idle and one
  // workgroup waiting on memory load after load: max/min and the arg ops split each row over
  // workgroups of kSplitSpan elements (exact in any order; the last one merges); sums, whose
  // order is fixed, get the widest workgroup there is.
  const int64_t n_outer = x.layout.numel() / std::max<int64_t>(n_inner, 1);
  const bool few_long = per_group && n_inner >= kWideRowMin && n_outer <= kWideRowsMax;
  const bool split = few_long && op != ReduceOp::Sum && op != ReduceOp::Mean;
  const uint32_t threads = few_long && !split && device_caps().max_workgroup_size >= kWideWorkgroup
                               ? kWideWorkgroup
                               : kWorkgroupSize;
  const Pipeline& pipeline =
      kernel(KernelFamily::Reduce,
             {op_code, group, static_cast<uint32_t>(dt), threads, split ? 1u : 0u}, [&] {
               Defines d;
               add_dtype(d, "", dt);
               d.emplace_back("OUT_INDEX", arg ? "1" : "0");
               if (split) d.emplace_back("SPLIT_ROWS", "1");
               return key_for("reduce", std::move(d), {op_code, group}, threads);
             });
  if (!split) {
    launch_rows(pipeline, x, dims, buffer(dst), per_group);
    return;
  }
  const int64_t parts = (n_inner + kSplitSpan - 1) / kSplitSpan;
  // Each part's value (8 bytes hold any compute type) and index.
  BufferRef values = device_pool_->acquire(static_cast<size_t>(n_outer * parts) * 8);
  BufferRef indices = device_pool_->acquire(static_cast<size_t>(n_outer * parts) * 4);
  Buffer& counters = split_counters(static_cast<size_t>(n_outer));
  launch_rows(
      pipeline, x, dims, buffer(dst), true,
      {{values.get(), Access::Write}, {indices.get(), Access::Write}, {&counters, Access::Write}},
      {}, static_cast<uint64_t>(parts));
}

void GpuDevice::norm(uint32_t kind, const char* name, View x, const View* alpha, const View* beta,
                     double eps, Storage& dst) {
  const DType dt = x.storage.dtype();
  require(dt, name);
  const Pipeline& pipeline = op_kernel(KernelFamily::Norm, "norm", kind, dt, true);
  // Unused parameter slots bind x again (read-only), so every binding the kernel names is valid.
  const View a = alpha ? *alpha : x, b = beta ? *beta : x;
  auto stride_of = [](const View& v) { return v.layout.rank() ? v.layout.strides.back() : 0; };
  const PushParam::Kind pk = param_kind(dt);
  launch_rows(pipeline, x, {x.layout.rank() - 1}, buffer(dst), true,
              {{&buffer(a.storage)}, {&buffer(b.storage)}},
              {PushParam::u32(to_index(a.layout.start_offset, "offset")),
               PushParam::u32(to_index(stride_of(a), "stride")),
               PushParam::u32(to_index(b.layout.start_offset, "offset")),
               PushParam::u32(to_index(stride_of(b), "stride")),
               {pk, eps}});
}

void GpuDevice::softmax_last_dim(View x, Storage& dst) {
  norm(0, "softmax", x, nullptr, nullptr, 0, dst);
}
void GpuDevice::log_softmax_last_dim(View x, Storage& dst) {
  norm(1, "log_softmax", x, nullptr, nullptr, 0, dst);
}
void GpuDevice::rms_norm(View x, View alpha, double eps, Storage& dst) {
  norm(2, "rms_norm", x, &alpha, nullptr, eps, dst);
}
void GpuDevice::layer_norm(View x, View alpha, View beta, double eps, Storage& dst) {
  norm(3, "layer_norm", x, &alpha, &beta, eps, dst);
}

void GpuDevice::rope(View x, View cos, View sin, bool interleaved, Storage& dst) {
  const DType dt = x.storage.dtype();
  const char* name = interleaved ? "rope_i" : "rope";
  require(dt, name);
  WICK_ASSERT(x.layout.rank() == 4 && cos.layout.rank() == 3 && sin.layout.rank() == 3);
  RopeParams pc{};
  pc.numel = to_index(x.layout.numel(), "element count");
  for (size_t d = 0; d < 4; d++) {
    pc.shape[d] = to_index(x.layout.shape[d], "dim");
    pc.x_strides[d] = to_index(x.layout.strides[d], "stride");
  }
  pc.x_offset = to_index(x.layout.start_offset, "offset");
  for (size_t d = 0; d < 3; d++) {
    pc.c_strides[d] = to_index(cos.layout.strides[d], "stride");
    pc.s_strides[d] = to_index(sin.layout.strides[d], "stride");
  }
  pc.c_offset = to_index(cos.layout.start_offset, "offset");
  pc.s_offset = to_index(sin.layout.start_offset, "offset");
  const Pipeline& pipeline =
      op_kernel(KernelFamily::Rope, "rope", interleaved ? 1u : 0u, dt, false);
  const BufferAccess args[] = {{&buffer(x.storage), Access::Read},
                               {&buffer(cos.storage), Access::Read},
                               {&buffer(sin.storage), Access::Read},
                               {&buffer(dst), Access::Write}};
  const auto groups = grid(static_cast<uint64_t>(x.layout.numel()));
  queue_->record(
      [&](CommandQueue::Recorder& r) { r.dispatch(pipeline, args, param_words(pc), groups); });
}

void GpuDevice::arg_sort_last_dim(View x, bool ascending, Storage& dst) {
  const DType dt = x.storage.dtype();
  require(dt, "arg_sort_last_dim");
  const int64_t n = x.layout.shape[x.layout.rank() - 1];
  if (n > kMaxSortRow)
    fail(ErrorKind::Unsupported, "arg_sort_last_dim", "rows of ", n, " elements (shape ",
         x.layout.shape, ") exceed the ", kMaxSortRow, " that ", name(), " sorts in one workgroup");
  const Pipeline& pipeline = op_kernel(KernelFamily::Sort, "sort", ascending ? 0u : 1u, dt, false);
  launch_rows(pipeline, x, {x.layout.rank() - 1}, buffer(dst), true);
}

}  // namespace wick::gpu
