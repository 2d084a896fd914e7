// Portable kernels: activation quantization and the scalar dot products every format has.
// They are the reference the SIMD kernels are tested against and the path on CPUs without AVX2.
#include <algorithm>
#include <atomic>

#include "quantized/blocks.h"
#include "quantized/formats.h"
#include "quantized/kernels.h"

namespace wick::quantized {

ActKind act_kind(QuantType t) {
  switch (t) {
    case QuantType::Q2_K:
    case QuantType::Q3_K:
    case QuantType::Q4_K:
    case QuantType::Q5_K:
    case QuantType::Q6_K:
    case QuantType::IQ4_XS:
      return ActKind::Block256;
    default:
      return ActKind::Block32;
  }
}

void quantize_act_row_scalar(ActKind kind, const float* x, int64_t k, int8_t* qs, float* ds,
                             int16_t* bsums) {
  if (kind == ActKind::Block256) {
    // ggml's Q8_K (quantize_row_q8_k), scattered into the struct-of-arrays layout.
    BlockQ8_K b;
    for (int64_t i = 0; i < k / kQKK; i++) {
      quantize_row_q8_k(x + i * kQKK, &b, kQKK);
      std::copy(b.qs, b.qs + kQKK, qs + i * kQKK);
      std::copy(b.bsums, b.bsums + 16, bsums + i * 16);
      ds[i] = b.d;
    }
    return;
  }
  for (int64_t i = 0; i < k / kQK; i++) {
    const float* xb = x + i * kQK;
    int8_t* q = qs + i * kQK;
    float amax = 0;
    for (int j = 0; j < kQK; j++) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; j++) {
      q[j] = static_cast<int8_t>(std::round(xb[j] * id));
      sum += q[j];
    }
    ds[2 * i] = d;
    ds[2 * i + 1] = d * static_cast<float>(sum);
  }
}

namespace {

// ---- 32-element formats: per block, d_w * d_x * sum(q_w * q_x) (+ m_w * d_x * sum(q_x)) ------

// Unpacks one weight block into signed integer values; returns its scale and min (0 if none).
struct Decoded32 {
  int v[kQK];
  float d, m;
};

inline void decode(const BlockQ4_0& b, Decoded32& o) {
  for (int j = 0; j < 16; j++) {
    o.v[j] = (b.qs[j] & 0xF) - 8;
    o.v[j + 16] = (b.qs[j] >> 4) - 8;
  }
  o.d = f16_to_f32(b.d);
  o.m = 0;
}
inline void decode(const BlockQ4_1& b, Decoded32& o) {
  for (int j = 0; j < 16; j++) {
    o.v[j] = b.qs[j] & 0xF;
    o.v[j + 16] = b.qs[j] >> 4;
  }
  o.d = f16_to_f32(b.d);
  o.m = f16_to_f32(b.m);
}
template <typename B>
inline void decode5(const B& b, int offset, Decoded32& o) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < 16; j++) {
    o.v[j] = ((b.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4)) - offset;
    o.v[j + 16] = ((b.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4)) - offset;
  }
  o.d = f16_to_f32(b.d);
}
inline void decode(const BlockQ5_0& b, Decoded32& o) {
  decode5(b, 16, o);
  o.m = 0;
}
inline void decode(const BlockQ5_1& b, Decoded32& o) {
  decode5(b, 0, o);
  o.m = f16_to_f32(b.m);
}
inline void decode(const BlockQ8_0& b, Decoded32& o) {
  for (int j = 0; j < kQK; j++) o.v[j] = b.qs[j];
  o.d = f16_to_f32(b.d);
  o.m = 0;
}

inline void decode(const BlockIQ4_NL& b, Decoded32& o) {
  for (int j = 0; j < 16; j++) {
    o.v[j] = kIq4Values[b.qs[j] & 0xF];
    o.v[j + 16] = kIq4Values[b.qs[j] >> 4];
  }
  o.d = f16_to_f32(b.d);
  o.m = 0;
}

template <typename Block>
void dot_rows_32(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const ActRow& x,
                 float* out) {
  const int64_t nb = k / kQK;
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
    float sum = 0;
    Decoded32 dec;
    for (int64_t i = 0; i < nb; i++) {
      decode(blocks[i], dec);
      const int8_t* q = x.qs + i * kQK;
      int isum = 0;
      for (int j = 0; j < kQK; j++) isum += dec.v[j] * q[j];
      sum += dec.d * x.ds[2 * i] * static_cast<float>(isum) + dec.m * x.ds[2 * i + 1];
    }
    out[r] = sum;
  }
}

