// Quant codec API and exactness: argument checks, exact round trips of the float types, hand-built blocks
// for the layouts the golden files do not cover, idempotence, garbage input, and the whole-tensor helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/half.h"
#include "formats/quant/codec.h"
#include "formats/quant/k_quants.h"
#include "unit/quant_test_data.h"

namespace saker {
namespace {

const DType kBlockTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1,  DType::kQ5_0,  DType::kQ5_1,
                             DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS};

std::vector<uint8_t> quantized(DType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(*row_bytes(type, static_cast<int64_t>(x.size())));
  EXPECT_TRUE(quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size())).ok());
  return q;
}

std::vector<float> dequantized(DType type, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  EXPECT_TRUE(dequantize_row(type, q.data(), y.data(), n).ok());
  return y;
}

void put_f16(std::vector<uint8_t>& b, size_t at, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(b.data() + at, &h, 2);
}

TEST(QuantCodec, SupportedTypes) {
  for (DType t : kBlockTypes) {
    EXPECT_TRUE(can_dequantize(t)) << dtype_name(t);
    EXPECT_TRUE(can_quantize(t)) << dtype_name(t);
  }
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) EXPECT_TRUE(can_quantize(t) && can_dequantize(t));
  for (DType t : {DType::kQ2_K, DType::kQ8_K, DType::kI32, static_cast<DType>(99)}) {
    EXPECT_FALSE(can_dequantize(t));
    EXPECT_FALSE(can_quantize(t));
  }
}

TEST(QuantCodec, RejectsBadArguments) {
  std::vector<float> x(512, 1.0f);
  std::vector<uint8_t> q(1024);
  Status s = quantize_row(DType::kQ4_K, x.data(), q.data(), 100);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("q4_K"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("256"), std::string::npos) << s.message();
  EXPECT_EQ(dequantize_row(DType::kQ8_0, q.data(), x.data(), 33).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dequantize_row(DType::kQ8_0, q.data(), x.data(), -32).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dequantize(DType::kQ8_0, q.data(), x.data(), 2, 48).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dequantize(DType::kQ8_0, q.data(), x.data(), -1, 32).code(), StatusCode::kInvalidArgument);
  s = dequantize_row(DType::kQ2_K, q.data(), x.data(), 256);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("q2_K"), std::string::npos) << s.message();
  EXPECT_EQ(quantize_row(DType::kQ3_K, x.data(), q.data(), 256).code(), StatusCode::kUnsupported);
  EXPECT_EQ(quantize(DType::kIQ2_XXS, x.data(), q.data(), 1, 256).code(), StatusCode::kUnsupported);
  // Empty rows and tensors are fine.
  EXPECT_TRUE(dequantize_row(DType::kQ6_K, q.data(), x.data(), 0).ok());
  EXPECT_TRUE(dequantize(DType::kQ6_K, q.data(), x.data(), 0, 256).ok());
}

TEST(QuantCodec, F32RoundTripIsExact) {
  std::vector<float> x = testing::quant_test_matrix(1, 300, true, 5);
  x[0] = std::numeric_limits<float>::infinity();
  x[1] = -0.0f;
  x[2] = std::numeric_limits<float>::denorm_min();
  const std::vector<uint8_t> q = quantized(DType::kF32, x);
  const std::vector<float> y = dequantized(DType::kF32, q, 300);
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
}

