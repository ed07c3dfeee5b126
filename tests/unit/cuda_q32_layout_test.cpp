// The 32-element formats and IQ4_XS on the width-invariant int8 kernel (ops/cuda/q32_layout.h), checked on the
// host without a GPU:
// - the byte tricks (per-byte subtract, bit spreading, the IQ4 table permute) for every input they meet;
// - the oracle's codes (host_code) give formats/quant's dequantised weights exactly, so the oracle reads the
//   formats as saker's codecs write them;
// - every lane's A words, read from a staged row at every even offset, hold the oracle's codes of elements
//   8t .. 8t+7 (IQ4_XS: of each sub-block);
// - a group's canonical value is the dot product of the dequantised weights and activations (to float
//   rounding), for whole groups and a row's partial last one, and partial activation blocks quantise their
//   absent sub-blocks as zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "formats/quant/codec.h"
#include "ops/cuda/q32_layout.h"

namespace saker {
namespace {

namespace q32 = cuda::q32;
namespace kq = cuda::kq;

constexpr DType kBlockTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL};

int8_t byte_at(uint32_t w, int i) { return static_cast<int8_t>((w >> (8 * i)) & 0xFF); }

// Rows of quantised random weights (sub-blocks of varied magnitude) in the codec's bytes.
std::vector<uint8_t> quantized_row(DType type, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = nd(rng) * (1.0f + static_cast<float>((i / 32) % 4));
  const int64_t bytes = type == DType::kIQ4_XS ? n / 256 * 136 : n / 32 * (q32::group_bytes(type) / 8);
  std::vector<uint8_t> out(static_cast<size_t>(bytes));
  EXPECT_TRUE(quantize_row(type, x.data(), out.data(), n).ok());
  return out;
}

// A 16-byte aligned staged row holding `bytes` at byte `at`.
std::vector<uint32_t> staged(const uint8_t* bytes, int n, int at) {
  std::vector<uint32_t> row(static_cast<size_t>((at + n + 8 + 15) / 16 * 4), 0xDEADBEEFu);
  std::memcpy(reinterpret_cast<uint8_t*>(row.data()) + at, bytes, static_cast<size_t>(n));
  return row;
}

template <DType T>
void lane_codes_of(const uint32_t* row, int at, int t, uint32_t& lo, uint32_t& hi) {
  q32::Block32<T>::lane_codes(row, at, t, lo, hi);
}
void lane_codes(DType type, const uint32_t* row, int at, int t, uint32_t& lo, uint32_t& hi) {
  switch (type) {
    case DType::kQ8_0: return lane_codes_of<DType::kQ8_0>(row, at, t, lo, hi);
    case DType::kQ4_0: return lane_codes_of<DType::kQ4_0>(row, at, t, lo, hi);
    case DType::kQ4_1: return lane_codes_of<DType::kQ4_1>(row, at, t, lo, hi);
    case DType::kQ5_0: return lane_codes_of<DType::kQ5_0>(row, at, t, lo, hi);
    case DType::kQ5_1: return lane_codes_of<DType::kQ5_1>(row, at, t, lo, hi);
    case DType::kIQ4_NL: return lane_codes_of<DType::kIQ4_NL>(row, at, t, lo, hi);
    default: FAIL() << "not a 32-element format";
  }
}

TEST(CudaQ32Layout, ByteTricksHoldForEveryInput) {
  for (uint32_t b = 0; b < 16; ++b) {
    const uint32_t s = q32::spread4(b);
    for (int i = 0; i < 4; ++i) EXPECT_EQ((s >> (8 * i)) & 0xFF, (b >> i) & 1) << b;
  }
  // Every byte value 0..31 in every position, against every centring the formats use.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t v[4];
    for (uint8_t& x : v) x = static_cast<uint8_t>(rng() % 32);
    if (trial < 32) v[trial % 4] = static_cast<uint8_t>(trial);
    uint32_t w = 0;
    for (int i = 0; i < 4; ++i) w |= static_cast<uint32_t>(v[i]) << (8 * i);
    for (uint32_t c : {0u, 8u, 16u}) {
      const uint32_t r = q32::sub_bytes(w, c);
      for (int i = 0; i < 4; ++i) EXPECT_EQ(byte_at(r, i), static_cast<int>(v[i]) - static_cast<int>(c));
    }
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(v[i] & 15) << (8 * i);
    const uint32_t levels = q32::iq4_codes(n);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(static_cast<float>(byte_at(levels, i)), cuda::blocks::iq4_level(v[i] & 15u)) << (v[i] & 15);
    }
  }
}

TEST(CudaQ32Layout, OracleCodesGiveTheCodecsWeights) {
  constexpr int64_t kN = 1024;
  uint32_t seed = 11;
  for (DType type : kBlockTypes) {
    const std::vector<uint8_t> row = quantized_row(type, kN, seed++);
    std::vector<float> want(kN);
    ASSERT_TRUE(dequantize_row(type, row.data(), want.data(), kN).ok());
    const int bytes = q32::group_bytes(type) / 8;
    const bool has_min = type == DType::kQ4_1 || type == DType::kQ5_1;
    for (int64_t b = 0; b < kN / 32; ++b) {
      const uint8_t* blk = row.data() + b * bytes;
      const float d = q32::host_f16(blk);
      const float m = has_min ? q32::host_f16(blk + 2) : 0.0f;
      for (int l = 0; l < 32; ++l) {
        const float code = static_cast<float>(q32::host_code(type, blk, l));
        const float v = has_min ? code * d + m : code * d;
        ASSERT_EQ(v, want[b * 32 + l]) << dtype_name(type) << " block " << b << " element " << l;
      }
    }
  }
  // IQ4_XS: level of each nibble times d * (ls - 32).
  const std::vector<uint8_t> row = quantized_row(DType::kIQ4_XS, kN, seed++);
  std::vector<float> want(kN);
  ASSERT_TRUE(dequantize_row(DType::kIQ4_XS, row.data(), want.data(), kN).ok());
  for (int64_t b = 0; b < kN / 256; ++b) {
    const uint8_t* blk = row.data() + b * 136;
    const float d = q32::host_f16(blk);
    const uint32_t sh = cuda::blocks::rd_u16(blk + 2), sl = cuda::blocks::rd_u32(blk + 4);
    for (int j = 0; j < 8; ++j) {
      const float dl = d * static_cast<float>(q32::iq4xs::scale(sh, sl, j));
      for (int l = 0; l < 32; ++l) {
        const int byte = blk[8 + 16 * j + (l & 15)];
        const float level = cuda::blocks::iq4_level(static_cast<uint32_t>(l < 16 ? byte & 15 : byte >> 4));
        ASSERT_EQ(dl * level, want[b * 256 + 32 * j + l]) << "IQ4_XS block " << b << " sub-block " << j;
      }
    }
  }
}

