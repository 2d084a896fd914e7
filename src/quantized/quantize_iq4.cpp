// f32 -> IQ4_NL / IQ4_XS. The codes index a fixed non-linear table (kIq4Values), so a block's
// only freedom is its scale: a few candidate scales put the block's extreme at or inside either
// end of the table, each candidate's nearest levels are refitted by least squares, and the scale
// with the smallest squared error is kept. The codes are then chosen again against the scale as
// stored (f16, and for IQ4_XS the 6-bit sub-block scale), so every element takes the level
// nearest to it. Not ggml's search (no importance weights), but the blocks are the format's:
// any decoder reads them the same.
#include <algorithm>

#include "quantized/blocks.h"
#include "quantized/formats.h"

namespace wick::quantized {

namespace {

constexpr int kLevels = 16;
constexpr float kZeroMax = 1e-15f;  // blocks with a smaller largest |x| are all zero

// The index of the level nearest to v (the lower one on a tie): binary search over the midpoints,
// which are exact halves in f32.
int nearest_level(float v) {
  int lo = 0, hi = kLevels - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    const float boundary =
        0.5f * static_cast<float>(kIq4Values[mid] + kIq4Values[mid + 1]);  // between mid, mid+1
    if (v <= boundary)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// Nearest levels of x / d (n elements); d == 0 gives level 8 (value 1), multiplied by zero.
void pick_levels(const float* x, int n, float d, uint8_t* L) {
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; j++) L[j] = static_cast<uint8_t>(d != 0 ? nearest_level(x[j] * id) : 8);
}

// The scale that minimises sum (x - d * value)^2 over n elements, with the codes in L.
float fit_iq4(const float* x, int n, uint8_t* L) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; j++) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < kZeroMax) {
    std::fill(L, L + n, uint8_t{8});
    return 0.0f;
  }
  float best_score = -1, best_scale = 0;
  uint8_t cand[kQKK];
  // The extreme at table position `t` (the negative end -127, or the positive end 113), then
  // pulled inside by up to ~20 levels' worth: larger scales trade the extreme's precision for
  // the rest's.
  for (int end = 0; end < 2; end++) {
    for (int step = 0; step <= 20; step += 2) {
      const float t = end == 0 ? static_cast<float>(kIq4Values[0] + step)
                               : static_cast<float>(kIq4Values[kLevels - 1] - step);
      pick_levels(x, n, max / t, cand);
      float sumxv = 0, sumv2 = 0;
      for (int j = 0; j < n; j++) {
        const auto v = static_cast<float>(kIq4Values[cand[j]]);
        sumxv += x[j] * v;
        sumv2 += v * v;
      }
      // Error at the least-squares scale sumxv / sumv2: sum x^2 - sumxv^2 / sumv2.
      const float score = sumxv * sumxv / sumv2;
      if (score > best_score) {
        best_score = score;
        best_scale = sumxv / sumv2;
        std::copy(cand, cand + n, L);
      }
    }
  }
  return best_scale;
}

void pack_codes(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; j++) qs[j] = static_cast<uint8_t>(L[j] | (L[j + kQK / 2] << 4));
}

}  // namespace

void quantize_row_iq4_nl(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t i = 0; i < n / kQK; i++, x += kQK) {
    uint8_t L[kQK];
    b[i].d = f32_to_f16(fit_iq4(x, kQK, L));
    pick_levels(x, kQK, f16_to_f32(b[i].d), L);
    pack_codes(L, b[i].qs);
  }
}

void quantize_row_iq4_xs(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  constexpr int kSub = kQKK / kQK;
  for (int64_t i = 0; i < n / kQKK; i++, x += kQKK) {
    BlockIQ4_XS& blk = b[i];
    uint8_t L[kQK];
    float scales[kSub], smax = 0, samax = 0;
    for (int ib = 0; ib < kSub; ib++) {
      scales[ib] = fit_iq4(x + kQK * ib, kQK, L);
      if (std::fabs(scales[ib]) > samax) {
        samax = std::fabs(scales[ib]);
        smax = scales[ib];
      }
    }
    // The sub-block scale of largest magnitude becomes ls - 32 = -32 (the 6 bits' widest side).
    blk.d = f32_to_f16(smax / -32.0f);
    const float d = f16_to_f32(blk.d);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    blk.scales_h = 0;
    std::fill(blk.scales_l, blk.scales_l + kSub / 2, uint8_t{0});
    for (int ib = 0; ib < kSub; ib++) {
      const int ls = std::clamp(nearest_int(scales[ib] * id), -32, 31) + 32;
      blk.scales_l[ib / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (ib % 2)));
      blk.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * ib));
      pick_levels(x + kQK * ib, kQK, d * static_cast<float>(ls - 32), L);
      pack_codes(L, blk.qs + 16 * ib);
    }
  }
}

}  // namespace wick::quantized
