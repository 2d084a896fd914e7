// Quantized block formats: bit-exactness with ggml (reference vectors from the gguf package),
// round-trip error bounds derived per format, QMatMul against dequantize-then-f64-matmul on every
// SIMD level this CPU has, f16/bf16 outputs, plain types and every error path.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "harness.h"
#include "quantized/blocks.h"
#include "quantized/kernels.h"
#include "quantized/packed.h"
#include "quantized_ref.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

namespace q = wick::quantized;

const std::vector<QuantType> kBlockTypes = {
    QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0,   QuantType::Q5_1,  QuantType::Q8_0,
    QuantType::Q8_1, QuantType::Q2_K, QuantType::Q3_K,   QuantType::Q4_K,  QuantType::Q5_K,
    QuantType::Q6_K, QuantType::Q8_K, QuantType::IQ4_NL, QuantType::IQ4_XS};

const char* type_name(QuantType t) {
  return quant_type_info(t)->name;
}
int64_t block_elems(QuantType t) {
  return quant_type_info(t)->block_elems;
}

uint32_t float_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// ---- reference vectors (scripts/gen_quant_vectors.py) --------------------------------------

struct RefVector {
  QuantType type;
  std::vector<float> input;  // empty for the K formats (gguf cannot quantize them)
  std::vector<uint8_t> blocks;
  std::vector<float> dequantized;
};

RefVector load_vector(const std::string& name) {
  const auto path = std::filesystem::path(WICK_TESTS_DIR) / "data" / "quantized" / (name + ".bin");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("missing reference vector " + path.string());
  auto u32 = [&] {
    uint32_t v = 0;
    f.read(reinterpret_cast<char*>(&v), 4);
    return v;
  };
  char magic[4];
  f.read(magic, 4);
  if (std::string(magic, 4) != "WQV1") throw std::runtime_error("bad magic in " + path.string());
  RefVector r;
  r.type = static_cast<QuantType>(u32());
  const uint32_t n = u32();
  if (u32()) {
    r.input.resize(n);
    f.read(reinterpret_cast<char*>(r.input.data()), n * 4);
  }
  r.blocks.resize(u32());
  f.read(reinterpret_cast<char*>(r.blocks.data()), static_cast<std::streamsize>(r.blocks.size()));
  r.dequantized.resize(n);
  f.read(reinterpret_cast<char*>(r.dequantized.data()), n * 4);
  if (!f) throw std::runtime_error("truncated reference vector " + path.string());
  return r;
}

TEST(QuantizedGgml, QuantizeAndDequantizeMatchReferenceBitForBit) {
  for (const char* name : {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k",
                           "q6_k", "iq4_nl", "iq4_xs"}) {
    SCOPED_TRACE(name);
    const RefVector r = load_vector(name);
    const int64_t n = static_cast<int64_t>(r.dequantized.size());
    ASSERT_STREQ(type_name(r.type), name);
    if (!r.input.empty()) {
      const QTensor qt = quantize(Tensor::from_vec(r.input, {n}), r.type);
      ASSERT_EQ(qt.nbytes(), r.blocks.size());
      const size_t bb = static_cast<size_t>(quant_type_info(r.type)->block_bytes);
      for (size_t i = 0; i < r.blocks.size(); i++)
        ASSERT_EQ(qt.data()[i], r.blocks[i]) << "byte " << i % bb << " of block " << i / bb;
    }
    const std::vector<float> got =
        dequantize(QTensor(r.type, Shape{n}, r.blocks), DType::F32).to_vec<float>();
    for (int64_t i = 0; i < n; i++)
      ASSERT_EQ(float_bits(got[i]), float_bits(r.dequantized[i]))
          << "element " << i << ": " << got[i] << " vs " << r.dequantized[i];
  }
}

// ---- round-trip error bounds ------------------------------------------------------------------

// f32 slack for a dequantized value of magnitude about `mag`.
double fp_slack(double mag) {
  return 4e-7 * mag + 1e-30;
}

// The 32-element formats: d (and m) are computed in f32, then stored as f16, so the bound is
// the rounding half-step plus the stored-scale error times the largest code:
//   symmetric (q4_0, q5_0; levels -H..H-1, d = max/-H): |e| <= |d|/2, except that the side
//     opposite the extreme tops out at level H-1: |e| <= |d| * (t - (H-1)) for t = x/d > H-1/2;
//   affine (q4_1, q5_1; levels 0..2^b-1, d = (max-min)/(2^b-1)): |e| <= d/2;
//   q8 (levels +-127, d = amax/127): |e| <= d/2.
// K formats: with the stored group scale d_g and min m_g, every element takes the nearest level:
//   |e| <= d_g/2 + distance(x, [level_min, level_max] * d_g - m_g) (the clip distance);
// and, without outliers, the fitted scales keep the clipping small: the per-group RMS error stays
// below 1.5x the uniform-quantization noise of a plain min/max grid, step/sqrt(12)
// (step = range/levels). Test data change scale per block, i.e. per super-block for K formats.
// A subnormal f16 super-block scale is off by up to 2^-25 absolute, which reaches every group
// scale (x up to 63) and level: that adds 63 * levels * 2^-25 to the allowed RMS.
void check_round_trip_32(QuantType t, const float* x, const uint8_t* blk, const float* y) {
  uint16_t d16, m16 = 0;
  std::memcpy(&d16, blk, 2);
  const bool affine = t == QuantType::Q4_1 || t == QuantType::Q5_1;
  if (affine) std::memcpy(&m16, blk + 2, 2);
  const float d = q::f16_to_f32(d16), m = q::f16_to_f32(m16);
  float amax = 0, mx = 0, mn = INFINITY, hi = -INFINITY;
  for (int j = 0; j < 32; j++) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      mx = x[j];
    }
    mn = std::min(mn, x[j]);
    hi = std::max(hi, x[j]);
  }
  for (int j = 0; j < 32; j++) {
    double bound;
    if (t == QuantType::Q8_0 || t == QuantType::Q8_1) {
      const double d_exact = amax / 127.0f;
      bound = d_exact / 2 + 127 * std::fabs(d_exact - d);
    } else if (affine) {
      const int top = t == QuantType::Q4_1 ? 15 : 31;
      const double d_exact = (hi - mn) / static_cast<float>(top);
      bound = d_exact / 2 + top * std::fabs(d_exact - d) + std::fabs(static_cast<double>(mn) - m);
    } else {
      const int half = t == QuantType::Q4_0 ? 8 : 16;
      const double d_exact = mx / static_cast<float>(-half);
      const double tj = d_exact != 0 ? x[j] / d_exact : 0;
      bound = std::fabs(d_exact) / 2 + std::fabs(d_exact) * std::max(0.0, tj - (half - 0.5)) +
              half * std::fabs(d_exact - d);
    }
    ASSERT_LE(std::fabs(static_cast<double>(x[j]) - y[j]), bound + fp_slack(amax))
        << type_name(t) << " element " << j << " x=" << x[j] << " y=" << y[j];
  }
}

// Group scales/mins/level ranges of a K block as dequantization sees them.
struct KGroups {
  int size = 0, count = 0, lo = 0, hi = 0;  // levels lo..hi (value = d_g * level - m_g)
  float d[16], m[16];
  bool subnormal_scales = false;  // the f16 super-block scale or min is subnormal
};

