// Front end of the decode-attention ops (wick/attention.h): rope_kv_cache and attention_cached.
// Everything but the value of pos is checked here; pos + t <= max_seq is the backend's check.
#include <cmath>
#include <optional>

#include "core/rope_kv.h"
#include "core/tensor_impl.h"
#include "wick/attention.h"

namespace wick {

namespace {

// pos: a u32 tensor of one element or of b, on `like`'s device; b of them are read as
// contiguous (a copy of a strided view).
Tensor checked_pos(const char* op, const Tensor& like, const Tensor& pos, int64_t b) {
  core::check_same_device(op, like, pos);
  if (pos.dtype() != DType::U32)
    fail(ErrorKind::DType, op, "pos must be a u32 tensor, got ", core::describe(pos));
  if (pos.numel() != 1 && pos.numel() != b)
    fail(ErrorKind::Shape, op, "pos must hold 1 or b = ", b,
         " elements (a position per batch item), got ", core::describe(pos));
  return pos.numel() > 1 && !pos.is_contiguous() ? pos.contiguous() : pos;
}

// slots, when given: a u32 tensor of b elements on `like`'s device (read as contiguous).
Tensor checked_slots(const char* op, const Tensor& like, const Tensor& slots, int64_t b) {
  if (!slots.defined()) return slots;
  core::check_same_device(op, like, slots);
  if (slots.dtype() != DType::U32)
    fail(ErrorKind::DType, op, "slots must be a u32 tensor, got ", core::describe(slots));
  if (slots.numel() != b)
    fail(ErrorKind::Shape, op, "slots must hold b = ", b,
         " elements (a cache slot per batch item), got ", core::describe(slots));
  return slots.is_contiguous() ? slots : slots.contiguous();
}

// A cache of (b, kvh, max_seq, d) = `want`, contiguous, on `like`'s device, of `like`'s dtype or
// a 16-bit float under f32 (the compact cache llama.cpp keeps by default). want[0] < 0: any
// number >= 1 of slots.
void check_cache(const char* op, const char* name, const Tensor& like, const Tensor& cache,
                 const Shape& want) {
  core::check_same_device(op, like, cache);
  const DType dt = cache.dtype();
  if (dt != like.dtype() &&
      !(like.dtype() == DType::F32 && (dt == DType::F16 || dt == DType::BF16)))
    fail(ErrorKind::DType, op, name, " is ", dt, " under ", like.dtype(),
         " q: a cache holds q's dtype, or f16 or bf16 under f32 q");
  const bool slots = want[0] < 0;
  if (cache.rank() != 4 || (slots ? cache.dim(0) < 1 : cache.dim(0) != want[0]) ||
      cache.dim(1) != want[1] || cache.dim(3) != want[3]) {
    if (slots)
      fail(ErrorKind::Shape, op, name, " must be (slots >= 1, ", want[1], ", max_seq, ", want[3],
           "), got ", cache.shape());
    fail(ErrorKind::Shape, op, name, " must be (", want[0], ", ", want[1], ", max_seq, ", want[3],
         "), got ", cache.shape());
  }
  if (!cache.is_contiguous())
    fail(ErrorKind::Shape, op, name, " ", cache.shape(), " must be contiguous, got strides ",
         Shape(cache.layout().strides));
}

// The two caches share the shape of the first; they must not overlap (a row written twice).
// b < 0: any number of slots.
void check_caches(const char* op, const Tensor& like, const Tensor& k_cache, const Tensor& v_cache,
                  int64_t b, int64_t kvh, int64_t d) {
  check_cache(op, "k_cache", like, k_cache, Shape{b, kvh, 0, d});
  check_cache(op, "v_cache", like, v_cache, Shape{b, kvh, 0, d});
  if (k_cache.dtype() != v_cache.dtype())
    fail(ErrorKind::DType, op, "k_cache is ", k_cache.dtype(), " and v_cache ", v_cache.dtype(),
         ": the caches share one dtype");
  if (k_cache.dim(0) != v_cache.dim(0) || k_cache.dim(2) != v_cache.dim(2))
    fail(ErrorKind::Shape, op, "k_cache ", k_cache.shape(), " and v_cache ", v_cache.shape(),
         " differ");
  if (k_cache.shares_storage_with(v_cache) && k_cache.numel() > 0) {
    const auto [klo, khi] = k_cache.layout().storage_span();
    const auto [vlo, vhi] = v_cache.layout().storage_span();
    if (klo < vhi && vlo < khi)
      fail(ErrorKind::Shape, op, "k_cache ", k_cache.shape(), " and v_cache ", v_cache.shape(),
           " overlap in one storage");
  }
}

// h must be a positive multiple of kvh.
void check_heads(const char* op, const Tensor& q, int64_t kvh) {
  if (kvh < 1 || q.dim(1) < 1 || q.dim(1) % kvh != 0)
    fail(ErrorKind::Shape, op, "query heads ", q.dim(1), " (q ", q.shape(),
         ") must be a positive multiple of the kv heads ", kvh);
}

void check_tokens_fit(const char* op, int64_t t, int64_t max_seq) {
  if (t > max_seq)
    fail(ErrorKind::OutOfRange, op, t, " tokens exceed the cache of ", max_seq, " positions");
}

// t itself when it shares no storage with a cache, else a copy (a kernel reading and writing one
// buffer through different layouts would race).
Tensor unaliased(const Tensor& t, const Tensor& k_cache, const Tensor& v_cache) {
  return t.shares_storage_with(k_cache) || t.shares_storage_with(v_cache) ? t.copy() : t;
}

}  // namespace

namespace core {

RopeKvInputs check_rope_kv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& k_cache, const Tensor& v_cache, const RotaryTables& tables,
                           const Tensor& pos_in, const Tensor& slots_in) {
  core::check_float(op, q);
  const Tensor* same[] = {&k, &v, &tables.cos_q, &tables.sin_q, &tables.cos_k, &tables.sin_k};
  for (const Tensor* t : same) {
    core::check_same_device(op, q, *t);
    core::check_same_dtype(op, q, *t);
  }
  core::check_same_device(op, q, pos_in);  // an undefined pos is named before q's shape
  if (q.rank() != 4) fail(ErrorKind::Shape, op, "q must be (b, h, t, d), got ", q.shape());
  const int64_t b = q.dim(0), t = q.dim(2), d = q.dim(3);
  RopeKvInputs in;
  in.pos = checked_pos(op, q, pos_in, b);
  in.slots = checked_slots(op, q, slots_in, b);
  if (d % 2 != 0) fail(ErrorKind::Shape, op, "head dim must be even, got q ", q.shape());
  if (k.rank() != 4 || k.dim(0) != b || k.dim(2) != t || k.dim(3) != d)
    fail(ErrorKind::Shape, op, "k must be (", b, ", kvh, ", t, ", ", d, ") for q ", q.shape(),
         ", got ", k.shape());
  if (v.shape() != k.shape())
    fail(ErrorKind::Shape, op, "v ", v.shape(), " must have k's shape ", k.shape());
  const int64_t kvh = k.dim(1);
  check_heads(op, q, kvh);
  check_caches(op, q, k_cache, v_cache, in.slots.defined() ? -1 : b, kvh, d);
  const int64_t max_seq = k_cache.dim(2);
  const char* names[] = {"cos_q", "sin_q", "cos_k", "sin_k"};
  for (size_t i = 0; i < 4; i++) {
    const Tensor& tab = *same[2 + i];
    if (tab.rank() != 2 || tab.dim(1) != d / 2 || tab.dim(0) < max_seq)
      fail(ErrorKind::Shape, op, names[i], " must be (rows >= max_seq ", max_seq, ", ", d / 2,
           ") for q ", q.shape(), ", got ", tab.shape());
  }
  check_tokens_fit(op, t, max_seq);
  in.q = unaliased(q, k_cache, v_cache);
  in.k = unaliased(k, k_cache, v_cache);
  in.v = unaliased(v, k_cache, v_cache);
  in.cos_q = unaliased(tables.cos_q, k_cache, v_cache);
  in.sin_q = unaliased(tables.sin_q, k_cache, v_cache);
  in.cos_k = unaliased(tables.cos_k, k_cache, v_cache);
  in.sin_k = unaliased(tables.sin_k, k_cache, v_cache);
  return in;
}

void record_rope_kv(const RopeKvInputs& in, const Tensor& k_cache, const Tensor& v_cache,
                    bool interleaved, const Tensor& out) {
  const std::optional<backend::View> slot_view =
      in.slots.defined() ? std::optional(core::view(in.slots)) : std::nullopt;
  in.q.device().backend().rope_kv_cache(
      core::view(in.q), core::view(in.k), core::view(in.v), {*k_cache.storage(), k_cache.layout()},
      {*v_cache.storage(), v_cache.layout()},
      {core::view(in.cos_q), core::view(in.sin_q), core::view(in.cos_k), core::view(in.sin_k)},
      core::view(in.pos), slot_view ? &*slot_view : nullptr, interleaved, *out.storage());
}

}  // namespace core