// ---- K formats: per super-block, d_w * d_x * sum(scale_g * sum_g(q_w * q_x)) minus the min
// terms dmin_w * d_x * sum(min_g * sum_g(q_x)), where the q_x group sums come from bsums. -------

void dot_rows_q2_k(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const ActRow& x,
                   float* out) {
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const BlockQ2_K*>(w + static_cast<size_t>(r) * row_bytes);
    float sum = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const BlockQ2_K& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      const int16_t* bs = x.bsums + i * 16;
      int isum = 0, msum = 0;
      for (int g = 0; g < 16; g++) {  // group g: half g/8, shift 2*((g%8)/2), bytes 16*(g%2)
        const uint8_t* qs = b.qs + 32 * (g / 8) + 16 * (g % 2);
        const int shift = 2 * ((g % 8) / 2);
        int gsum = 0;
        for (int l = 0; l < 16; l++) gsum += ((qs[l] >> shift) & 3) * q[16 * g + l];
        isum += (b.scales[g] & 0xF) * gsum;
        msum += (b.scales[g] >> 4) * bs[g];
      }
      const float dx = x.ds[i];
      sum += dx * f16_to_f32(b.d) * static_cast<float>(isum) -
             dx * f16_to_f32(b.dmin) * static_cast<float>(msum);
    }
    out[r] = sum;
  }
}

void dot_rows_q3_k(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const ActRow& x,
                   float* out) {
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const BlockQ3_K*>(w + static_cast<size_t>(r) * row_bytes);
    float sum = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const BlockQ3_K& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      int8_t sc[16];
      q3k_scales(b.scales, sc);
      int isum = 0;
      for (int g = 0; g < 16; g++) {
        const int half = g / 8, off = 16 * (g % 2), shift = 2 * ((g % 8) / 2);
        const uint8_t* qs = b.qs + 32 * half + off;
        const uint8_t hbit = static_cast<uint8_t>(1u << (4 * half + (g % 8) / 2));
        int gsum = 0;
        for (int l = 0; l < 16; l++) {
          const int v = ((qs[l] >> shift) & 3) - ((b.hmask[off + l] & hbit) ? 0 : 4);
          gsum += v * q[16 * g + l];
        }
        isum += sc[g] * gsum;
      }
      sum += x.ds[i] * f16_to_f32(b.d) * static_cast<float>(isum);
    }
    out[r] = sum;
  }
}

// Q4_K and Q5_K share everything but the fifth bit.
template <typename Block, bool kFifthBit>
void dot_rows_k4(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const ActRow& x,
                 float* out) {
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
    float sum = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const Block& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      const int16_t* bs = x.bsums + i * 16;
      int isum = 0, msum = 0;
      for (int g = 0; g < 8; g++) {
        uint8_t sc, mn;
        k4_scale_min(g, b.scales, &sc, &mn);
        const uint8_t* qs = b.qs + 32 * (g / 2);
        int gsum = 0;
        for (int l = 0; l < 32; l++) {
          int v = (g % 2) ? qs[l] >> 4 : qs[l] & 0xF;
          if constexpr (kFifthBit) v |= ((b.qh[l] >> g) & 1) << 4;
          gsum += v * q[32 * g + l];
        }
        isum += sc * gsum;
        msum += mn * (bs[2 * g] + bs[2 * g + 1]);
      }
      const float dx = x.ds[i];
      sum += dx * f16_to_f32(b.d) * static_cast<float>(isum) -
             dx * f16_to_f32(b.dmin) * static_cast<float>(msum);
    }
    out[r] = sum;
  }
}

void dot_rows_q6_k(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const ActRow& x,
                   float* out) {
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks = reinterpret_cast<const BlockQ6_K*>(w + static_cast<size_t>(r) * row_bytes);
    float sum = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const BlockQ6_K& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      int isum = 0;
      for (int half = 0; half < 2; half++) {
        const uint8_t* qh = b.qh + 32 * half;
        for (int s = 0; s < 4; s++) {  // 32 values: nibble of ql, two bits of qh
          const uint8_t* ql = b.ql + 64 * half + 32 * (s % 2);
          const int lo_shift = s < 2 ? 0 : 4, hi_shift = 2 * s;
          const int8_t* qx = q + 128 * half + 32 * s;
          int v[32];
          for (int l = 0; l < 32; l++)
            v[l] = (((ql[l] >> lo_shift) & 0xF) | (((qh[l] >> hi_shift) & 3) << 4)) - 32;
          int g0 = 0, g1 = 0;
          for (int l = 0; l < 16; l++) g0 += v[l] * qx[l];
          for (int l = 16; l < 32; l++) g1 += v[l] * qx[l];
          isum += b.scales[8 * half + 2 * s] * g0 + b.scales[8 * half + 2 * s + 1] * g1;
        }
      }
      sum += x.ds[i] * f16_to_f32(b.d) * static_cast<float>(isum);
    }
    out[r] = sum;
  }
}