KGroups k_groups(QuantType t, const uint8_t* blk) {
  KGroups g;
  auto f16 = [&](size_t off) {
    uint16_t h;
    std::memcpy(&h, blk + off, 2);
    return q::f16_to_f32(h);
  };
  if (t == QuantType::Q2_K) {
    const auto& b = *reinterpret_cast<const q::BlockQ2_K*>(blk);
    g = {16, 16, 0, 3, {}, {}};
    for (int i = 0; i < 16; i++) {
      g.d[i] = f16(80) * static_cast<float>(b.scales[i] & 0xF);
      g.m[i] = f16(82) * static_cast<float>(b.scales[i] >> 4);
    }
  } else if (t == QuantType::Q3_K) {
    const auto& b = *reinterpret_cast<const q::BlockQ3_K*>(blk);
    int8_t sc[16];
    q::q3k_scales(b.scales, sc);
    g = {16, 16, -4, 3, {}, {}};
    for (int i = 0; i < 16; i++) {
      g.d[i] = f16(108) * static_cast<float>(sc[i]);
      g.m[i] = 0;
    }
  } else if (t == QuantType::Q4_K || t == QuantType::Q5_K) {
    g = {32, 8, 0, t == QuantType::Q4_K ? 15 : 31, {}, {}};
    for (int i = 0; i < 8; i++) {
      uint8_t sc, mn;
      q::k4_scale_min(i, blk + 4, &sc, &mn);
      g.d[i] = f16(0) * static_cast<float>(sc);
      g.m[i] = f16(2) * static_cast<float>(mn);
    }
  } else if (t == QuantType::Q6_K) {
    const auto& b = *reinterpret_cast<const q::BlockQ6_K*>(blk);
    g = {16, 16, -32, 31, {}, {}};
    for (int i = 0; i < 16; i++) {
      g.d[i] = f16(208) * static_cast<float>(b.scales[i]);
      g.m[i] = 0;
    }
  } else {  // Q8_K: one f32 scale for 256
    float d;
    std::memcpy(&d, blk, 4);
    g = {256, 1, -128, 127, {d}, {0}};
  }
  const std::vector<size_t> f16_fields = t == QuantType::Q2_K   ? std::vector<size_t>{80, 82}
                                         : t == QuantType::Q3_K ? std::vector<size_t>{108}
                                         : t == QuantType::Q6_K ? std::vector<size_t>{208}
                                         : t == QuantType::Q8_K ? std::vector<size_t>{}
                                                                : std::vector<size_t>{0, 2};
  for (size_t off : f16_fields) g.subnormal_scales |= std::fabs(f16(off)) < std::ldexp(1.0f, -14);
  return g;
}

void check_round_trip_k(QuantType t, const float* x, const uint8_t* blk, const float* y,
                        bool check_rms) {
  const KGroups g = k_groups(t, blk);
  for (int gi = 0; gi < g.count; gi++) {
    const float* xg = x + gi * g.size;
    const float* yg = y + gi * g.size;
    const double d = std::fabs(g.d[gi]);
    double lo = static_cast<double>(g.d[gi]) * g.lo - g.m[gi],
           hi = static_cast<double>(g.d[gi]) * g.hi - g.m[gi];
    if (lo > hi) std::swap(lo, hi);
    double amax = 0, xmin = INFINITY, xmax = -INFINITY, sq = 0;
    for (int j = 0; j < g.size; j++) {
      amax = std::max(amax, std::fabs(static_cast<double>(xg[j])));
      xmin = std::min<double>(xmin, xg[j]);
      xmax = std::max<double>(xmax, xg[j]);
    }
    for (int j = 0; j < g.size; j++) {
      const double clip = std::max({0.0, lo - xg[j], xg[j] - hi});
      const double e = std::fabs(static_cast<double>(xg[j]) - yg[j]);
      sq += e * e;
      ASSERT_LE(e, d / 2 + clip + fp_slack(amax) + 1e-6 * d)
          << type_name(t) << " group " << gi << " element " << j << " x=" << xg[j]
          << " y=" << yg[j];
    }
    // Plain min/max grid with the format's level count (symmetric formats: amax over half the
    // levels).
    const bool symmetric = g.lo < 0;
    const double step =
        symmetric ? amax / -g.lo : (std::max(xmax, 0.0) - std::min(xmin, 0.0)) / g.hi;
    const double rms = std::sqrt(sq / g.size);
    // 2-3 bit grids: the 4-bit group scales dominate; an outlier makes the scale grid coarse.
    if (check_rms && t != QuantType::Q2_K && t != QuantType::Q3_K) {
      const double subnormal =
          g.subnormal_scales ? 63.0 * (g.hi - g.lo + 1) * std::ldexp(1.0, -25) : 0.0;
      ASSERT_LE(rms, 1.5 * step / std::sqrt(12.0) + subnormal + fp_slack(amax))
          << type_name(t) << " group " << gi << " rms error " << rms << " step " << step;
    }
  }
}

// IQ4 formats: per group of 32 the scale dl (iq4_nl: d; iq4_xs: d * (ls - 32)) times the 16
// table levels; every element takes the nearest level, so |e| <= half the widest gap (12 |dl|)
// plus the clip distance outside [-127, 113] dl. Without outliers the fitted scale keeps the
// RMS error below 1.5x that of q4_0's uniform grid (step amax / 8) with its noise step/sqrt(12).
void check_round_trip_iq4(QuantType t, const float* x, const uint8_t* blk, const float* y,
                          bool check_rms) {
  const int groups = t == QuantType::IQ4_NL ? 1 : 8;
  uint16_t d16;
  std::memcpy(&d16, blk, 2);
  const double d = q::f16_to_f32(d16);
  for (int g = 0; g < groups; g++) {
    const double dl = t == QuantType::IQ4_NL
                          ? d
                          : d * q::iq4xs_scale(*reinterpret_cast<const q::BlockIQ4_XS*>(blk), g);
    const float* xg = x + 32 * g;
    const float* yg = y + 32 * g;
    double lo = -127 * dl, hi = 113 * dl, amax = 0, sq = 0;
    if (lo > hi) std::swap(lo, hi);
    for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(static_cast<double>(xg[j])));
    for (int j = 0; j < 32; j++) {
      const double clip = std::max({0.0, lo - xg[j], xg[j] - hi});
      const double e = std::fabs(static_cast<double>(xg[j]) - yg[j]);
      sq += e * e;
      ASSERT_LE(e, 12 * std::fabs(dl) + clip + fp_slack(amax))
          << type_name(t) << " group " << g << " element " << j << " x=" << xg[j] << " y=" << yg[j]
          << " dl=" << dl;
    }
    const double subnormal =
        std::fabs(d) < std::ldexp(1.0, -14) ? 32 * 127 * std::ldexp(1.0, -25) : 0.0;
    if (check_rms) {
      ASSERT_LE(std::sqrt(sq / 32), 1.5 * amax / 8 / std::sqrt(12.0) + subnormal + fp_slack(amax))
          << type_name(t) << " group " << g;
    }
  }
}

TEST(QuantTypes, NamesFindTheirTypes) {
  int known = 0;
  for (uint32_t id = 0; id < 64; id++) {
    const QuantTypeInfo* info = quant_type_info(id);
    if (!info) continue;
    known++;
    EXPECT_EQ(quant_type_named(info->name), info) << info->name;
  }
  EXPECT_EQ(known, 22);
  EXPECT_EQ(quant_type_named("q8_0")->type, QuantType::Q8_0);
  EXPECT_EQ(quant_type_named("Q8_0"), nullptr);
  EXPECT_EQ(quant_type_named(""), nullptr);
  EXPECT_EQ(quant_type_named("q9_9"), nullptr);
}