// Every non-NaN 16-bit pattern survives decode + encode unchanged (F16 and BF16).
TEST(QuantCodec, F16AndBf16RoundTripEveryValue) {
  for (DType type : {DType::kF16, DType::kBF16}) {
    std::vector<uint8_t> bits;
    for (uint32_t h = 0; h < 65536; ++h) {
      const bool nan = type == DType::kF16 ? ((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0)
                                           : ((h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0);
      if (nan) continue;
      bits.push_back(static_cast<uint8_t>(h & 0xFF));
      bits.push_back(static_cast<uint8_t>(h >> 8));
    }
    const auto n = static_cast<int64_t>(bits.size() / 2);
    const std::vector<float> y = dequantized(type, bits, n);
    const std::vector<uint8_t> again = quantized(type, y);
    EXPECT_EQ(again, bits) << dtype_name(type);
  }
  // Decoding is the exact value: 1.5 and -2^-24 (the smallest f16 subnormal), bf16 of 1.5.
  const std::vector<uint8_t> f16 = {0x00, 0x3E, 0x01, 0x80};
  EXPECT_EQ(dequantized(DType::kF16, f16, 2), (std::vector<float>{1.5f, -5.9604644775390625e-8f}));
  const std::vector<uint8_t> bf16 = {0xC0, 0x3F};
  EXPECT_EQ(dequantized(DType::kBF16, bf16, 1), std::vector<float>{1.5f});
}

// Q4_1, Q5_0, Q5_1, IQ4_NL have no golden file: check their layouts on hand-built blocks (docs/formats).
TEST(QuantCodec, HandBuiltLegacyBlocks) {
  {  // Q4_1: d 0.5, m -1; qs[0] = 0x3A -> element 0 code 10, element 16 code 3.
    std::vector<uint8_t> b(20, 0);
    put_f16(b, 0, 0.5f);
    put_f16(b, 2, -1.0f);
    b[4] = 0x3A;
    const auto y = dequantized(DType::kQ4_1, b, 32);
    EXPECT_EQ(y[0], 4.0f);
    EXPECT_EQ(y[16], 0.5f);
    EXPECT_EQ(y[1], -1.0f);
  }
  {  // Q5_0: d 2; qh bits 0 and 17; qs[0] = 0x21, qs[1] = 0x0F.
    std::vector<uint8_t> b(22, 0);
    put_f16(b, 0, 2.0f);
    const uint32_t qh = (1u << 0) | (1u << 17);
    std::memcpy(b.data() + 2, &qh, 4);
    b[6] = 0x21;
    b[7] = 0x0F;
    const auto y = dequantized(DType::kQ5_0, b, 32);
    EXPECT_EQ(y[0], 2.0f);     // (1 | 16) - 16
    EXPECT_EQ(y[16], -28.0f);  // 2 - 16
    EXPECT_EQ(y[1], -2.0f);    // 15 - 16
    EXPECT_EQ(y[17], 0.0f);    // (0 | 16) - 16
    EXPECT_EQ(y[2], -32.0f);   // 0 - 16
  }
  {  // Q5_1: d 0.25, m 1; qh bit 31, qs[15] = 0xF0 -> element 31 code 31.
    std::vector<uint8_t> b(24, 0);
    put_f16(b, 0, 0.25f);
    put_f16(b, 2, 1.0f);
    const uint32_t qh = 1u << 31;
    std::memcpy(b.data() + 4, &qh, 4);
    b[8 + 15] = 0xF0;
    const auto y = dequantized(DType::kQ5_1, b, 32);
    EXPECT_EQ(y[31], 8.75f);
    EXPECT_EQ(y[15], 1.0f);
  }
  {  // IQ4_NL: d 0.5; qs[0] = 0xF0 -> element 0 level 0 (-127), element 16 level 15 (113).
    std::vector<uint8_t> b(18, 0);
    put_f16(b, 0, 0.5f);
    b[2] = 0xF0;
    b[3] = 0x08;
    const auto y = dequantized(DType::kIQ4_NL, b, 32);
    EXPECT_EQ(y[0], -63.5f);
    EXPECT_EQ(y[16], 56.5f);
    EXPECT_EQ(y[1], 0.5f);     // level 8 is +1
    EXPECT_EQ(y[17], -63.5f);  // high nibble 0
  }
}

TEST(QuantCodec, HandBuiltKBlocks) {
  {  // Q4_K: d 1, dmin 0.5; sub-block 5 gets scale 37, min 20 (split over scales[1], [5], [9]).
    std::vector<uint8_t> b(144, 0);
    put_f16(b, 0, 1.0f);
    put_f16(b, 2, 0.5f);
    b[4 + 1] = 0x80;  // high bits of sub-block 5's scale (37 >> 4 = 2)
    b[4 + 5] = 0x40;  // high bits of its min (20 >> 4 = 1)
    b[4 + 9] = 0x45;  // low bits: scale 5, min 4
    b[16 + 64 + 7] = 0xB0;  // chunk 2, high nibble: element 160 + 7, code 11
    const auto y = dequantized(DType::kQ4_K, b, 256);
    EXPECT_EQ(y[167], 397.0f);  // 37 * 11 - 0.5 * 20
    EXPECT_EQ(y[160], -10.0f);
    EXPECT_EQ(y[128 + 7], 0.0f);  // sub-block 4: scale 0, min 0
  }
  {  // IQ4_XS: d 1; sub-block 5 scale 40 (l = 8), others 0 (l = -32).
    std::vector<uint8_t> b(136, 0);
    put_f16(b, 0, 1.0f);
    const uint16_t scales_h = 2 << 10;
    std::memcpy(b.data() + 2, &scales_h, 2);
    b[4 + 2] = 0x80;
    b[8 + 80 + 3] = 0x19;  // sub-block 5: element 3 level 9 (13), element 19 level 1 (-104)
    const auto y = dequantized(DType::kIQ4_XS, b, 256);
    EXPECT_EQ(y[160 + 3], 104.0f);
    EXPECT_EQ(y[160 + 19], -832.0f);
    EXPECT_EQ(y[0], 4064.0f);  // -32 * -127
  }
}

TEST(QuantCodec, KScaleTablePacksEveryValue) {
  testing::QuantTestRng rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    int sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<int>(rng.uniform() * 64);
      m[j] = static_cast<int>(rng.uniform() * 64);
    }
    uint8_t packed[12];
    quant::pack_scales_mins(sc, m, packed);
    for (int j = 0; j < 8; ++j) {
      int s2, m2;
      quant::unpack_scale_min(packed, j, &s2, &m2);
      ASSERT_EQ(s2, sc[j]);
      ASSERT_EQ(m2, m[j]);
    }
  }
}

