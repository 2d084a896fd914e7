// f32 -> K-quant super-blocks (and Q8_K), following ggml's reference quantizers
// (quantize_row_*_K_ref, no importance matrix): per group, a scale (and min) is searched to
// minimise a weighted error, then the group scales are themselves quantized to 4, 6 or 8 bits and
// the values requantized against the stored scales. Same f32 operations in the same order, so
// results match llama.cpp.
#include <algorithm>

#include "quantized/blocks.h"
#include "quantized/formats.h"

namespace wick::quantized {

namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Symmetric levels in [-nmax, nmax) for one group, weighted by x^2; tries 18 scales around
// nmax/max and keeps the one with the best weighted least-squares fit. Returns the scale;
// L gets level + nmax.
float fit_symmetric(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; i++) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0.f;
  }
  auto level = [&](float iscale, int i) {
    return std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
  };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    const int l = level(iscale, i);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; i++) {
      const int l = level(iscale, i);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; i++) L[i] = static_cast<int8_t>(nmax + level(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q3_K's group fit: symmetric levels, then up to 5 rounds of moving single levels while the
// x^2-weighted fit improves. L gets level + nmax.
float fit_q3(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; i++) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0.f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; i++) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
      if (slx > 0) {
        float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
        int new_l = nearest_int(x[i] * sl2 / slx);
        new_l = std::max(-nmax, std::min(nmax - 1, new_l));
        if (new_l != L[i]) {
          slx += w * x[i] * static_cast<float>(new_l);
          sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; i++) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Affine levels in [0, nmax] for one group (x ~ scale * l - min): tries nstep + 1 scales and
// keeps the weighted least-squares (scale, min) pair with the smallest error (absolute error
// when use_mad). Returns the scale; *the_min gets the (non-negative) min.
float fit_affine(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                 uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; i++) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, 0);
    *the_min = -min;
    return 0.f;
  }
  auto err = [&](float diff) { return use_mad ? std::fabs(diff) : diff * diff; };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; i++) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    best_error += weights[i] * err(scale * static_cast<float>(L[i]) + min - x[i]);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; i++) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i], fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; i++)
        cur_error += weights[i] * err(this_scale * static_cast<float>(Laux[i]) + this_min - x[i]);
      if (cur_error < best_error) {
        std::copy(Laux, Laux + n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Packs 6-bit scale/min pairs of the 8 groups of a Q4_K/Q5_K block (see k4_scale_min).
void pack_k4_scales(const uint8_t* ls, const uint8_t* lm, uint8_t* out) {
  for (int j = 0; j < 8; j++) {
    if (j < 4) {
      out[j] = ls[j];
      out[j + 4] = lm[j];
    } else {
      out[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      out[j - 4] = static_cast<uint8_t>(out[j - 4] | ((ls[j] >> 4) << 6));
      out[j] = static_cast<uint8_t>(out[j] | ((lm[j] >> 4) << 6));
    }
  }
}

// The shared body of Q4_K and Q5_K: fits 8 groups of 32 and writes d, dmin, scales; L gets the
// final levels in [0, nmax].
template <typename Block>
void quantize_k4_groups(const float* x, Block& b, uint8_t* L, int nmax, float rmin, int nstep) {
  float mins[8], scales[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; j++) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; l++) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = fit_affine(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f,
                           nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; j++) {
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
  }
  std::memset(b.scales, 0, sizeof(b.scales));
  pack_k4_scales(ls, lm, b.scales);
  b.d = f32_to_f16(max_scale / 63.f);
  b.dmin = f32_to_f16(max_min / 63.f);
  for (int j = 0; j < 8; j++) {
    uint8_t sc, m;
    k4_scale_min(j, b.scales, &sc, &m);
    const float d = f16_to_f32(b.d) * static_cast<float>(sc);
    if (d == 0) continue;
    const float dm = f16_to_f32(b.dmin) * static_cast<float>(m);
    for (int ii = 0; ii < 32; ii++)
      L[32 * j + ii] =
          static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + ii] + dm) / d))));
  }
}

// 2-bit fields of four 32-element runs share one byte: run s lands in bits 2s..2s+1.
void pack_crumbs(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQKK; j += 128)
    for (int l = 0; l < 32; l++)
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
}

}  // namespace

void quantize_row_q2_k(const float* x, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; i++, x += kQKK) {
    BlockQ2_K& b = blocks[i];
    uint8_t L[kQKK], Laux[16];
    float weights[16], mins[16], scales[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; j++) {
      for (int l = 0; l < 16; l++) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] =
          fit_affine(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; j++)
        b.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      b.d = f32_to_f16(max_scale / 15.f);
    } else {
      std::memset(b.scales, 0, 16);
      b.d = f32_to_f16(0.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < 16; j++)
        b.scales[j] = static_cast<uint8_t>(b.scales[j] | (nearest_int(iscale * mins[j]) << 4));
      b.dmin = f32_to_f16(max_min / 15.f);
    } else {
      b.dmin = f32_to_f16(0.f);
    }
    for (int j = 0; j < 16; j++) {
      const float d = f16_to_f32(b.d) * static_cast<float>(b.scales[j] & 0xF);
      if (d == 0) continue;
      const float dm = f16_to_f32(b.dmin) * static_cast<float>(b.scales[j] >> 4);
      for (int ii = 0; ii < 16; ii++)
        L[16 * j + ii] =
            static_cast<uint8_t>(std::max(0, std::min(3, nearest_int((x[16 * j + ii] + dm) / d))));
    }
    pack_crumbs(L, b.qs);
  }
}