TEST(QuantizedRoundTrip, ErrorWithinFormatBound) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (QuantType t : kBlockTypes) {
    SCOPED_TRACE(type_name(t));
    const int64_t block = block_elems(t), k = 2 * std::max<int64_t>(block, 64), rows = 5;
    const std::vector<float> x = block_test_data(rng, rows, k, block);
    const QTensor qt = quantize(Tensor::from_vec(x, {rows, k}), t);
    EXPECT_EQ(qt.shape(), (Shape{rows, k}));
    EXPECT_EQ(qt.nbytes(), static_cast<size_t>(rows * k / block * quant_type_info(t)->block_bytes));
    const std::vector<float> y = dequantize(qt).to_vec<float>();
    const size_t bb = static_cast<size_t>(quant_type_info(t)->block_bytes);
    for (int64_t b = 0; b < rows * k / block; b++) {
      const uint8_t* blk = qt.data() + static_cast<size_t>(b) * bb;
      if (t == QuantType::IQ4_NL || t == QuantType::IQ4_XS)
        check_round_trip_iq4(t, x.data() + b * block, blk, y.data() + b * block, b % 5 != 3);
      else if (block == 32)
        check_round_trip_32(t, x.data() + b * block, blk, y.data() + b * block);
      else
        check_round_trip_k(t, x.data() + b * block, blk, y.data() + b * block, b % 5 != 3);
      if (::testing::Test::HasFatalFailure()) return;
    }
    // Zero blocks (kind 1) come back as exact zeros.
    for (int64_t j = 0; j < block; j++) EXPECT_EQ(y[static_cast<size_t>(block + j)], 0.0f);
  }
}

TEST(QuantizedRoundTrip, ActivationSumsMatchValues) {
  // Q8_1's s and Q8_K's bsums are what the Q4_1/Q5_1 and K-quant dot products rely on.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const std::vector<float> x = block_test_data(rng, 1, 512, 32);
  const QTensor q81 = quantize(Tensor::from_vec(x, {512}), QuantType::Q8_1);
  for (int b = 0; b < 16; b++) {
    const auto& blk = reinterpret_cast<const q::BlockQ8_1*>(q81.data())[b];
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += blk.qs[j];
    const float d_exact = [&] {
      float a = 0;
      for (int j = 0; j < 32; j++) a = std::max(a, std::fabs(x[static_cast<size_t>(32 * b + j)]));
      return a / 127.0f;
    }();
    EXPECT_EQ(blk.s, q::f32_to_f16(d_exact * static_cast<float>(sum))) << "block " << b;
  }
  const QTensor q8k = quantize(Tensor::from_vec(x, {512}), QuantType::Q8_K);
  for (int b = 0; b < 2; b++) {
    const auto& blk = reinterpret_cast<const q::BlockQ8_K*>(q8k.data())[b];
    for (int g = 0; g < 16; g++) {
      int sum = 0;
      for (int j = 0; j < 16; j++) sum += blk.qs[16 * g + j];
      EXPECT_EQ(blk.bsums[g], sum) << "block " << b << " group " << g;
    }
  }
}

TEST(QuantizedRoundTrip, DequantizeToHalfTypesRoundsF32) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (QuantType t : {QuantType::Q4_1, QuantType::Q6_K, QuantType::Q8_0}) {
    const int64_t k = 256;
    const QTensor qt =
        quantize(Tensor::from_vec(block_test_data(rng, 3, k, block_elems(t)), {3, k}), t);
    const std::vector<float> f32 = dequantize(qt, DType::F32).to_vec<float>();
    const Tensor h = dequantize(qt, DType::F16);
    const Tensor b = dequantize(qt, DType::BF16);
    ASSERT_EQ(h.dtype(), DType::F16);
    ASSERT_EQ(b.dtype(), DType::BF16);
    ASSERT_EQ(h.shape(), (Shape{3, k}));
    const std::vector<f16> hv = h.to_vec<f16>();
    const std::vector<bf16> bv = b.to_vec<bf16>();
    for (size_t i = 0; i < f32.size(); i++) {
      ASSERT_EQ(hv[i].bits, f16(f32[i]).bits) << type_name(t) << " element " << i;
      ASSERT_EQ(bv[i].bits, bf16(f32[i]).bits) << type_name(t) << " element " << i;
    }
  }
}

TEST(QuantizedRoundTrip, PlainTypesAndInputDtypes) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const Ref r = random_ref(rng, {4, 6});
  for (QuantType t : {QuantType::F32, QuantType::F16, QuantType::BF16}) {
    const QTensor qt = quantize(make_tensor(r, DType::F64, Device::cpu(), Variant::Transposed), t);
    const DType dt = t == QuantType::F32   ? DType::F32
                     : t == QuantType::F16 ? DType::F16
                                           : DType::BF16;
    // Values come back as the input rounded to the plain type (f64 -> f32 -> f16/bf16).
    const Ref want = round_ref(round_ref(r, DType::F32), dt);
    WICK_EXPECT_CLOSE(dequantize(qt, DType::F32), want, Tol{0, 0});
  }
  // f16 input quantizes its own values.
  const Tensor x16 = make_tensor(r, DType::F16, Device::cpu(), Variant::Permuted);
  const QTensor from16 = quantize(x16, QuantType::F32);
  WICK_EXPECT_CLOSE(dequantize(from16), round_ref(r, DType::F16), Tol{0, 0});
}

TEST(QuantizedTensor, ViewsExternalMemoryAndCopiesMisalignedData) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const std::vector<float> x = block_test_data(rng, 2, 64, 32);
  const QTensor owned = quantize(Tensor::from_vec(x, {2, 64}), QuantType::Q4_1);
  auto buffer = std::make_shared<std::vector<uint8_t>>(owned.nbytes() + 8);
  std::memcpy(buffer->data() + 4, owned.data(), owned.nbytes());
  const QTensor view(QuantType::Q4_1, Shape{2, 64}, buffer, buffer->data() + 4, owned.nbytes());
  EXPECT_EQ(view.data(), buffer->data() + 4);  // aligned: read in place
  std::memcpy(buffer->data() + 1, owned.data(), owned.nbytes());
  const QTensor copied(QuantType::Q4_1, Shape{2, 64}, buffer, buffer->data() + 1, owned.nbytes());
  EXPECT_NE(copied.data(), buffer->data() + 1);    // misaligned: copied
  std::memset(buffer->data(), 0, buffer->size());  // the copy does not see later writes
  EXPECT_EQ(dequantize(copied).to_vec<float>(), dequantize(owned).to_vec<float>());
  EXPECT_EQ(view.rows(), 2);
  EXPECT_EQ(view.row_bytes(), 40u);
  EXPECT_EQ(view.str(), "QTensor[2, 64; q4_1]");
}

// ---- QMatMul ----------------------------------------------------------------------------------

std::vector<q::SimdLevel> levels_to_test() {
  std::vector<q::SimdLevel> levels = {q::SimdLevel::Scalar};
  if (q::detected_simd_level() >= q::SimdLevel::Avx2) levels.push_back(q::SimdLevel::Avx2);
  if (q::detected_simd_level() >= q::SimdLevel::Avx512) levels.push_back(q::SimdLevel::Avx512);
  return levels;
}

// Restores the detected level when a test ends, also on failure.
struct SimdLevelGuard {
  ~SimdLevelGuard() { q::set_simd_level(q::detected_simd_level()); }
};