// IQ4_XS: per super-block, d_w * d_x * sum over sub-blocks of (ls - 32) * sum(value * q_x).
void dot_rows_iq4_xs(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const ActRow& x,
                     float* out) {
  for (int64_t r = 0; r < n_rows; r++) {
    const auto* blocks =
        reinterpret_cast<const BlockIQ4_XS*>(w + static_cast<size_t>(r) * row_bytes);
    float sum = 0;
    for (int64_t i = 0; i < k / kQKK; i++) {
      const BlockIQ4_XS& b = blocks[i];
      const int8_t* q = x.qs + i * kQKK;
      int isum = 0;
      for (int ib = 0; ib < kQKK / kQK; ib++) {
        const uint8_t* qs = b.qs + 16 * ib;
        const int8_t* qx = q + kQK * ib;
        int gsum = 0;
        for (int j = 0; j < 16; j++)
          gsum += kIq4Values[qs[j] & 0xF] * qx[j] + kIq4Values[qs[j] >> 4] * qx[j + 16];
        isum += iq4xs_scale(b, ib) * gsum;
      }
      sum += x.ds[i] * f16_to_f32(b.d) * static_cast<float>(isum);
    }
    out[r] = sum;
  }
}

std::atomic<int> g_level{-1};

SimdLevel detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512vnni");
  return avx512 ? SimdLevel::Avx512 : avx2 ? SimdLevel::Avx2 : SimdLevel::Scalar;
#else
  return SimdLevel::Scalar;
#endif
}

}  // namespace

DotRowsFn dot_kernel_scalar(QuantType t) {
  switch (t) {
    case QuantType::Q4_0:
      return dot_rows_32<BlockQ4_0>;
    case QuantType::Q4_1:
      return dot_rows_32<BlockQ4_1>;
    case QuantType::Q5_0:
      return dot_rows_32<BlockQ5_0>;
    case QuantType::Q5_1:
      return dot_rows_32<BlockQ5_1>;
    case QuantType::Q8_0:
      return dot_rows_32<BlockQ8_0>;
    case QuantType::Q2_K:
      return dot_rows_q2_k;
    case QuantType::Q3_K:
      return dot_rows_q3_k;
    case QuantType::Q4_K:
      return dot_rows_k4<BlockQ4_K, false>;
    case QuantType::Q5_K:
      return dot_rows_k4<BlockQ5_K, true>;
    case QuantType::Q6_K:
      return dot_rows_q6_k;
    case QuantType::IQ4_NL:
      return dot_rows_32<BlockIQ4_NL>;
    case QuantType::IQ4_XS:
      return dot_rows_iq4_xs;
    default:
      return nullptr;
  }
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar:
      return "scalar";
    case SimdLevel::Avx2:
      return "avx2";
    case SimdLevel::Avx512:
      return "avx512-vnni";
  }
  return "?";
}

SimdLevel detected_simd_level() {
  static const SimdLevel level = detect();
  return level;
}

SimdLevel active_simd_level() {
  const int v = g_level.load(std::memory_order_relaxed);
  return v < 0 ? detected_simd_level() : static_cast<SimdLevel>(v);
}

void set_simd_level(SimdLevel level) {
  g_level.store(static_cast<int>(std::min(level, detected_simd_level())),
                std::memory_order_relaxed);
}

QuantizeActFn act_quantizer(SimdLevel level) {
  QuantizeActFn fn = level >= SimdLevel::Avx512 ? act_quantizer_avx512() : nullptr;
  if (!fn && level >= SimdLevel::Avx2) fn = act_quantizer_avx2();
  return fn ? fn : quantize_act_row_scalar;
}

DotRowsMultiFn dot_kernel_multi(QuantType t, SimdLevel level) {
  const bool avx2_runs = level >= SimdLevel::Avx2 && dot_kernel(t, level) == dot_kernel_avx2(t);
  return avx2_runs ? dot_kernel_multi_avx2(t) : nullptr;
}

DotRowsFn dot_kernel(QuantType t, SimdLevel level) {
  DotRowsFn fn = nullptr;
  if (level >= SimdLevel::Avx512) fn = dot_kernel_avx512(t);
  if (!fn && level >= SimdLevel::Avx2) fn = dot_kernel_avx2(t);
  return fn ? fn : dot_kernel_scalar(t);
}

}  // namespace wick::quantized
