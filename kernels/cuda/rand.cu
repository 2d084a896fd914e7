// Uniform [lo, hi) (MODE 0) or normal(mean, std) (MODE 1) numbers for a float dtype DT; MODE is
// WICK_SPEC_0. Element i takes Philox4x32-10 of counter (base + i) under the device's seed, so
// the numbers depend only on the seed and how many were drawn before, not on the launch shape,
// and are the same words rand.comp draws. Bindings: 0 y (contiguous from out_offset).
#include "include/common.cuh"
#include "include/dtype.cuh"

#if DT_KIND > 1
#error "rand.cu draws float dtypes only"
#endif
#ifndef WICK_SPEC_0
#error "rand.cu needs WICK_SPEC_0, the mode"
#endif
constexpr uint32_t MODE = WICK_SPEC_0;

WICK_PARAMS_STRUCT(Push, WICK_PARAMS_RAND(WICK_CU_FIELD, WICK_CU_ARRAY))

struct Words {
  uint32_t x, y, z, w;
};

WICK_DEV Words philox(Words ctr, uint32_t key_x, uint32_t key_y) {
#pragma unroll
  for (int r = 0; r < 10; r++) {
    const uint32_t hi0 = __umulhi(0xD2511F53u, ctr.x), lo0 = 0xD2511F53u * ctr.x;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, ctr.z), lo1 = 0xCD9E8D57u * ctr.z;
    ctr = Words{hi1 ^ ctr.y ^ key_x, lo1, hi0 ^ ctr.w ^ key_y, lo0};
    key_x += 0x9E3779B9u;
    key_y += 0xBB67AE85u;
  }
  return ctr;
}

// [0, 1) with 24 random bits, and (0, 1] for logarithms.
WICK_DEV float unit(uint32_t w) {
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f);
}
WICK_DEV float unit_open0(uint32_t w) {
  return static_cast<float>((w >> 8) + 1u) * (1.0f / 16777216.0f);
}

extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const Push& pc = PARAMS(Push, args);
  const uint32_t i = global_index();
  if (i >= pc.numel) return;
  const uint32_t lo = pc.base[0] + i;
  const uint32_t carry = lo < i ? 1u : 0u;
  const Words r = philox(Words{lo, pc.base[1] + carry, 0x5eedu, 0u}, pc.seed[0], pc.seed[1]);
  STORAGE_T(DT) v;
  if (MODE == 0u) {
#if DT_KIND == 1
    // 53 random bits for f64.
    const double u = (static_cast<double>(r.x >> 11) * 4294967296.0 + static_cast<double>(r.y)) *
                     (1.0 / 9007199254740992.0);
#else
    const float u = unit(r.x);
#endif
    v = PACK(DT, pc.p0 + (pc.p1 - pc.p0) * u);
    // Rounding to the dtype can reach hi: the interval is half open, as on the CPU.
    if (LOAD(DT, v) >= pc.p1 && pc.p1 > pc.p0) v = PACK(DT, pc.p0);
  } else {
    // Box-Muller in float, as rand.comp (which has no double log and cos): f64 gets
    // float-precision normals on both GPU backends.
    const float z = sqrtf(-2.0f * logf(unit_open0(r.x))) * cosf(6.283185307179586f * unit(r.y));
    v = PACK(DT, pc.p0 + pc.p1 * static_cast<COMPUTE_T(DT)>(z));
  }
  buffer_at<STORAGE_T(DT)>(args, 0)[pc.out_offset + i] = v;
}