// One test per format family keeps each short (the K formats' quantizers are slow).
void check_matmul_on_every_level(const std::vector<QuantType>& types) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  SimdLevelGuard guard;
  ThreadCountGuard one_thread(1);
  for (QuantType t : types) {
    const int64_t block = block_elems(t);
    // Odd block counts exercise the SIMD tails: 7 blocks of 32 = a run of 4 + a pair + a single in
    // the packed layouts, 39 = two 16-block chunks + the same tail; 3 K blocks.
    for (int64_t k : {block == 32 ? 7 * block : 3 * block, block == 32 ? 39 * block : 2 * block}) {
      for (int64_t n : {1, 5, 67}) {
        const std::vector<float> wf = block_test_data(rng, n, k, block);
        const QTensor qw = quantize(Tensor::from_vec(wf, {n, k}), t);
        const std::vector<float> w = dequantize(qw).to_vec<float>();
        for (const Shape& xs : {Shape{1, k}, Shape{7, k}, Shape{2, 3, k}, Shape{11, k}}) {
          const Ref xr = random_ref(rng, xs, -3, 3);
          const Tensor x = make_tensor(xr, DType::F32, Device::cpu());
          const int64_t m = xr.numel() / k;
          const Expected want = expected_qmatmul(w, round_ref(xr, DType::F32).v, m, n, k,
                                                 q::act_kind(t) == q::ActKind::Block32 ? 32 : 256);
          for (q::SimdLevel level : levels_to_test()) {
            q::set_simd_level(level);
            ASSERT_EQ(q::active_simd_level(), level);
            const std::string what = std::string(type_name(t)) + " k=" + std::to_string(k) +
                                     " n=" + std::to_string(n) + " x=" + xs.str() + " " +
                                     q::simd_level_name(level);
            const QMatMul mm(qw);  // packed for this level's kernels
            EXPECT_EQ(mm.in_features(), k);
            EXPECT_EQ(mm.out_features(), n);
            const Tensor y = mm.forward(x);
            std::vector<int64_t> want_dims = xs.dims();
            want_dims.back() = n;
            ASSERT_EQ(y.shape(), Shape(want_dims)) << what;
            check_qmatmul(y, want, what);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(QMatMul, MatchesDequantizedF64MatmulOnEverySimdLevel32) {
  check_matmul_on_every_level(
      {QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0, QuantType::Q5_1, QuantType::Q8_0});
}

TEST(QMatMul, MatchesDequantizedF64MatmulOnEverySimdLevelK) {
  check_matmul_on_every_level(
      {QuantType::Q2_K, QuantType::Q3_K, QuantType::Q4_K, QuantType::Q5_K, QuantType::Q6_K});
}

TEST(QMatMul, MatchesDequantizedF64MatmulOnEverySimdLevelIq4) {
  check_matmul_on_every_level({QuantType::IQ4_NL, QuantType::IQ4_XS});
}

TEST(QMatMul, ThreadsSplitRowsWithIdenticalResults) {
  // Every output is computed by one thread, whatever the split: results are bit-identical.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  SimdLevelGuard guard;
  const int64_t k = 768, n = 256;  // ~120 KB of weights: several tasks
  for (QuantType t : {QuantType::Q4_1, QuantType::Q4_K}) {
    const QMatMul mm(quantize(Tensor::from_vec(block_test_data(rng, n, k, 256), {n, k}), t));
    const Tensor x = make_tensor(random_ref(rng, {3, k}), DType::F32, Device::cpu());
    for (q::SimdLevel level : levels_to_test()) {
      q::set_simd_level(level);
      std::vector<float> one, two;
      {
        ThreadCountGuard threads(1);
        one = mm.forward(x).to_vec<float>();
      }
      {
        ThreadCountGuard threads(2);
        two = mm.forward(x).to_vec<float>();
      }
      ASSERT_EQ(one, two) << type_name(t) << " " << q::simd_level_name(level);
    }
  }
}

// The SIMD activation quantizers against a float64 model of the scalar one: the same scales,
// q = x / d rounded to nearest with halves to even (the scalar quantizer: away from zero), and
// s = d * sum(q). Blocks of random values, blocks built so that x / d lands on halves, all-zero
// blocks and a NaN among finite values. Q8_K blocks (Block256) must equal the scalar bit for bit.
TEST(QMatMul, SimdActivationQuantizersRoundHalvesToEven) {
  std::vector<std::pair<std::string, q::QuantizeActFn>> simd;
  if (q::detected_simd_level() >= q::SimdLevel::Avx2)
    simd.emplace_back("avx2", q::act_quantizer_avx2());
  if (q::detected_simd_level() >= q::SimdLevel::Avx512)
    simd.emplace_back("avx512", q::act_quantizer_avx512());
  if (simd.empty()) GTEST_SKIP() << "no SIMD quantizer on this CPU";
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t k = 40 * 32;  // 40 blocks of 32, 5 of 256
  std::vector<float> x(static_cast<size_t>(k));
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>(rng.uniform(-4, 4));
  for (int64_t e = 0; e < 32; e++) {
    x[static_cast<size_t>(32 + e)] = 0;                                    // block 1: zeros
    x[static_cast<size_t>(64 + e)] = (static_cast<float>(e) - 15.5f) / 8;  // block 2: x / d halves
    x[static_cast<size_t>(96 + e)] = (e % 2 ? -1.0f : 1.0f) * (static_cast<float>(e) + 0.5f);
  }
  x[64] = 127.0f / 8;  // block 2: amax 15.875, so d = 1 / 8 and x / d = 8 * x = e - 15.5
  x[96] = 127.0f;      // block 3: d = 1, x / d = x
  x[131] = std::numeric_limits<float>::quiet_NaN();  // block 4: a NaN gives way in the max
  std::vector<int8_t> ref_q(x.size()), got_q(x.size());
  std::vector<float> ref_d(static_cast<size_t>(2 * k / 32)), got_d(ref_d.size());
  std::vector<int16_t> ref_bs(static_cast<size_t>(k / 16)), got_bs(ref_bs.size());
  for (const auto& [name, fn] : simd) {
    ASSERT_NE(fn, nullptr) << name;
    std::fill(got_q.begin(), got_q.end(), int8_t{-99});
    std::fill(got_d.begin(), got_d.end(), -1.0f);
    fn(q::ActKind::Block32, x.data(), k, got_q.data(), got_d.data(), nullptr);
    int ties = 0;
    for (int64_t b = 0; b < k / 32; b++) {
      double amax = 0;
      for (int64_t e = 0; e < 32; e++) {
        const double v = x[static_cast<size_t>(32 * b + e)];
        if (!std::isnan(v)) amax = std::max(amax, std::fabs(v));
      }
      const float d = static_cast<float>(amax) / 127.0f;
      const float id = d != 0 ? 1.0f / d : 0.0f;
      ASSERT_EQ(float_bits(got_d[static_cast<size_t>(2 * b)]), float_bits(d))
          << name << " block " << b;
      int64_t sum = 0;
      for (int64_t e = 0; e < 32; e++) {
        const size_t i = static_cast<size_t>(32 * b + e);
        if (std::isnan(x[i])) {
          sum += got_q[i];  // what a NaN becomes is the kernel's; the sum must still count it
          continue;
        }
        const double scaled = static_cast<double>(x[i] * id);
        double want = std::nearbyint(scaled);  // the default rounding: halves to even
        if (std::fabs(scaled - std::trunc(scaled)) == 0.5) ties++;
        want = std::clamp(want, -128.0, 127.0);
        ASSERT_EQ(got_q[i], static_cast<int8_t>(want)) << name << " element " << i << " x=" << x[i];
        sum += got_q[i];
      }
      ASSERT_EQ(float_bits(got_d[static_cast<size_t>(2 * b + 1)]),
                float_bits(d * static_cast<float>(sum)))
          << name << " block " << b;
    }
    EXPECT_GE(ties, 32) << name << ": the tie blocks lost their halves";
    // Q8_K: the same bits as the scalar quantizer.
    std::vector<float> x256(x);
    x256[131] = 1.0f;
    std::fill(x256.end() - 256, x256.end(), 0.0f);  // an all-zero Q8_K block
    x256[200] = -127.0f;  // ties x[96]'s magnitude: the first one's sign sets the scale
    q::quantize_act_row_scalar(q::ActKind::Block256, x256.data(), k, ref_q.data(), ref_d.data(),
                               ref_bs.data());
    fn(q::ActKind::Block256, x256.data(), k, got_q.data(), got_d.data(), got_bs.data());
    ASSERT_EQ(got_q, ref_q) << name;
    ASSERT_EQ(got_bs, ref_bs) << name;
    for (int64_t b = 0; b < k / 256; b++)
      ASSERT_EQ(float_bits(got_d[static_cast<size_t>(b)]),
                float_bits(ref_d[static_cast<size_t>(b)]))
          << name;
  }
}

// Sliced rows exist for q4_0/q4_1/q8_0/q5_0/q5_1 with an AVX2 kernel; on AVX-512 CPUs
// q4_0/q4_1/q8_0 take row tiles instead: a QMatMul repacks exactly where a kernel reads it.
TEST(QMatMul, RepacksCommonFormatsWhereAPackedKernelRuns) {
  const bool simd = q::detected_simd_level() >= q::SimdLevel::Avx2;
  const bool avx512 = q::detected_simd_level() >= q::SimdLevel::Avx512;
  for (int64_t n : {8, 32, 35}) {
    const Tensor w = Tensor::randn(0, 1, {n, 512}, DType::F32);
    for (QuantType t : {QuantType::Q4_0, QuantType::Q4_1, QuantType::Q8_0, QuantType::Q5_0,
                        QuantType::Q5_1, QuantType::IQ4_NL, QuantType::Q4_K}) {
      const QTensor qw = quantize(w, t);
      const bool slices = simd && q::packable(t), tiles = avx512 && q::tileable(t);
      EXPECT_EQ(q::packed_kernel(t, q::detected_simd_level()) != nullptr, slices) << type_name(t);
      EXPECT_EQ(q::tiled_kernel(t, q::detected_simd_level()) != nullptr, tiles) << type_name(t);
      EXPECT_EQ(q::packable(t), t == QuantType::Q4_0 || t == QuantType::Q4_1 ||
                                    t == QuantType::Q5_0 || t == QuantType::Q5_1 ||
                                    t == QuantType::Q8_0);
      EXPECT_EQ(q::tileable(t),
                t == QuantType::Q4_0 || t == QuantType::Q4_1 || t == QuantType::Q8_0);
      // ggml's bytes, in row tiles rounded up to whole tiles of 16 rows.
      const size_t want = tiles    ? qw.row_bytes() * static_cast<size_t>((n + 15) / 16 * 16)
                          : slices ? qw.nbytes()
                                   : 0;
      EXPECT_EQ(q::packed_weight_bytes(QMatMul(qw)), want) << type_name(t) << " n=" << n;
    }
  }
}

// The packed kernels read each weight load for several x rows: sliced rows (AVX2) up to 4, in
// register tiles of 1 or 2 weight rows; row tiles (AVX-512) up to 8, 16 weight rows a register.
// Every call shape, with row counts the tiles do not divide, chunk tails and strided outputs,
// gives each output the float64 dot of the quantized operands, and bit for bit the value of its
// x row alone (the float order per output does not depend on the tile).
struct PackedCase {
  QuantType type;
  q::SimdLevel level;
  bool row_tiles;
};

void check_packed_kernel(Rng& rng, const PackedCase& c) {
  const QuantType t = c.type;
  const q::PackedRowsFn sliced = c.row_tiles ? nullptr : q::packed_kernel(t, c.level);
  const q::TiledRowsFn tiled = c.row_tiles ? q::tiled_kernel(t, c.level) : nullptr;
  ASSERT_TRUE(sliced || tiled) << type_name(t) << " " << q::simd_level_name(c.level);
  const int max_x = c.row_tiles ? q::kMaxTiledX : q::kMaxPackedX;
  // 18 blocks: SmolLM2's k = 576 (a chunk and a pair); 39: two chunks, a run of 4, a pair, one.
  for (int64_t nb : {1, 2, 3, 7, 16, 18, 39, 48}) {
    // Row tiles: up to 3 tiles, the last one partial.
    const int64_t k = nb * 32, n = rng.integer(1, c.row_tiles ? 40 : 11);
    const QTensor qw = quantize(Tensor::from_vec(block_test_data(rng, n, k, 32), {n, k}), t);
    const std::vector<float> w = dequantize(qw).to_vec<float>();
    const std::vector<uint8_t> packed =
        c.row_tiles ? q::pack_row_tiles(t, qw.data(), n, k) : q::pack_rows(t, qw.data(), n, k);
    const size_t row_bytes = qw.row_bytes();
    // Quantized x rows, kept in element order for the reference (and the row tiles).
    std::vector<int8_t> qs(static_cast<size_t>(max_x * k)), qs_sliced(qs.size());
    std::vector<float> ds(static_cast<size_t>(max_x * 2 * nb)), ds_sliced(ds.size());
    std::vector<q::ActRow> xs(static_cast<size_t>(max_x));
    for (int64_t i = 0; i < max_x; i++) {
      const std::vector<double> xv = random_ref(rng, {k}, -3, 3).v;
      const std::vector<float> xf(xv.begin(), xv.end());
      int8_t* qi = qs.data() + i * k;
      float* di = ds.data() + i * 2 * nb;
      q::quantize_act_row_scalar(q::ActKind::Block32, xf.data(), k, qi, di, nullptr);
      q::pack_activations(qi, di, k, qs_sliced.data() + i * k, ds_sliced.data() + i * 2 * nb);
      xs[static_cast<size_t>(i)] =
          c.row_tiles ? q::ActRow{qi, di, nullptr}
                      : q::ActRow{qs_sliced.data() + i * k, ds_sliced.data() + i * 2 * nb, nullptr};
    }
    auto run = [&](const q::ActRow* x, int n_x, size_t ldo, float* out) {
      if (tiled)
        tiled(packed.data(), n, k, x, n_x, ldo, out);
      else
        sliced(packed.data(), row_bytes, n, k, x, n_x, ldo, out);
    };
    // The kernel's rounding: per block one product of scales, one fma, and the offset or min
    // times the activation block sum; then ~nb additions. Allow (nb + 8) 2^-22 of the terms.
    auto want = [&](int64_t i, int64_t o, double* tol) {
      double sum = 0, mag = 0;
      for (int64_t b = 0; b < nb; b++) {
        double block_max = 0;
        for (int64_t e = 0; e < 32; e++)
          block_max = std::max<double>(block_max, std::fabs(w[o * k + b * 32 + e]));
        for (int64_t e = 0; e < 32; e++) {
          const double wv = w[o * k + b * 32 + e];
          const double xv = qs[i * k + b * 32 + e] * static_cast<double>(ds[i * 2 * nb + 2 * b]);
          sum += wv * xv;
          mag += (std::fabs(wv) + block_max) * std::fabs(xv);
        }
      }
      *tol = static_cast<double>(nb + 8) * std::ldexp(1.0, -22) * mag + 1e-30;
      return sum;
    };
    const size_t ldo = static_cast<size_t>(n + 3);  // gaps between output rows stay untouched
    const float poison = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> alone(static_cast<size_t>(max_x) * ldo, poison);
    for (int i = 0; i < max_x; i++) run(&xs[static_cast<size_t>(i)], 1, ldo, &alone[i * ldo]);
    for (int n_x = 1; n_x <= max_x; n_x++) {
      const std::string what = std::string(type_name(t)) + " k=" + std::to_string(k) +
                               " n=" + std::to_string(n) + " x rows=" + std::to_string(n_x) + " " +
                               q::simd_level_name(c.level) +
                               (c.row_tiles ? " row tiles" : " slices");
      std::vector<float> out(static_cast<size_t>(max_x) * ldo, poison);
      run(xs.data(), n_x, ldo, out.data());
      for (int64_t i = 0; i < max_x; i++)
        for (int64_t o = 0; o < static_cast<int64_t>(ldo); o++) {
          const float got = out[static_cast<size_t>(i) * ldo + static_cast<size_t>(o)];
          if (i >= n_x || o >= n) {
            ASSERT_TRUE(std::isnan(got)) << what << " wrote outside: row " << i << " col " << o;
            continue;
          }
          double tol = 0;
          const double ref = want(i, o, &tol);
          ASSERT_NEAR(got, ref, tol) << what << " row " << i << " col " << o;
          ASSERT_EQ(float_bits(got),
                    float_bits(alone[static_cast<size_t>(i) * ldo + static_cast<size_t>(o)]))
              << what << " row " << i << " col " << o;
        }
    }
  }
}

TEST(QMatMul, PackedTilesMatchOneRowAtATimeAndTheF64Dot) {
  if (q::detected_simd_level() < q::SimdLevel::Avx2) GTEST_SKIP() << "no AVX2";
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (QuantType t :
       {QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0, QuantType::Q5_1, QuantType::Q8_0}) {
    check_packed_kernel(rng, {t, q::SimdLevel::Avx2, false});
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(QMatMul, RowTilesMatchOneRowAtATimeAndTheF64Dot) {
  if (q::detected_simd_level() < q::SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512";
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (QuantType t : {QuantType::Q4_0, QuantType::Q4_1, QuantType::Q8_0}) {
    check_packed_kernel(rng, {t, q::SimdLevel::Avx512, true});
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// `wick serve` decodes several sequences in one forward: with the multi-row kernels (packed
// tiles, the AVX2 ones of the K formats, Q5_0/Q5_1 and IQ4_NL) a row's outputs must be those of
// the row alone, bit for bit, on every SIMD level.
TEST(QMatMul, BatchedRowsEqualEachRowAlone) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  SimdLevelGuard guard;
  ThreadCountGuard one_thread(1);
  for (QuantType t :
       {QuantType::Q4_0, QuantType::Q4_1, QuantType::Q8_0, QuantType::Q5_0, QuantType::Q5_1,
        QuantType::IQ4_NL, QuantType::Q4_K, QuantType::Q5_K, QuantType::Q6_K}) {
    // Where AVX2 runs, every one of these reads each weight block once for several x rows.
    if (q::detected_simd_level() == q::SimdLevel::Avx2) {
      EXPECT_TRUE(q::packed_kernel(t, q::SimdLevel::Avx2) ||
                  q::dot_kernel_multi(t, q::SimdLevel::Avx2))
          << type_name(t) << " has no multi-row AVX2 kernel";
    }
    const int64_t block = block_elems(t);
    // m past 8: several groups of x rows per row tile.
    const int64_t k = block == 32 ? 576 : 512, n = rng.integer(1, 37), m = rng.integer(2, 20);
    const QTensor qw = quantize(Tensor::from_vec(block_test_data(rng, n, k, block), {n, k}), t);
    const std::vector<float> w = dequantize(qw).to_vec<float>();
    const Ref xr = random_ref(rng, {m, k}, -3, 3);
    const Tensor x = make_tensor(xr, DType::F32, Device::cpu());
    const Expected want =
        expected_qmatmul(w, round_ref(xr, DType::F32).v, m, n, k, block == 32 ? 32 : 256);
    for (q::SimdLevel level : levels_to_test()) {
      q::set_simd_level(level);
      const std::string what = std::string(type_name(t)) + " n=" + std::to_string(n) +
                               " m=" + std::to_string(m) + " " + q::simd_level_name(level);
      const QMatMul mm(qw);  // packed for this level's kernels
      const Tensor y = mm.forward(x);
      check_qmatmul(y, want, what);
      const std::vector<float> batched = y.to_vec<float>();
      for (int64_t r = 0; r < m; r++) {
        const std::vector<float> alone = mm.forward(x.narrow(0, r, 1)).to_vec<float>();
        for (int64_t o = 0; o < n; o++)
          ASSERT_EQ(float_bits(batched[static_cast<size_t>(r * n + o)]),
                    float_bits(alone[static_cast<size_t>(o)]))
              << what << " row " << r << " col " << o;
      }
    }
  }
}

TEST(QMatMul, ScalarSwitchChangesTheKernel) {
  SimdLevelGuard guard;
  q::set_simd_level(q::SimdLevel::Scalar);
  EXPECT_EQ(q::dot_kernel(QuantType::Q5_1, q::active_simd_level()),
            q::dot_kernel_scalar(QuantType::Q5_1));
  EXPECT_EQ(q::packed_kernel(QuantType::Q4_1, q::active_simd_level()), nullptr);
  if (q::detected_simd_level() >= q::SimdLevel::Avx2) {
    q::set_simd_level(q::SimdLevel::Avx2);
    EXPECT_EQ(q::dot_kernel(QuantType::Q5_1, q::active_simd_level()),
              q::dot_kernel_avx2(QuantType::Q5_1));
    EXPECT_NE(q::dot_kernel_avx2(QuantType::Q5_1), q::dot_kernel_scalar(QuantType::Q5_1));
    EXPECT_EQ(q::packed_kernel(QuantType::Q4_1, q::active_simd_level()),
              q::packed_kernel_avx2(QuantType::Q4_1));
  }
  // A level above the CPU's is lowered to what it runs.
  q::set_simd_level(q::SimdLevel::Avx512);
  EXPECT_LE(q::active_simd_level(), q::detected_simd_level());
}

TEST(QMatMul, ManyRowsMatchOnBothPaths) {
  // 40 x rows: integer dots (several x rows per weight load), then dequantized tiles + sgemm
  // (forced), where only f32 rounding remains.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  struct GemmRowsGuard {
    ~GemmRowsGuard() { q::set_gemm_min_rows(0); }
  } guard;
  for (QuantType t : {QuantType::Q4_1, QuantType::Q8_0, QuantType::Q6_K}) {
    const int64_t k = 512, n = 45, m = 40;
    const QTensor qw =
        quantize(Tensor::from_vec(block_test_data(rng, n, k, block_elems(t)), {n, k}), t);
    const std::vector<float> w = dequantize(qw).to_vec<float>();
    const Ref xr = random_ref(rng, {m, k});
    const QMatMul mm(qw);
    const Tensor x = make_tensor(xr, DType::F32, Device::cpu());
    const std::vector<double> xv = round_ref(xr, DType::F32).v;
    q::set_gemm_min_rows(0);
    ASSERT_GT(q::gemm_min_rows(), m);
    check_qmatmul(
        mm.forward(x),
        expected_qmatmul(w, xv, m, n, k, q::act_kind(t) == q::ActKind::Block32 ? 32 : 256),
        std::string(type_name(t)) + " integer");
    q::set_gemm_min_rows(1);
    const std::vector<float> got = mm.forward(x).to_vec<float>();
    for (int64_t r = 0; r < m; r++)
      for (int64_t o = 0; o < n; o++) {
        double want = 0, mag = 0;
        for (int64_t i = 0; i < k; i++) {
          want += w[static_cast<size_t>(o * k + i)] * xv[static_cast<size_t>(r * k + i)];
          mag += std::fabs(w[static_cast<size_t>(o * k + i)] * xv[static_cast<size_t>(r * k + i)]);
        }
        ASSERT_NEAR(got[static_cast<size_t>(r * n + o)], want, 1e-5 * mag + 1e-30)
            << type_name(t) << " sgemm";
      }
  }
}

TEST(QMatMul, StridedAndHalfInputs) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t k = 64, n = 9;
  const QTensor qw =
      quantize(Tensor::from_vec(block_test_data(rng, n, k, 32), {n, k}), QuantType::Q4_0);
  const std::vector<float> w = dequantize(qw).to_vec<float>();
  const QMatMul mm(qw);
  const Ref xr = random_ref(rng, {3, k});
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    for (Variant v : kAllVariants) {
      const Tensor x = make_tensor(xr, dt, Device::cpu(), v);
      check_qmatmul(mm.forward(x), expected_qmatmul(w, round_ref(xr, dt).v, 3, n, k, 32),
                    std::string(dtype_name(dt)) + " " + variant_name(v));
    }
  }
}

TEST(QMatMul, PlainAndUnkernelledWeightTypes) {
  // f32/f16/bf16 (norms, embeddings) and q8_1/q8_k go through f32 BLAS: only f32 rounding.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (QuantType t :
       {QuantType::F32, QuantType::F16, QuantType::BF16, QuantType::Q8_1, QuantType::Q8_K}) {
    const int64_t k = 256, n = 7;
    const QTensor qw =
        quantize(Tensor::from_vec(block_test_data(rng, n, k, block_elems(t)), {n, k}), t);
    const std::vector<float> w = dequantize(qw).to_vec<float>();
    for (int64_t m : {1, 4}) {
      const Ref xr = random_ref(rng, {m, k});
      const std::vector<float> got =
          QMatMul(qw).forward(make_tensor(xr, DType::F32, Device::cpu())).to_vec<float>();
      for (int64_t r = 0; r < m; r++)
        for (int64_t o = 0; o < n; o++) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < k; i++) {
            want += w[static_cast<size_t>(o * k + i)] * xr.v[static_cast<size_t>(r * k + i)];
            mag +=
                std::fabs(w[static_cast<size_t>(o * k + i)] * xr.v[static_cast<size_t>(r * k + i)]);
          }
          ASSERT_NEAR(got[static_cast<size_t>(r * n + o)], want, 1e-5 * mag + 1e-30)
              << type_name(t);
        }
    }
  }
}

TEST(QMatMul, EmptyDims) {
  const QTensor qw = quantize(Tensor::ones({3, 32}, DType::F32), QuantType::Q8_0);
  const Tensor y = QMatMul(qw).forward(Tensor::zeros({0, 32}, DType::F32));
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  const QTensor empty_k = quantize(Tensor::zeros({3, 0}, DType::F32), QuantType::Q4_1);
  const std::vector<float> z =
      QMatMul(empty_k).forward(Tensor::zeros({2, 0}, DType::F32)).to_vec<float>();
  EXPECT_EQ(z, std::vector<float>(6, 0.0f));
}

// ---- devices ----------------------------------------------------------------------------------

// dequantize writes to any device; QMatMul(weight, dev) keeps its blocks on dev and multiplies
// there. Every backend inherits these (WICK_INSTANTIATE_DEVICES).
class QuantizedOnDevices : public DeviceTest {};

TEST_P(QuantizedOnDevices, DequantizeAndMatmulFollowTheDevice) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t n = 6, k = 256;
  const QTensor qw =
      quantize(Tensor::from_vec(block_test_data(rng, n, k, 32), {n, k}), QuantType::Q4_1);
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const Tensor on_dev = dequantize(qw, dt, dev);
    EXPECT_EQ(on_dev.device(), dev);
    EXPECT_EQ(on_dev.dtype(), dt);
    WICK_EXPECT_CLOSE(on_dev, to_ref(dequantize(qw, dt)), Tol{0, 0});
  }
  const QMatMul mm(qw, dev);
  EXPECT_EQ(mm.device(), dev);
  const Ref xr = random_ref(rng, {2, k});
  const Tensor y = mm.forward(make_tensor(xr, DType::F32, dev));
  EXPECT_EQ(y.device(), dev);
  EXPECT_EQ(y.dtype(), DType::F32);
  check_qmatmul(
      y, expected_qmatmul(dequantize(qw).to_vec<float>(), round_ref(xr, DType::F32).v, 2, n, k, 32),
      "q4_1 on " + dev.name());
}

class QMatMulOnDevices : public DeviceTest {};

TEST_P(QMatMulOnDevices, EveryFormatMatchesTheF64ReferenceForDecodeAndPromptShapes) {
  // A GPU takes its matrix-vector kernel for m <= 8 at least, a tiled one for longer x (on GPUs;
  // test_gpu_quantized.cpp runs the GPU's choices on lavapipe too); n_out = 67 and 131 are
  // no multiple of the rows per workgroup or of the tiles.
  check_every_format(device(), {{1, 67}, {2, 67}, {7, 67}, {33, 67}, {128, 131}, {64, 64}});
}

TEST_P(QMatMulOnDevices, ReadsXThroughItsLayoutInEveryDtype) {
  check_layouts_and_dtypes(device());
}

TEST_P(QMatMulOnDevices, PlainWeightsAndEmptyDims) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (QuantType t : {QuantType::F32, QuantType::F16, QuantType::BF16}) {
    const int64_t k = 40, n = 7, m = 3;  // plain types take any k
    const QTensor qw = quantize(Tensor::from_vec(block_test_data(rng, n, k, 1), {n, k}), t);
    const std::vector<float> w = dequantize(qw).to_vec<float>();
    const Ref xr = random_ref(rng, {m, k});
    const std::vector<float> got =
        QMatMul(qw, dev).forward(make_tensor(xr, DType::F32, dev)).to_vec<float>();
    for (int64_t r = 0; r < m; r++)
      for (int64_t o = 0; o < n; o++) {
        double want = 0, mag = 0;
        for (int64_t i = 0; i < k; i++) {
          const double p = w[static_cast<size_t>(o * k + i)] * xr.v[static_cast<size_t>(r * k + i)];
          want += p;
          mag += std::fabs(p);
        }
        ASSERT_NEAR(got[static_cast<size_t>(r * n + o)], want, 1e-5 * mag + 1e-30) << type_name(t);
      }
  }
  const QTensor qw = quantize(Tensor::ones({3, 32}, DType::F32), QuantType::Q8_0);
  const Tensor y = QMatMul(qw, dev).forward(Tensor::zeros({0, 32}, DType::F32, dev));
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  EXPECT_EQ(y.device(), dev);
  const QTensor empty_k = quantize(Tensor::zeros({3, 0}, DType::F32), QuantType::Q4_1);
  const Tensor z = QMatMul(empty_k, dev).forward(Tensor::zeros({2, 0}, DType::F32, dev));
  EXPECT_EQ(z.device(), dev);
  EXPECT_EQ(z.to_vec<float>(), std::vector<float>(6, 0.0f));
  const QTensor no_rows = quantize(Tensor::zeros({0, 64}, DType::F32), QuantType::Q8_0);
  EXPECT_EQ(QMatMul(no_rows, dev).forward(Tensor::ones({2, 64}, DType::F32, dev)).shape(),
            (Shape{2, 0}));
}

