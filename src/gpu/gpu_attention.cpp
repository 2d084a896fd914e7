// GPU decode attention: rope_kv_cache (one dispatch of rope_kv) and attention_cached
// (flash-decoding in one dispatch: a workgroup per split of a row's keys, the row's last one to
// finish combining the splits). Both read pos on the device; a position beyond the cache is
// found by the kernels, which then write nothing out of bounds, and is raised from the op's error
// record at this thread's next wait (the ops themselves never wait).
#include <bit>
#include <string>

#include "gpu/cache_params.h"
#include "gpu/gpu_device.h"
#include "gpu/kernel_params.h"

namespace wick::gpu {

using backend::CacheView;
using backend::RopeTableViews;
using backend::Storage;
using backend::View;

namespace {

// attention_cached's workgroup (and the keys a split's step scores) for prompts; decode's is
// GpuOptions::attention_block.
constexpr uint32_t kPromptAttentionBlock = 128;
// Workgroups the op aims for: the keys are split until the rows fill about this many. Decode
// has few rows (9 heads for SmolLM2-135M): there every chunk of keys gets its own workgroup, since
// a workgroup's chunks run one after the other (a split of two chunks at a few hundred keys took
// as long as the rest of a layer on the H200); splits past the position return at once.
constexpr int64_t kAttentionGroups = 1024;

void put4(uint32_t (&dst)[4], const Layout& l) {
  for (size_t i = 0; i < 4; i++) dst[i] = to_index(l.strides[i], "stride");
}

}  // namespace

void GpuDevice::rope_kv_cache(View q, View k, View v, const CacheView& k_cache,
                              const CacheView& v_cache, const RopeTableViews& tables, View pos,
                              const View* slots, bool interleaved, Storage& q_out) {
  const char* op = "rope_kv_cache";
  const DType dt = q.storage.dtype(), kv = k_cache.storage.dtype();
  require(dt, op);
  require(kv, op);
  const Layout &lq = q.layout, &lk = k.layout, &lv = v.layout;
  WICK_ASSERT(lq.rank() == 4 && lk.rank() == 4 && lv.shape == lk.shape);
  check_span(k_cache.layout, k_cache.storage, op);
  check_span(v_cache.layout, v_cache.storage, op);
  const int64_t t = lq.shape[2], half = lq.shape[3] / 2, max_seq = k_cache.layout.shape[2];
  RopeKvParams pc{};
  pc.b = to_index(lq.shape[0], "dim");
  pc.h = to_index(lq.shape[1], "dim");
  pc.kvh = to_index(lk.shape[1], "dim");
  pc.t = to_index(t, "dim");
  pc.d = to_index(lq.shape[3], "dim");
  pc.max_seq = to_index(max_seq, "dim");
  put4(pc.q_strides, lq);
  put4(pc.k_strides, lk);
  put4(pc.v_strides, lv);
  pc.q_offset = to_index(lq.start_offset, "offset");
  pc.k_offset = to_index(lk.start_offset, "offset");
  pc.v_offset = to_index(lv.start_offset, "offset");
  pc.kc_offset = to_index(k_cache.layout.start_offset, "offset");
  pc.vc_offset = to_index(v_cache.layout.start_offset, "offset");
  put_items(pc, pos, slots, k_cache.layout.shape[0]);
  for (const Layout* l : {&lq, &lk, &lv, &k_cache.layout, &v_cache.layout})
    check_reach(*l, "element offset");
  // The kernel reads tables with a unit stride along d/2 and one row stride per pair (cos_q and
  // sin_q; cos_k and sin_k): its parameter block is full. A pair with other strides is copied
  // first, its first max_seq rows.
  const View* views[4] = {&tables.cos_q, &tables.sin_q, &tables.cos_k, &tables.sin_k};
  backend::StoragePtr copies[4];
  const Storage* table_storage[4];
  const Shape used{max_seq, half};
  for (size_t pair = 0; pair < 4; pair += 2) {
    const Layout &l0 = views[pair]->layout, &l1 = views[pair + 1]->layout;
    const bool direct = tables_in_place(l0, l1, half, max_seq);
    pc.table_rows[pair / 2] = to_index(direct ? l0.strides[0] : half, "stride");
    for (size_t i = pair; i < pair + 2; i++) {
      const Layout& l = views[i]->layout;
      table_storage[i] = &views[i]->storage;
      if (direct) {
        check_reach(Layout(used, l.strides, l.start_offset), "element offset");
        pc.table_offsets[i] = to_index(l.start_offset, "offset");
        continue;
      }
      copies[i] = alloc(dt, static_cast<size_t>(max_seq * half));
      const Layout rows(used, l.strides, l.start_offset);
      copy_strided({views[i]->storage, rows}, *copies[i], Layout::contiguous(used));
      table_storage[i] = copies[i].get();
      pc.table_offsets[i] = 0;
    }
  }
  const int64_t threads = lq.numel() + 2 * lk.numel();
  to_index(threads, "element count");
  const uint32_t mode = interleaved ? 1u : 0u, each = per_item(pos) ? 1u : 0u;
  const Pipeline& pipeline =
      kernel(KernelFamily::RopeKv,
             {mode, each, static_cast<uint32_t>(dt), static_cast<uint32_t>(kv)}, [&] {
               Defines defines;
               add_dtype(defines, "", dt);
               add_dtype(defines, "KV_", kv);                       // the caches' dtype
               if (kv == dt) defines.emplace_back("KV_SAME", "1");  // v copied bit for bit
               return key_for("rope_kv", std::move(defines), {mode, each});
             });
  BufferRef record = errors_->acquire();
  const BufferAccess args[] = {{&buffer(q.storage), Access::Read},
                               {&buffer(k.storage), Access::Read},
                               {&buffer(v.storage), Access::Read},
                               {&buffer(*table_storage[0]), Access::Read},
                               {&buffer(*table_storage[1]), Access::Read},
                               {&buffer(*table_storage[2]), Access::Read},
                               {&buffer(*table_storage[3]), Access::Read},
                               {&buffer(pos.storage), Access::Read},
                               {&buffer(q_out), Access::Write},
                               {&buffer(k_cache.storage), Access::Write},
                               {&buffer(v_cache.storage), Access::Write},
                               {record.get(), Access::Unordered},
                               {&buffer(slots ? slots->storage : pos.storage), Access::Read}};
  const auto groups = grid(static_cast<uint64_t>(threads));
  const uint64_t submission = queue_->record(
      [&](CommandQueue::Recorder& r) { r.dispatch(pipeline, args, param_words(pc), groups); });
  errors_->add(std::move(record), submission, op, std::to_string(t) + " tokens");
}

void GpuDevice::attention_cached(View q, View k_cache, View v_cache, View pos, const View* slots,
                                 const AttentionOptions& options, Storage& dst) {
  const char* op = "attention_cached";
  const DType dt = q.storage.dtype(), kv = k_cache.storage.dtype();
  require(dt, op);
  require(kv, op);
  const Layout& lq = q.layout;
  WICK_ASSERT(lq.rank() == 4 && k_cache.layout.rank() == 4);
  check_span(k_cache.layout, k_cache.storage, op);
  check_span(v_cache.layout, v_cache.storage, op);
  const int64_t t = lq.shape[2], d = lq.shape[3], max_seq = k_cache.layout.shape[2];
  const int64_t rows = lq.shape[0] * lq.shape[1] * t;
  AttentionParams pc{};
  pc.b = to_index(lq.shape[0], "dim");
  pc.h = to_index(lq.shape[1], "dim");
  pc.kvh = to_index(k_cache.layout.shape[1], "dim");
  pc.t = to_index(t, "dim");
  pc.d = to_index(d, "dim");
  pc.max_seq = to_index(max_seq, "dim");
  put4(pc.q_strides, lq);
  pc.q_offset = to_index(lq.start_offset, "offset");
  pc.kc_offset = to_index(k_cache.layout.start_offset, "offset");
  pc.vc_offset = to_index(v_cache.layout.start_offset, "offset");
  put_items(pc, pos, slots, k_cache.layout.shape[0]);
  pc.pos_stride = per_item(pos) ? 1u : 0u;
  pc.softcap_bits =
      options.softcap > 0 ? std::bit_cast<uint32_t>(static_cast<float>(options.softcap)) : 0u;
  pc.window = static_cast<uint32_t>(std::min<int64_t>(options.window, UINT32_MAX));
  const bool limited = options.max_keys > 0 && options.max_keys < max_seq;
  pc.key_limit = limited ? to_index(options.max_keys, "max_keys") : 0u;
  for (const Layout* l : {&lq, &k_cache.layout, &v_cache.layout}) check_reach(*l, "element offset");
  // Splits of whole chunks; pos is on the device, so splits past a row's keys find nothing to do
  // and return at once. Their length is counted from max_seq and one batch item's rows, so that
  // an item's sums depend neither on the batch it is in nor on options.max_keys, which only
  // drops the splits beyond it (a pass of prompts launched 4 splits a row for ~40 keys).
  // One query an item (decode) takes options_.attention_block keys a step; more queries (prompts)
  // 128: at 256 prefill lost (H100's Vulkan, session 23: 512 tokens 54.6k against 57.9k tok/s,
  // 1024 tokens 50.8k against 55.1k) while decode gained.
  const uint32_t block = t == 1 ? options_.attention_block : kPromptAttentionBlock;
  // The kernels' reductions halve the workgroup: a power of two, within what every device runs.
  WICK_ASSERT(block >= 32 && block <= 256 && (block & (block - 1)) == 0);
  const auto chunks_of = [&](int64_t keys) {
    return std::max<int64_t>(1, (keys + block - 1) / block);
  };
  const int64_t chunks = chunks_of(max_seq);
  const int64_t item_rows = std::max<int64_t>(1, lq.shape[1] * t);
  const int64_t want =
      std::clamp<int64_t>((kAttentionGroups + item_rows - 1) / item_rows, 1, chunks);
  const int64_t per_split = (chunks + want - 1) / want;
  const int64_t splits =
      (chunks_of(limited ? options.max_keys : max_seq) + per_split - 1) / per_split;
  pc.n_splits = to_index(splits, "split count");
  pc.span = to_index(per_split * block, "split length");
  const int64_t units = rows * splits;  // the workgroups, each with a scratch slot
  const DType acc = dt == DType::F64 ? DType::F64 : DType::F32;
  to_index(units * (d + 2), "scratch element count");
  to_index(units, "workgroup count");
  BufferRef scratch = device_pool_->acquire(static_cast<size_t>(units * (d + 2)) * dtype_size(acc));
  // The vector form: rows of whole 16-byte pieces, 2^i <= 32 of them, 16-byte aligned.
  const int64_t per_vec = 16 / static_cast<int64_t>(dtype_size(kv));
  const int64_t lanes = d / per_vec;
  const bool vec = d % per_vec == 0 && lanes <= 32 && (lanes & (lanes - 1)) == 0 &&
                   k_cache.layout.start_offset % per_vec == 0 &&
                   v_cache.layout.start_offset % per_vec == 0;
  const uint32_t vec_lanes = vec ? static_cast<uint32_t>(lanes) : 0;
  // The softmax's reductions in subgroups where the device has them (f32; the tree otherwise).
  const bool subgroups = device_caps().subgroup_arithmetic && options_.subgroups;
  const Pipeline& pipeline = kernel(
      KernelFamily::Attention,
      {vec_lanes, static_cast<uint32_t>(dt), static_cast<uint32_t>(kv), block, subgroups ? 1u : 0u},
      [&] {
        Defines defines;
        add_dtype(defines, "", dt);
        add_dtype(defines, "KV_", kv);  // the caches' dtype
        defines.emplace_back("KV_BYTES", std::to_string(dtype_size(kv)));
        if (subgroups) defines.emplace_back("WICK_SUBGROUP_ARITHMETIC", "1");
        return key_for("attention", std::move(defines), {vec_lanes}, block);
      });
  // One split (prompts) leaves the counters alone: they are bound, not grown.
  Buffer& counters = split_counters(splits > 1 ? static_cast<size_t>(rows) : 1);
  BufferRef record = errors_->acquire();
  const BufferAccess args[] = {{&buffer(q.storage), Access::Read},
                               {&buffer(k_cache.storage), Access::Read},
                               {&buffer(v_cache.storage), Access::Read},
                               {&buffer(pos.storage), Access::Read},
                               {scratch.get(), Access::Write},
                               {&buffer(dst), Access::Write},
                               {record.get(), Access::Unordered},
                               {&buffer(slots ? slots->storage : pos.storage), Access::Read},
                               {&counters, Access::Write}};
  const uint64_t submission = queue_->record([&](CommandQueue::Recorder& r) {
    r.dispatch(pipeline, args, param_words(pc),
               grid(static_cast<uint64_t>(units) * kWorkgroupSize));
  });
  errors_->add(std::move(record), submission, op, std::to_string(t) + " tokens");
}

}  // namespace wick::gpu
