// Fused ops for token-by-token decoding with a KV cache allocated once.
//
// Both take the position of the first new token from a device tensor `pos` instead of a host
// integer: nothing about a decode step then depends on the host's position, so a step recorded
// once can be replayed with a new position written into `pos`. pos is a u32 tensor on the ops'
// device of one element (every batch item at that position) or of b elements (item i at pos[i]:
// sequences of different lengths decoded together), any shape. A position that does not fit the
// cache (pos + t > max_seq) is only known on the device: the CPU throws Error(OutOfRange) at the
// op; a GPU writes nothing out of bounds and raises the same OutOfRange, naming the op, at the
// calling thread's next wait (read-back or synchronize), without waiting at the op.
//
// Cache slots: by default batch item i reads and writes row block i of the caches (b, kvh,
// max_seq, d). Given `slots`, a u32 tensor of b elements on the ops' device, item i uses cache
// slot slots[i] of caches (S, kvh, max_seq, d) for any S >= 1 instead: a server keeps every
// sequence's cache as a slot of one tensor per layer and steps any subset of them together. A
// slot >= S is found like a bad position (OutOfRange; a GPU writes nothing for it). The items
// of one rope_kv_cache call must not write the same cache rows: items sharing a slot need
// positions at least t apart (a prompt's tokens may be items of one token each, at consecutive
// positions); the CPU refuses overlapping items, a GPU's result is then unspecified.
//
// Shapes: b batch, h query heads, kvh key/value heads (h a positive multiple of kvh: query head j
// reads kv head j / (h / kvh)), t new tokens, d head dim, max_seq cache rows. With no elements
// (b, t or d zero) an op does nothing and pos is not read.
//
// The caches (both of one dtype) hold q's dtype, or f16 / bf16 under f32 q: a compact cache,
// written rounded to nearest even by rope_kv_cache and read as stored by attention_cached (the
// kernels convert each element as they load it, computing in f32).
#pragma once

#include "wick/tensor.h"

namespace wick {

// The rotary tables of rope_kv_cache, each (rows >= max_seq, d/2), any strides: row p holds the
// cos/sin of position p. q has its own tables so that they may carry the 1/sqrt(d) score scale.
struct RotaryTables {
  Tensor cos_q, sin_q, cos_k, sin_k;
};

// Rotates q (b, h, t, d) and k (b, kvh, t, d) at positions pos .. pos + t - 1 and writes the
// rotated k and v (b, kvh, t, d) into rows pos .. pos + t - 1 of k_cache and v_cache
// (b, kvh, max_seq, d; with slots (S, kvh, max_seq, d)), in place (other rows keep their values).
// Returns the rotated q, (b, h, t, d) contiguous. Equal, bit for bit, to
//   q.rope_i(cos_q.narrow(0, pos, t), sin_q.narrow(0, pos, t))   (rope when !interleaved)
//   k_cache.slice_set(k.rope_i(cos_k.narrow(0, pos, t), ...), 2, pos); v_cache.slice_set(v, 2, pos)
// interleaved: rotate the pairs (2i, 2i + 1) (rope_i), else (i, i + d/2) (rope); d is even.
// q, k, v: any strides (e.g. narrowed from one fused projection). The caches must be
// contiguous (a start offset is fine) and must not overlap each other; an input sharing a
// cache's storage is copied first (as slice_set does). Every tensor but pos and the caches has
// one float dtype (f32, f16, bf16, f64), the tables included, as rope takes them: f16/bf16
// compute in f32 from tables rounded to the dtype, exactly as the unfused ops do (a 16-bit cache
// under f32 gets the f32 results rounded once). One kernel on GPUs.
// Errors: Shape (ranks, dims, cache or table shapes, overlapping or non-contiguous caches, pos or
// slots of the wrong size), DType, Device (tensors on different devices), OutOfRange (t > max_seq
// at once, pos + t > max_seq or a slot >= S as above).
Tensor rope_kv_cache(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                     const Tensor& v_cache, const RotaryTables& tables, const Tensor& pos,
                     bool interleaved, const Tensor& slots = Tensor());

// What attention_cached may do besides plain causal attention (Gemma 2 does both).
struct AttentionOptions {
  // > 0: each score s becomes softcap * tanh(s / softcap) before the softmax (taken as f32).
  double softcap = 0;
  // > 0: the query at position p attends to rows max(0, p - window + 1) ..= p only (a sliding
  // window of `window` rows, its own included).
  int64_t window = 0;
  // > 0: a bound on the keys any query attends to (pos + i + 1 <= max_keys for every item and
  // query i; the caller knows the positions, the op may not read them before it runs). GPUs
  // then launch workgroups for the first max_keys cache rows instead of all max_seq; the results
  // are the same bits. A query beyond the bound is an error (OutOfRange), never a shortened row.
  int64_t max_keys = 0;
};

// Causal attention of q (b, h, t, d) over the caches (b, kvh, max_seq, d; with slots (S, kvh,
// max_seq, d)): query i of a batch item, at position pos + i, attends to cache rows 0 ..= pos + i
// (within options.window), softmax(q k^T) v with no further scaling (q carries it; scores capped
// as options.softcap says). Returns (b, h, t, d) contiguous in q's dtype; sums and the softmax run
// in f32 (f64 for f64) with a running maximum. q: any strides; caches contiguous (a start offset
// is fine), of q's dtype or 16-bit under f32 q (above). A batch item's result does not depend on
// the other items (the same bits alone or batched). GPUs: at most two dispatches (the sequence
// split over workgroups, then a combine). Errors: Shape, DType, Device, OutOfRange (t > max_seq at
// once, pos + t > max_seq or a slot >= S as above), Unsupported (a negative, NaN or infinite
// softcap or a negative window).
Tensor attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                        const Tensor& pos, const Tensor& slots = Tensor(),
                        const AttentionOptions& options = {});

}  // namespace wick
