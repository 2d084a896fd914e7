#version 450
// Arg-sort of every row of the last dim, a workgroup per row: a bitonic sort of (key, index)
// pairs in shared memory (rows up to MAX_SORT; the host refuses longer ones). Keys order like the
// values with NaN largest and -0 == +0; the index breaks ties, so the result is stable in both
// directions, as on the CPU. DESCENDING flips the keys, not the indices.
#include "include/common.glsl"
#include "include/dtype.glsl"
#include "include/rows.glsl"

#define MAX_SORT 2048u
layout(constant_id = 0) const uint DESCENDING = 0u;
layout(set = 0, binding = 0) readonly buffer In { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint y[]; };

// 64-bit keys (hi, lo) for f64 and i64, 32-bit (lo only) otherwise.
#if DT_KIND == 1 || DT_KIND == 3
#define KEY64 1
shared uint s_hi[MAX_SORT];
#endif
shared uint s_lo[MAX_SORT];
shared uint s_idx[MAX_SORT];

#if DT_KIND == 0
uvec2 sort_key(float v) {
  if (is_nan(v)) return uvec2(0u, 0xffffffffu);
  const uint bits = floatBitsToUint(v == 0.0 ? 0.0 : v);  // -0 -> +0
  return uvec2(0u, (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u);
}
#elif DT_KIND == 1
uvec2 sort_key(double v) {
  if (is_nan(v)) return uvec2(0xffffffffu);
  const uvec2 w = unpackDouble2x32(v == 0.0LF ? 0.0LF : v);  // (lo, hi)
  return (w.y & 0x80000000u) != 0u ? uvec2(~w.y, ~w.x) : uvec2(w.y | 0x80000000u, w.x);
}
#elif DT_KIND == 2
uvec2 sort_key(uint v) { return uvec2(0u, v); }
#else
uvec2 sort_key(int64_t v) {
  const uint64_t u = uint64_t(v) ^ 0x8000000000000000ul;
  return uvec2(uint(u >> 32), uint(u));
}
#endif

// Whether pair a (key, index) sorts before pair b.
bool before(uint a, uint b) {
#ifdef KEY64
  if (s_hi[a] != s_hi[b]) return s_hi[a] < s_hi[b];
#endif
  if (s_lo[a] != s_lo[b]) return s_lo[a] < s_lo[b];
  return s_idx[a] < s_idx[b];
}

void swap_pairs(uint a, uint b) {
#ifdef KEY64
  const uint h = s_hi[a];
  s_hi[a] = s_hi[b];
  s_hi[b] = h;
#endif
  const uint l = s_lo[a], i = s_idx[a];
  s_lo[a] = s_lo[b];
  s_lo[b] = l;
  s_idx[a] = s_idx[b];
  s_idx[b] = i;
}

void main() {
  const uint o = group_index();
  if (o >= pc.n_outer) return;  // uniform per workgroup
  const uint t = gl_LocalInvocationID.x, n = pc.n_inner, base = outer_offset(o);
  uint padded = 1u;
  while (padded < n) padded <<= 1;
  const uint flip = DESCENDING != 0u ? 0xffffffffu : 0u;
  for (uint j = t; j < padded; j += WG_SIZE) {
    uvec2 k = uvec2(0xffffffffu);  // padding sorts last, after every real element
    uint idx = 0xffffffffu;
    if (j < n) {
      k = sort_key(LOAD(DT, x[base + j * pc.inner_strides[0]])) ^ uvec2(flip);
      idx = j;
    }
#ifdef KEY64
    s_hi[j] = k.x;
#endif
    s_lo[j] = k.y;
    s_idx[j] = idx;
  }
  barrier();
  for (uint size = 2u; size <= padded; size <<= 1) {
    for (uint stride = size >> 1; stride > 0u; stride >>= 1) {
      for (uint i = t; i < padded; i += WG_SIZE) {
        const uint l = i ^ stride;
        if (l > i) {
          const bool up = (i & size) == 0u;
          if (up == before(l, i)) swap_pairs(i, l);
        }
      }
      barrier();
    }
  }
  for (uint j = t; j < n; j += WG_SIZE) y[pc.out_offset + o * n + j] = s_idx[j];
}