TEST_P(QMatMulOnDevices, RefusesWrongShapesDtypesAndDevices) {
  const Device dev = device();
  const QMatMul mm(quantize(Tensor::ones({4, 64}, DType::F32), QuantType::Q4_1), dev);
  expect_error(
      [&] {
        mm.forward(Tensor::ones({3, 32}, DType::F32, dev));
      },
      ErrorKind::Shape, {"QMatMul::forward", "[3, 32]", "64", "QTensor[4, 64; q4_1]"});
  expect_error(
      [&] {
        mm.forward(Tensor::ones({3, 64}, DType::U32, dev));
      },
      ErrorKind::DType, {"QMatMul::forward", "u32", "[3, 64]"});
  std::vector<Device> others;
  for (const Device& d : available_devices())
    if (d.kind() != dev.kind()) others.push_back(d);
  for (const Device& other : others) {
    expect_error(
        [&] {
          mm.forward(Tensor::ones({3, 64}, DType::F32, other));
        },
        ErrorKind::Device, {"QMatMul::forward", other.name(), dev.name(), "QTensor[4, 64; q4_1]"});
    const QMatMul there(mm.weight(), other);
    expect_error(
        [&] {
          there.forward(Tensor::ones({3, 64}, DType::F32, dev));
        },
        ErrorKind::Device, {"QMatMul::forward", other.name(), dev.name()});
  }
}