void quantize_row_q3_k(const float* x, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; i++, x += kQKK) {
    BlockQ3_K& b = blocks[i];
    int8_t L[kQKK];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; j++) {
      scales[j] = fit_q3(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(b.scales, 0, 12);
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; j++) {
        int l = std::max(-32, std::min(31, static_cast<int>(static_cast<int8_t>(
                                               nearest_int(iscale * scales[j]))))) +
                32;
        if (j < 8)
          b.scales[j] = static_cast<uint8_t>(l & 0xF);
        else
          b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | ((l & 0xF) << 4));
        l >>= 4;
        b.scales[j % 4 + 8] = static_cast<uint8_t>(b.scales[j % 4 + 8] | (l << (2 * (j / 4))));
      }
      b.d = f32_to_f16(1 / iscale);
    } else {
      b.d = f32_to_f16(0.f);
    }
    int8_t sc[16];
    q3k_scales(b.scales, sc);
    for (int j = 0; j < 16; j++) {
      const float d = f16_to_f32(b.d) * static_cast<float>(sc[j]);
      if (d == 0) continue;
      for (int ii = 0; ii < 16; ii++)
        L[16 * j + ii] =
            static_cast<int8_t>(std::max(-4, std::min(3, nearest_int(x[16 * j + ii] / d))) + 4);
    }
    // High bit of element j goes to bit j / 32 of hmask[j % 32]; qs keeps the low 2 bits.
    std::memset(b.hmask, 0, sizeof(b.hmask));
    uint8_t low[kQKK];
    for (int j = 0; j < kQKK; j++) {
      if (L[j] > 3) b.hmask[j % 32] = static_cast<uint8_t>(b.hmask[j % 32] | (1u << (j / 32)));
      low[j] = static_cast<uint8_t>(L[j] > 3 ? L[j] - 4 : L[j]);
    }
    pack_crumbs(low, b.qs);
  }
}

void quantize_row_q4_k(const float* x, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; i++, x += kQKK) {
    uint8_t L[kQKK];
    quantize_k4_groups(x, blocks[i], L, 15, -1.f, 20);
    uint8_t* q = blocks[i].qs;
    for (int j = 0; j < kQKK; j += 64, q += 32)
      for (int l = 0; l < 32; l++) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_row_q5_k(const float* x, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; i++, x += kQKK) {
    BlockQ5_K& b = blocks[i];
    uint8_t L[kQKK];
    quantize_k4_groups(x, b, L, 31, -0.5f, 15);
    std::memset(b.qh, 0, sizeof(b.qh));
    uint8_t* ql = b.qs;
    for (int c = 0; c < 4; c++, ql += 32) {
      for (int j = 0; j < 32; j++) {
        const int l1 = L[64 * c + j], l2 = L[64 * c + j + 32];
        b.qh[j] =
            static_cast<uint8_t>(b.qh[j] | ((l1 >> 4) << (2 * c)) | ((l2 >> 4) << (2 * c + 1)));
        ql[j] = static_cast<uint8_t>((l1 & 0xF) | ((l2 & 0xF) << 4));
      }
    }
  }
}

void quantize_row_q6_k(const float* x, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; i++, x += kQKK) {
    BlockQ6_K& b = blocks[i];
    int8_t L[kQKK];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ib++) {
      scales[ib] = fit_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&b, 0, sizeof(b));
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = f32_to_f16(1 / iscale);
    for (int ib = 0; ib < 16; ib++)
      b.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < 16; j++) {
      const float d = f16_to_f32(b.d) * static_cast<float>(b.scales[j]);
      if (d == 0) continue;
      for (int ii = 0; ii < 16; ii++)
        L[16 * j + ii] =
            static_cast<int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d))) + 32);
    }
    for (int half = 0; half < 2; half++) {
      uint8_t* ql = b.ql + 64 * half;
      uint8_t* qh = b.qh + 32 * half;
      const int8_t* Lh = L + 128 * half;
      for (int l = 0; l < 32; l++) {
        const int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
                                     ((q4 >> 4) << 6));
      }
    }
  }
}

// Q8_K: the signed extreme maps to -127; the group sums feed the K-quant dot products' min terms.
void quantize_row_q8_k(const float* x, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; i++, x += kQKK) {
    BlockQ8_K& b = blocks[i];
    float max = 0, amax = 0;
    for (int j = 0; j < kQKK; j++) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax == 0) {
      std::memset(&b, 0, sizeof(b));
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < kQKK; j++)
      b.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int j = 0; j < 16; j++) {
      int sum = 0;
      for (int ii = 0; ii < 16; ii++) sum += b.qs[16 * j + ii];
      b.bsums[j] = static_cast<int16_t>(sum);
    }
    b.d = 1 / iscale;
  }
}

}  // namespace wick::quantized
