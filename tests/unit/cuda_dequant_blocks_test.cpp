// The CUDA matmul's per-block decoders (ops/cuda/dequant_blocks.h), built by the host compiler and checked bit
// for bit against formats/quant's dequantize_row for every dtype: decode bugs are caught without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "formats/quant/codec.h"
#include "ops/cuda/dequant_blocks.h"

namespace saker {
namespace {

using cuda::blocks::Fmt;

constexpr DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,   DType::kQ4_0,
                            DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kQ4_K,
                            DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS};

// Decodes a whole row through the unit decoder; unwritten elements stay NaN.
template <class F>
std::vector<float> decode_by_units(const uint8_t* row, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), std::nanf(""));
  const int64_t n_blocks = n / F::kBlockElems;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int u = 0; u < F::kUnits; ++u) {
      float v[32];
      F::decode_unit(row + b * F::kBlockBytes, u, v);
      for (int r = 0; r < 4; ++r) {
        for (int j = 0; j < 8; ++j) out[b * F::kBlockElems + F::run_start(u, r) + j] = v[8 * r + j];
      }
    }
  }
  return out;
}

std::vector<uint32_t> bits(const std::vector<float>& v) {
  std::vector<uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * 4);
  return b;
}

// Rows quantised from random floats (the realistic case) and rows of random bytes (every code, scale and
// sign bit pattern; NaN/inf scales must decode the same way as the CPU codec).
std::vector<uint8_t> make_row(DType type, int64_t n, bool random_bytes, std::mt19937& rng) {
  const size_t bytes = *row_bytes(type, n);
  std::vector<uint8_t> row(bytes);
  if (random_bytes) {
    for (auto& b : row) b = static_cast<uint8_t>(rng());
    return row;
  }
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> src(static_cast<size_t>(n));
  for (auto& x : src) x = dist(rng) * (1.0f + static_cast<float>(rng() % 8));
  EXPECT_TRUE(quantize_row(type, src.data(), row.data(), n).ok());
  return row;
}

TEST(CudaDequantBlocks, UnitsMatchCpuCodecBitExact) {
  std::mt19937 rng(1234);
  for (DType type : kTypes) {
    cuda::blocks::visit_dtype(type, [&](auto fmt) {
      using F = decltype(fmt);
      const int64_t n = 4 * 256;
      for (int pass = 0; pass < 6; ++pass) {
        const bool random_bytes = pass >= 3;
        const std::vector<uint8_t> row = make_row(type, n, random_bytes, rng);
        std::vector<float> want(static_cast<size_t>(n));
        ASSERT_TRUE(dequantize_row(type, row.data(), want.data(), n).ok());
        const std::vector<float> got = decode_by_units<F>(row.data(), n);
        // Bit patterns, so NaN from NaN scales compare equal and -0 / +0 differences are caught.
        EXPECT_EQ(bits(got), bits(want)) << dtype_name(type) << " pass " << pass;
      }
    });
  }
}

TEST(CudaDequantBlocks, FloatElementMatchesCpuCodec) {
  std::mt19937 rng(99);
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int64_t n = 77;  // any length: the simple kernel's path for rows that are not whole 256-blocks
    const std::vector<uint8_t> row = make_row(type, n, false, rng);
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    ASSERT_TRUE(dequantize_row(type, row.data(), want.data(), n).ok());
    for (int64_t i = 0; i < n; ++i) got[i] = cuda::blocks::float_element(type, row.data(), i);
    EXPECT_EQ(bits(got), bits(want)) << dtype_name(type);
  }
}

TEST(CudaDequantBlocks, BlockTraitsAgreeWithDType) {
  for (DType type : kTypes) {
    cuda::blocks::visit_dtype(type, [&](auto fmt) {
      using F = decltype(fmt);
      EXPECT_EQ(*row_bytes(type, F::kBlockElems), static_cast<uint64_t>(F::kBlockBytes)) << dtype_name(type);
      EXPECT_EQ(F::kUnits * 32, F::kBlockElems) << dtype_name(type);
    });
  }
}

TEST(CudaDequantBlocks, Iq4LevelsMatchTable) {
  const int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (uint32_t c = 0; c < 16; ++c) EXPECT_EQ(cuda::blocks::iq4_level(c), static_cast<float>(levels[c]));
}

}  // namespace
}  // namespace saker
