// IQ4_NL and IQ4_XS (ggml type ids 20 and 23) from their definitions: blocks built by hand byte by
// byte (every table level, both signs of the scale, IQ4_XS's 6-bit sub-block scales at 0, 63 and
// between), dequantized against float64 values computed from the format's text, and multiplied by
// QMatMul on every device against the float64 product of those values. The round trip and the
// random sweeps run with the other formats (test_quantized.cpp, test_gpu_quantized.cpp).
#include <cmath>
#include <cstring>

#include "harness.h"
#include "quantized_ref.h"
#include "wick/quantized.h"

namespace wick::testing {
namespace {

// The format's table (ggml's kvalues_iq4nl), written out here rather than taken from the library.
constexpr int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                            1,    13,   25,  38,  53,  69,  89,  113};

// f16 bit patterns with their exact values.
struct Half {
  uint16_t bits;
  double value;
};
constexpr Half kScales[] = {
    {0x3800, 0.5},        {0xB800, -0.5},    {0x2E66, 0x1.998p-4},  // 0.0999755859375
    {0xC4D2, -4.8203125}, {0x0001, 0x1p-24},                        // the smallest subnormal
    {0x0000, 0.0},
};

// An IQ4_NL row: block b takes scale kScales[b % 6] and codes (e + 3 b) % 16 for elements e < 16,
// 15 - (e + b) % 16 for e >= 16 (every level in both halves of every block).
struct Built {
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // float64 reference, element order
};

int nl_code(int b, int e) {
  return e < 16 ? (e + 3 * b) % 16 : 15 - (e + b) % 16;
}

Built build_iq4_nl(int64_t rows, int64_t k) {
  Built r;
  const int64_t nb = k / 32;
  for (int64_t row = 0; row < rows; row++)
    for (int64_t blk = 0; blk < nb; blk++) {
      const int b = static_cast<int>(row * nb + blk);
      const Half& d = kScales[b % 6];
      r.bytes.push_back(static_cast<uint8_t>(d.bits & 0xFF));
      r.bytes.push_back(static_cast<uint8_t>(d.bits >> 8));
      for (int j = 0; j < 16; j++)  // low nibble: element j, high: element j + 16
        r.bytes.push_back(static_cast<uint8_t>(nl_code(b, j) | (nl_code(b, j + 16) << 4)));
      for (int e = 0; e < 32; e++) r.values.push_back(d.value * kTable[nl_code(b, e)]);
    }
  return r;
}

// IQ4_XS super-block s: d = kScales[s % 6]; sub-block ib's 6-bit scale ls from kLs (0 and 63, the
// extremes, 32 = a zero scale, and values between), rotated by s; codes (e + ib + s) % 16 in the
// sub-block's element order e.
constexpr int kLs[8] = {0, 63, 32, 1, 31, 33, 47, 16};

Built build_iq4_xs(int64_t rows, int64_t k) {
  Built r;
  const int64_t nb = k / 256;
  for (int64_t row = 0; row < rows; row++)
    for (int64_t sb = 0; sb < nb; sb++) {
      const int s = static_cast<int>(row * nb + sb);
      const Half& d = kScales[s % 6];
      int ls[8];
      for (int ib = 0; ib < 8; ib++) ls[ib] = kLs[(ib + s) % 8];
      uint16_t scales_h = 0;
      uint8_t scales_l[4] = {};
      for (int ib = 0; ib < 8; ib++) {
        scales_l[ib / 2] |= static_cast<uint8_t>((ls[ib] & 0xF) << (4 * (ib % 2)));
        scales_h |= static_cast<uint16_t>((ls[ib] >> 4) << (2 * ib));
      }
      r.bytes.push_back(static_cast<uint8_t>(d.bits & 0xFF));
      r.bytes.push_back(static_cast<uint8_t>(d.bits >> 8));
      r.bytes.push_back(static_cast<uint8_t>(scales_h & 0xFF));
      r.bytes.push_back(static_cast<uint8_t>(scales_h >> 8));
      for (uint8_t v : scales_l) r.bytes.push_back(v);
      for (int ib = 0; ib < 8; ib++) {
        auto code = [&](int e) { return (e + ib + s) % 16; };
        for (int j = 0; j < 16; j++)
          r.bytes.push_back(static_cast<uint8_t>(code(j) | (code(j + 16) << 4)));
        for (int e = 0; e < 32; e++) r.values.push_back(d.value * (ls[ib] - 32) * kTable[code(e)]);
      }
    }
  return r;
}

TEST(QuantizedIq4, TypeIdsNamesAndBlockSizes) {
  const QuantTypeInfo* nl = quant_type_info(20);
  const QuantTypeInfo* xs = quant_type_info(23);
  ASSERT_TRUE(nl && xs);
  EXPECT_EQ(nl->type, QuantType::IQ4_NL);
  EXPECT_STREQ(nl->name, "iq4_nl");
  EXPECT_EQ(nl->block_elems, 32);
  EXPECT_EQ(nl->block_bytes, 18);
  EXPECT_EQ(xs->type, QuantType::IQ4_XS);
  EXPECT_STREQ(xs->name, "iq4_xs");
  EXPECT_EQ(xs->block_elems, 256);
  EXPECT_EQ(xs->block_bytes, 136);  // d, scales_h, scales_l[4], qs[128]
  EXPECT_TRUE(quant_type_supported(QuantType::IQ4_NL));
  EXPECT_TRUE(quant_type_supported(QuantType::IQ4_XS));
}

TEST(QuantizedIq4, HandBuiltBlocksDequantizeToTheirDefinition) {
  // Every product d * (ls - 32) * level has at most 11 + 6 + 7 significant bits: exact in f32
  // (subnormal d included), so the f32 values must equal the float64 ones.
  for (QuantType t : {QuantType::IQ4_NL, QuantType::IQ4_XS}) {
    const int64_t rows = 3, k = t == QuantType::IQ4_NL ? 7 * 32 : 2 * 256;
    const Built b = t == QuantType::IQ4_NL ? build_iq4_nl(rows, k) : build_iq4_xs(rows, k);
    const QTensor q(t, Shape{rows, k}, b.bytes);
    const std::vector<float> got = dequantize(q).to_vec<float>();
    ASSERT_EQ(got.size(), b.values.size());
    for (size_t i = 0; i < got.size(); i++)
      ASSERT_EQ(static_cast<double>(got[i]), b.values[i])
          << quant_type_info(t)->name << " element " << i;
    // f16 output: the f32 values rounded once.
    const std::vector<f16> half = dequantize(q, DType::F16).to_vec<f16>();
    for (size_t i = 0; i < got.size(); i++)
      ASSERT_EQ(half[i].bits, f16(got[i]).bits) << quant_type_info(t)->name << " element " << i;
  }
}

TEST(QuantizedIq4, QuantizedBlocksDecodeAsTheirBytesSay) {
  // The quantizer's output read back through the definition (not through dequantize): codes,
  // scales and the 6-bit split of IQ4_XS's scales agree with what dequantize returns.
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const std::vector<float> x = block_test_data(rng, 2, 512, 256);
  for (QuantType t : {QuantType::IQ4_NL, QuantType::IQ4_XS}) {
    const QTensor q = quantize(Tensor::from_vec(x, {2, 512}), t);
    const std::vector<float> y = dequantize(q).to_vec<float>();
    const uint8_t* p = q.data();
    const int64_t bb = quant_type_info(t)->block_bytes, be = quant_type_info(t)->block_elems;
    for (int64_t blk = 0; blk < 1024 / be; blk++) {
      const uint8_t* b = p + blk * bb;
      uint16_t dbits;
      std::memcpy(&dbits, b, 2);
      const double d = static_cast<float>(f16::to_float(dbits));
      for (int64_t e = 0; e < be; e++) {
        const int64_t ib = e / 32, l = e % 32;
        double dl = d;
        const uint8_t* qs = b + 2;
        if (t == QuantType::IQ4_XS) {
          const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) |
                         (((b[2] | (b[3] << 8)) >> (2 * ib)) & 3) << 4;
          dl = d * (ls - 32);
          qs = b + 8 + 16 * ib;
        }
        const int code = l < 16 ? qs[l] & 0xF : qs[l - 16] >> 4;
        ASSERT_EQ(static_cast<double>(y[static_cast<size_t>(blk * be + e)]),
                  static_cast<double>(static_cast<float>(static_cast<float>(dl) * kTable[code])))
            << quant_type_info(t)->name << " block " << blk << " element " << e;
      }
    }
  }
}