// QMatMul::rows: the rows of fresh random ids (repeats, the first and last row included, read
// through an offset and a stride) for every format and the plain types, bit for bit the CPU's
// dequantize_row of the same rows; the output is poisoned first where the device can be.
TEST_P(QMatMulOnDevices, RowsByIdAreTheDequantizedRowsBitForBit) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  std::vector<QuantType> types = kBlockTypes;
  for (QuantType t : {QuantType::F32, QuantType::F16, QuantType::BF16}) types.push_back(t);
  for (QuantType t : types) {
    SCOPED_TRACE(type_name(t));
    const int64_t n_out = 37, k = 2 * block_elems(t), n = 11;
    const QTensor w =
        quantize(Tensor::from_vec(block_test_data(rng, n_out, k, block_elems(t)), {n_out, k}), t);
    std::vector<uint32_t> ids(static_cast<size_t>(2 * n + 1), 0xdeadbeefu);
    for (int64_t i = 0; i < n; i++)  // ids i at 1 + 2 i: offset 1, stride 2
      ids[static_cast<size_t>(1 + 2 * i)] = i == 0 ? 0u
                                            : i == 1
                                                ? static_cast<uint32_t>(n_out - 1)
                                                : static_cast<uint32_t>(rng.integer(0, n_out - 1));
    ids[5] = ids[3];  // a repeat
    const Tensor all = Tensor::from_vec(ids, {2 * n + 1}, dev);
    const Tensor view = all.narrow(0, 1, 2 * n).reshape({n, 2}).narrow(1, 0, 1).reshape({n});
    const Tensor got = QMatMul(w, dev).rows(view);
    ASSERT_EQ(got.shape(), (Shape{n, k}));
    ASSERT_EQ(got.dtype(), DType::F32);
    ASSERT_EQ(got.device(), dev);
    const std::vector<float> g = got.to_vec<float>();
    std::vector<float> want(static_cast<size_t>(k));
    for (int64_t r = 0; r < n; r++) {
      const uint32_t id = ids[static_cast<size_t>(1 + 2 * r)];
      dequantize_row(t, w.data() + id * w.row_bytes(), want.data(), k);
      for (int64_t e = 0; e < k; e++)
        ASSERT_EQ(float_bits(g[static_cast<size_t>(r * k + e)]),
                  float_bits(want[static_cast<size_t>(e)]))
            << "row " << r << " (id " << id << ") element " << e;
    }
  }
}