Tensor rope_kv_cache(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                     const Tensor& v_cache, const RotaryTables& tables, const Tensor& pos,
                     bool interleaved, const Tensor& slots) {
  const char* op = "rope_kv_cache";
  const core::RopeKvInputs in =
      core::check_rope_kv(op, q, k, v, k_cache, v_cache, tables, pos, slots);
  Tensor out = core::empty(q.shape(), q.dtype(), q.device(), op);
  if (out.numel() == 0) return out;
  core::record_rope_kv(in, k_cache, v_cache, interleaved, out);
  return out;
}

Tensor attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                        const Tensor& pos_in, const Tensor& slots_in,
                        const AttentionOptions& options) {
  const char* op = "attention_cached";
  core::check_float(op, q);
  if (!(options.softcap >= 0) || !std::isfinite(options.softcap) || options.window < 0 ||
      options.max_keys < 0)
    fail(ErrorKind::Unsupported, op, "softcap ", options.softcap, ", window ", options.window,
         " and max_keys ", options.max_keys,
         ": a softcap is finite and >= 0, a window and max_keys >= 0 (0: none)");
  core::check_same_device(op, q, pos_in);  // an undefined pos is named before q's shape
  if (q.rank() != 4) fail(ErrorKind::Shape, op, "q must be (b, h, t, d), got ", q.shape());
  const int64_t b = q.dim(0), t = q.dim(2), d = q.dim(3);
  const Tensor pos = checked_pos(op, q, pos_in, b), slots = checked_slots(op, q, slots_in, b);
  if (k_cache.rank() != 4)
    fail(ErrorKind::Shape, op, "k_cache must be (", b, ", kvh, max_seq, ", d, "), got ",
         k_cache.shape());
  const int64_t kvh = k_cache.dim(1);
  check_caches(op, q, k_cache, v_cache, slots.defined() ? -1 : b, kvh, d);
  check_heads(op, q, kvh);
  check_tokens_fit(op, t, k_cache.dim(2));
  Tensor out = core::empty(q.shape(), q.dtype(), q.device(), op);
  if (out.numel() == 0) return out;
  const std::optional<backend::View> slot_view =
      slots.defined() ? std::optional(core::view(slots)) : std::nullopt;
  q.device().backend().attention_cached(core::view(q), core::view(k_cache), core::view(v_cache),
                                        core::view(pos), slot_view ? &*slot_view : nullptr, options,
                                        *out.storage());
  return out;
}

}  // namespace wick
