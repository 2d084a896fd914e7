#version 450
// Uniform [lo, hi) (MODE 0) or normal(mean, std) (MODE 1) numbers for a float dtype DT.
// Element i takes Philox4x32-10 of counter (base + i) under the device's seed, so the numbers
// depend only on the seed and how many were drawn before, not on the launch shape.
#include "include/common.glsl"
#include "include/dtype.glsl"

#include "include/params.glsl"
layout(push_constant) uniform Push {
  WICK_PARAMS_RAND(WICK_FIELD, WICK_ARRAY)  // seed, base: (lo, hi) words; p0, p1: lo/hi or mean/std
} pc;

layout(constant_id = 0) const uint MODE = 0u;
layout(set = 0, binding = 0) writeonly buffer Out { STORAGE_T(DT) y[]; };

uvec4 philox(uvec4 ctr, uvec2 key) {
  for (int r = 0; r < 10; r++) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, ctr.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, ctr.z, hi1, lo1);
    ctr = uvec4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return ctr;
}

// [0, 1) with 24 random bits, and (0, 1] for logarithms.
float unit(uint w) { return float(w >> 8) * (1.0 / 16777216.0); }
float unit_open0(uint w) { return float((w >> 8) + 1u) * (1.0 / 16777216.0); }

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint carry;
  const uint lo = uaddCarry(pc.base[0], i, carry);
  const uvec4 r = philox(uvec4(lo, pc.base[1] + carry, 0x5eedu, 0u), uvec2(pc.seed[0], pc.seed[1]));
  WIDE_T(DT) v;
  if (MODE == 0u) {
#if DT_KIND == 1
    // 53 random bits for f64.
    const double u = (double(r.x >> 11) * 4294967296.0LF + double(r.y)) * (1.0LF / 9007199254740992.0LF);
#else
    const float u = unit(r.x);
#endif
    v = PACK_W(DT, pc.p0 + (pc.p1 - pc.p0) * u);
    // Rounding to the dtype can reach hi: the interval is half open, as on the CPU.
    if (LOAD(DT, v) >= pc.p1 && pc.p1 > pc.p0) v = PACK_W(DT, pc.p0);
  } else {
    // Box-Muller in float (GLSL has no double log/cos); f64 gets float-precision normals.
    const float z = sqrt(-2.0 * log(unit_open0(r.x))) * cos(6.283185307179586 * unit(r.y));
    v = PACK_W(DT, pc.p0 + pc.p1 * COMPUTE_T(DT)(z));
  }
  y[pc.out_offset + i] = STORE_W(DT, v);
}