TEST(CudaQ32Layout, LaneWordsHoldTheirElementsCodesAtEveryOffset) {
  uint32_t seed = 31;
  for (DType type : kBlockTypes) {
    const std::vector<uint8_t> row = quantized_row(type, 256, seed++);  // one group
    const int bytes = q32::group_bytes(type) / 8;
    for (int at = 0; at < 16; at += 2) {
      const std::vector<uint32_t> st = staged(row.data(), static_cast<int>(row.size()), at);
      for (int j = 0; j < 8; ++j) {
        for (int t = 0; t < 4; ++t) {
          uint32_t lo = 0, hi = 0;
          lane_codes(type, st.data(), at + bytes * j, t, lo, hi);
          for (int i = 0; i < 8; ++i) {
            const int got = byte_at(i < 4 ? lo : hi, i & 3);
            ASSERT_EQ(got, q32::host_code(type, row.data() + bytes * j, 8 * t + i))
                << dtype_name(type) << " at " << at << " block " << j << " lane t " << t << " element " << 8 * t + i;
          }
        }
      }
    }
  }
  const std::vector<uint8_t> row = quantized_row(DType::kIQ4_XS, 256, seed++);
  for (int at : {0, 8}) {
    const std::vector<uint32_t> st = staged(row.data(), 136, at);
    for (int j = 0; j < 8; ++j) {
      for (int t = 0; t < 4; ++t) {
        uint32_t lo = 0, hi = 0;
        q32::iq4xs::lane_codes(st.data(), at, j, t, lo, hi);
        for (int i = 0; i < 8; ++i) {
          const int l = 8 * t + i, byte = row[8 + 16 * j + (l & 15)];
          const float level = cuda::blocks::iq4_level(static_cast<uint32_t>(l < 16 ? byte & 15 : byte >> 4));
          ASSERT_EQ(static_cast<float>(byte_at(i < 4 ? lo : hi, i & 3)), level) << "IQ4_XS sub-block " << j << " t " << t;
        }
      }
    }
  }
}

TEST(CudaQ32Layout, PartialActivationBlocksQuantiseAbsentSubBlocksAsZeros) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int valid = 32; valid <= 256; valid += 32) {
    std::vector<float> x(256), padded(256, 0.0f);
    for (int i = 0; i < 256; ++i) x[i] = nd(rng);
    std::copy(x.begin(), x.begin() + valid, padded.begin());
    std::vector<int8_t> q(256, 99), qp(256);
    kq::KxBlock kb{}, kbp{};
    kq::quantize_block_host(x.data(), q.data(), &kb, valid);
    kq::quantize_block_host(padded.data(), qp.data(), &kbp);
    EXPECT_EQ(0, std::memcmp(&kb, &kbp, sizeof(kb))) << valid << " elements: not the zero-padded block's metadata";
    EXPECT_EQ(0, std::memcmp(q.data(), qp.data(), static_cast<size_t>(valid))) << valid;
    for (int i = valid; i < 256; ++i) ASSERT_EQ(q[i], 99) << "a code past the block's " << valid << " elements was written";
  }
}

TEST(CudaQ32Layout, GroupValueIsTheDotProductOfTheDequantisedRows) {
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  uint32_t seed = 51;
  const DType all[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kIQ4_XS};
  for (DType type : all) {
    for (int n_sub : {8, 3, 1}) {
      if (type == DType::kIQ4_XS && n_sub != 8) continue;
      const std::vector<uint8_t> row = quantized_row(type, 256, seed++);
      std::vector<float> w(256);
      ASSERT_TRUE(dequantize_row(type, row.data(), w.data(), 256).ok());
      std::vector<float> x(256);
      for (int i = 0; i < 256; ++i) x[i] = nd(rng) / static_cast<float>(1 << ((i / 32) % 4));
      std::vector<int8_t> q(256, 0);
      kq::KxBlock kb{};
      kq::quantize_block_host(x.data(), q.data(), &kb, 32 * n_sub);
      double dot = 0.0, mag = 0.0;
      for (int i = 0; i < 32 * n_sub; ++i) {
        const double xv = 8.0 * kb.d8 * q[i] / static_cast<double>(1 << (3 - kb.sh[i / 32]));  // the codes' values
        dot += static_cast<double>(w[i]) * xv;
        mag += std::fabs(static_cast<double>(w[i]) * xv);
      }
      const float got = q32::host_group_value(type, row.data(), n_sub, q.data(), kb);
      EXPECT_NEAR(got, dot, 1e-6 * mag + 1e-30) << dtype_name(type) << " n_sub " << n_sub;
    }
  }
}

}  // namespace
}  // namespace saker