class QuantizedIq4OnDevices : public DeviceTest {};

TEST_P(QuantizedIq4OnDevices, HandBuiltWeightsMultiplyAsTheirDefinitionSays) {
  // QMatMul of the hand-built rows (every level, negative and subnormal scales, 6-bit scale
  // extremes) against the float64 product of their defined values, for decode-sized and
  // prompt-sized x, on this device's kernels (CPU: every SIMD level the harness runs at).
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  ThreadCountGuard one_thread(1);
  for (QuantType t : {QuantType::IQ4_NL, QuantType::IQ4_XS}) {
    const int64_t n = 37, k = t == QuantType::IQ4_NL ? 9 * 32 : 3 * 256;
    const Built b = t == QuantType::IQ4_NL ? build_iq4_nl(n, k) : build_iq4_xs(n, k);
    const std::vector<float> w(b.values.begin(), b.values.end());  // exact in f32 (see above)
    const QMatMul mm(QTensor(t, Shape{n, k}, b.bytes), dev);
    for (int64_t m : {1, 3, 9, 40}) {
      const Ref xr = random_ref(rng, {m, k}, -3, 3);
      const Tensor y = mm.forward(make_tensor(xr, DType::F32, dev));
      check_qmatmul(
          y, expected_for(t, w, round_ref(xr, DType::F32).v, m, n, k, f16_gemm_for(dev, m)),
          std::string(quant_type_info(t)->name) + " m=" + std::to_string(m) + " on " + dev.name());
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

WICK_INSTANTIATE_DEVICES(QuantizedIq4OnDevices);

}  // namespace
}  // namespace wick::testing