TEST_P(QMatMulOnDevices, RowsRefuseBadIdsShapesDtypesAndDevices) {
  const Device dev = device();
  const QMatMul mm(quantize(Tensor::ones({4, 64}, DType::F32), QuantType::Q4_1), dev);
  // An id past the rows: at once on the CPU, at the next wait on a GPU (the kernel finds it).
  expect_error(
      [&] {
        mm.rows(Tensor::from_vec(std::vector<uint32_t>{1, 4}, {2}, dev)).to_vec<float>();
      },
      ErrorKind::OutOfRange, {"QMatMul::rows", "4", "size 4"});
  EXPECT_EQ(mm.rows(Tensor::from_vec(std::vector<uint32_t>{3}, {1}, dev)).shape(), (Shape{1, 64}))
      << "the device still works after the error";
  EXPECT_EQ(mm.rows(Tensor::zeros({0}, DType::U32, dev)).shape(), (Shape{0, 64}));
  expect_error(
      [&] {
        mm.rows(Tensor::zeros({1, 1}, DType::U32, dev));
      },
      ErrorKind::Shape, {"QMatMul::rows", "1-D", "[1, 1]"});
  expect_error([&] { mm.rows(Tensor::zeros({2}, DType::I64, dev)); }, ErrorKind::DType,
               {"QMatMul::rows", "u32", "i64"});
  for (const Device& other : available_devices())
    if (other.kind() != dev.kind())
      expect_error([&] { mm.rows(Tensor::zeros({2}, DType::U32, other)); }, ErrorKind::Device,
                   {"QMatMul::rows", other.name(), dev.name()});
}