TEST(QuantCodec, ZerosAndConstantsRoundTrip) {
  for (DType t : kBlockTypes) {
    const std::vector<float> zeros(512, 0.0f);
    for (float v : dequantized(t, quantized(t, zeros), 512)) ASSERT_EQ(v, 0.0f) << dtype_name(t);
    const std::vector<float> constant(512, -0.75f);
    for (float v : dequantized(t, quantized(t, constant), 512)) ASSERT_NEAR(v, -0.75f, 0.01f) << dtype_name(t);
  }
}

// Re-quantising decoded values: bytes are stable for the one-scale types; the K and IQ4 searches may move
// a few blocks but stay close to the first decode.
TEST(QuantCodec, RequantisationIsStable) {
  for (DType t : kBlockTypes) {
    for (bool heavy : {false, true}) {
      const std::vector<float> x = testing::quant_test_matrix(1, 8192, heavy, 11);
      const std::vector<uint8_t> q1 = quantized(t, x);
      const std::vector<float> y1 = dequantized(t, q1, 8192);
      const std::vector<uint8_t> q2 = quantized(t, y1);
      const std::vector<float> y2 = dequantized(t, q2, 8192);
      const bool legacy = traits(t).block_elements == 32 && t != DType::kIQ4_NL;
      if (legacy) {
        EXPECT_EQ(q1, q2) << dtype_name(t);
      } else {
        const double first = testing::relative_error(y1.data(), x.data(), x.size());
        const double drift = testing::relative_error(y2.data(), y1.data(), x.size());
        EXPECT_LE(drift, 0.2 * first) << dtype_name(t) << (heavy ? " heavy-tailed" : " gaussian");
      }
    }
  }
}

// Random bytes (NaN/inf scales included) decode without crashing; quantisers survive NaN/inf input.
TEST(QuantCodec, ToleratesAnyBitPattern) {
  testing::QuantTestRng rng(17);
  for (DType t : kBlockTypes) {
    std::vector<uint8_t> bytes(*row_bytes(t, 1024));
    for (int pattern = 0; pattern < 3; ++pattern) {
      for (auto& b : bytes) {
        b = pattern == 0 ? 0xFF : (pattern == 1 ? 0x7C : static_cast<uint8_t>(rng.uniform() * 256));
      }
      std::vector<float> y(1024);
      ASSERT_TRUE(dequantize_row(t, bytes.data(), y.data(), 1024).ok());
    }
    std::vector<float> x = testing::quant_test_matrix(1, 1024, true, 2);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[300] = std::numeric_limits<float>::infinity();
    x[700] = -std::numeric_limits<float>::infinity();
    ASSERT_TRUE(quantize_row(t, x.data(), bytes.data(), 1024).ok());
    std::vector<float> y(1024);
    ASSERT_TRUE(dequantize_row(t, bytes.data(), y.data(), 1024).ok());
  }
}

TEST(QuantCodec, TensorHelpersMatchRows) {
  constexpr int64_t kRows = 37, kCols = 512;
  const std::vector<float> x = testing::quant_test_matrix(kRows, kCols, true, 23);
  for (DType t : kBlockTypes) {
    const uint64_t row = *row_bytes(t, kCols);
    std::vector<uint8_t> whole(row * kRows), by_row(row * kRows);
    ASSERT_TRUE(quantize(t, x.data(), whole.data(), kRows, kCols).ok());
    for (int64_t r = 0; r < kRows; ++r) {
      ASSERT_TRUE(quantize_row(t, x.data() + r * kCols, by_row.data() + r * row, kCols).ok());
    }
    EXPECT_EQ(whole, by_row) << dtype_name(t);
    std::vector<float> y_whole(x.size()), y_row(x.size());
    ASSERT_TRUE(dequantize(t, whole.data(), y_whole.data(), kRows, kCols).ok());
    for (int64_t r = 0; r < kRows; ++r) {
      ASSERT_TRUE(dequantize_row(t, whole.data() + r * row, y_row.data() + r * kCols, kCols).ok());
    }
    EXPECT_EQ(y_whole, y_row) << dtype_name(t);
  }
}

}  // namespace
}  // namespace saker