WICK_INSTANTIATE_DEVICES(QuantizedOnDevices);
WICK_INSTANTIATE_DEVICES(QMatMulOnDevices);

// ---- errors -----------------------------------------------------------------------------------

TEST(QuantizedErrors, ReportKindOpAndShapes) {
  const Tensor x = Tensor::ones({2, 40}, DType::F32);
  expect_error([&] { quantize(x, QuantType::Q4_1); }, ErrorKind::Shape,
               {"quantize", "[2, 40]", "q4_1", "32"});
  expect_error(
      [&] {
        quantize(Tensor::ones({2, 256}, DType::U8), QuantType::Q8_0);
      },
      ErrorKind::DType, {"quantize", "u8", "[2, 256]"});
  expect_error([&] { quantize(Tensor::scalar(1.0f), QuantType::Q8_0); }, ErrorKind::Shape,
               {"quantize", "scalar"});
  expect_error(
      [&] {
        quantize(Tensor::ones({2, 32}, DType::F32), QuantType::I8);
      },
      ErrorKind::Unsupported, {"quantize", "i8"});
  expect_error([&] { quantize(Tensor::ones({32}, DType::F32), static_cast<QuantType>(99)); },
               ErrorKind::Unsupported, {"quantize", "99"});

  const QTensor qw = quantize(Tensor::ones({4, 64}, DType::F32), QuantType::Q4_1);
  expect_error([&] { dequantize(qw, DType::F64); }, ErrorKind::DType,
               {"dequantize", "f64", "QTensor[4, 64; q4_1]"});
  expect_error([&] { dequantize(QTensor(QuantType::I32, Shape{2}, std::vector<uint8_t>(8))); },
               ErrorKind::Unsupported, {"dequantize", "i32"});
  expect_error([&] { dequantize_row(QuantType::Q4_K, qw.data(), nullptr, 100); }, ErrorKind::Shape,
               {"dequantize_row", "100", "q4_k", "256"});

  const QMatMul mm(qw);
  expect_error(
      [&] {
        mm.forward(Tensor::ones({3, 32}, DType::F32));
      },
      ErrorKind::Shape, {"QMatMul::forward", "[3, 32]", "64", "QTensor[4, 64; q4_1]"});
  expect_error([&] { mm.forward(Tensor::scalar(1.0f)); }, ErrorKind::Shape,
               {"QMatMul::forward", "[]"});
  expect_error(
      [&] {
        mm.forward(Tensor::ones({3, 64}, DType::F64));
      },
      ErrorKind::DType, {"QMatMul::forward", "f64", "[3, 64]"});
  expect_error(
      [&] {
        mm.forward(Tensor::ones({3, 64}, DType::U32));
      },
      ErrorKind::DType, {"QMatMul::forward", "u32"});
  expect_error([&] { QMatMul(quantize(Tensor::ones({64}, DType::F32), QuantType::Q4_1)); },
               ErrorKind::Shape, {"QMatMul", "2-D", "QTensor[64; q4_1]"});
  expect_error(
      [&] {
        QMatMul(QTensor(QuantType::I8, Shape{2, 3}, std::vector<uint8_t>(6)));
      },
      ErrorKind::Unsupported, {"QMatMul", "QTensor[2, 3; i8]"});

  expect_error(
      [&] {
        QTensor(QuantType::Q4_0, Shape{2, 32}, std::vector<uint8_t>(35));
      },
      ErrorKind::Shape, {"QTensor", "[2, 32]", "q4_0", "36 bytes", "35"});
  expect_error([&] { QTensor(QuantType::Q6_K, Shape{100}, std::vector<uint8_t>(210)); },
               ErrorKind::Shape, {"QTensor", "[100]", "q6_k", "256"});
  expect_error([&] { QTensor(QuantType::Q8_0, Shape{}, std::vector<uint8_t>()); }, ErrorKind::Shape,
               {"QTensor", "one dim"});
}

}  // namespace
}  // namespace wick::testing
