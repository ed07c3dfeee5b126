// The f16 tensor-core Q4_K matmul's index math and bit tricks (ops/cuda/kq_f16_layout.h), checked on the host:
// - A and B registers of every lane agree, at every PTX fragment position, on which element of the sub-block
//   a K position stands for, and each MMA pair covers the 32 elements once;
// - the masked code words are the f16 values 1024 + n / 1024 + 16 n of the right nibbles, and the scale words
//   the right 6-bit fields (against GGUF's get_scale_min_k4 written out);
// - the kernel's dequantisation steps, each rounded to f16 as the hardware's f16 instructions round, are exact
//   where the kernel relies on it and give dequant_block_host's weights;
// - an emulation of one warp's block (16 GGUF rows x 8 activation rows) through the fragment layout equals the
//   plain dot products with those weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "formats/quant/codec.h"
#include "ops/cuda/kq_f16_layout.h"
#include "ops/cuda/mma_layout.h"

namespace saker {
namespace {

namespace kf = cuda::kq_f16;
namespace mma = cuda::mma;

float lo_half(uint32_t v) { return fp16_to_fp32(static_cast<uint16_t>(v & 0xFFFF)); }
float hi_half(uint32_t v) { return fp16_to_fp32(static_cast<uint16_t>(v >> 16)); }

TEST(CudaKqF16Layout, FragmentsAgreeAndCoverTheSubBlock) {
  for (int p = 0; p < 2; ++p) {
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane >> 2, t = lane & 3;
      // B: logical k of register r half e -> element.
      int elem_of_k[16];
      for (int r = 0; r < 2; ++r) {
        for (int e = 0; e < 2; ++e) {
          const mma::RowCol rc = mma::b_elem(lane, 2 * r + e);
          EXPECT_EQ(rc.col, g);
          elem_of_k[rc.row] = kf::sub_elem(t, p, kf::b_pair(r), e);
        }
      }
      // A: register r half e holds row g (+ 8) at logical k; it must carry the element B has there.
      for (int r = 0; r < 4; ++r) {
        for (int e = 0; e < 2; ++e) {
          const mma::RowCol rc = mma::a_elem(lane, 2 * r + e);
          EXPECT_EQ(rc.row, g + (kf::a_upper(r) ? 8 : 0)) << "lane " << lane << " A reg " << r;
          const int k = rc.col;
          EXPECT_EQ(kf::sub_elem(t, p, kf::a_pair(r), e), elem_of_k[k]) << "p " << p << " lane " << lane << " A reg " << r;
        }
      }
    }
  }
  // Over lanes t and both MMAs, every element of the sub-block once; consecutive words tile the code bytes.
  std::vector<int> cover(32, 0);
  for (int p = 0; p < 2; ++p) {
    for (int t = 0; t < 4; ++t) {
      for (int pair = 0; pair < 2; ++pair) {
        for (int half = 0; half < 2; ++half) ++cover[kf::sub_elem(t, p, pair, half)];
      }
      for (int c = 0; c < 4; ++c) EXPECT_EQ(kf::word_byte(c, t, p), 32 * c + kf::sub_elem(t, p, 0, 0));
    }
  }
  for (int e = 0; e < 32; ++e) EXPECT_EQ(cover[e], 1) << "element " << e;
}

TEST(CudaKqF16Layout, CodeWordsAndScaleWords) {
  std::mt19937 rng(3);
  for (int it = 0; it < 2000; ++it) {
    const uint32_t word = rng();
    for (int h = 0; h < 2; ++h) {
      for (int pair = 0; pair < 2; ++pair) {
        const uint32_t m = kf::code_magic(word, h, pair);
        for (int half = 0; half < 2; ++half) {
          const int byte = (word >> (8 * (pair + 2 * half))) & 0xFF;  // word byte i = pair + 2 half
          const int n = h ? byte >> 4 : byte & 0xF;
          EXPECT_EQ(half ? hi_half(m) : lo_half(m), 1024.0f + (h ? 16 : 1) * n);
        }
      }
    }
    // Four f16 activations in two words pair up as the code words do (i 0, 2 and i 1, 3).
    const uint32_t xl = rng(), xh = rng();
    const uint16_t xs[4] = {static_cast<uint16_t>(xl), static_cast<uint16_t>(xl >> 16), static_cast<uint16_t>(xh),
                            static_cast<uint16_t>(xh >> 16)};
    for (int pair = 0; pair < 2; ++pair) {
      EXPECT_EQ(kf::x16_pair(xl, xh, pair), static_cast<uint32_t>(xs[pair]) | static_cast<uint32_t>(xs[pair + 2]) << 16);
    }
    uint8_t sc[12];
    for (auto& b : sc) b = static_cast<uint8_t>(rng());
    uint32_t y, z, w;
    std::memcpy(&y, sc, 4);
    std::memcpy(&z, sc + 4, 4);
    std::memcpy(&w, sc + 8, 4);
    const kf::ScaleWords words = kf::unpack_scales(y, z, w);
    for (int j = 0; j < 8; ++j) {
      const int s = j < 4 ? sc[j] & 63 : (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4);
      const int mn = j < 4 ? sc[j + 4] & 63 : (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
      const uint32_t m = kf::scale_magic(words, j);
      EXPECT_EQ(lo_half(m), 1024.0f + s) << "j " << j;
      EXPECT_EQ(hi_half(m), 1024.0f + mn) << "j " << j;
    }
  }
}

// The kernel's f16 steps, each an exact operation rounded to f16 once (HMUL2 / HADD2 / HFMA2 .rn).
float f16_mul(float a, float b) { return kf::round_f16_host(static_cast<double>(a) * b); }
float f16_fma(float a, float b, float c) { return kf::round_f16_host(static_cast<double>(a) * b + c); }

TEST(CudaKqF16Layout, DequantisationStepsGiveTheOracleWeights) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> exp(-24, 2);
  for (int it = 0; it < 3000; ++it) {
    // d and dmin of every magnitude a model stores, subnormals included.
    const float d = fp16_to_fp32(fp32_to_fp16(std::ldexp(1.0f + (rng() % 1024) / 1024.0f, exp(rng))));
    const float dmin = fp16_to_fp32(fp32_to_fp16(std::ldexp(1.0f + (rng() % 1024) / 1024.0f, exp(rng))));
    uint8_t blk[kf::kBlockBytes];
    for (auto& b : blk) b = static_cast<uint8_t>(rng());
    const uint16_t dh = fp32_to_fp16(d), mh = fp32_to_fp16(dmin);
    std::memcpy(blk, &dh, 2);
    std::memcpy(blk + 2, &mh, 2);
    float want[256];
    kf::dequant_block_host(blk, want);
    uint32_t y, z, w;
    std::memcpy(&y, blk + 4, 4);
    std::memcpy(&z, blk + 8, 4);
    std::memcpy(&w, blk + 12, 4);
    const kf::ScaleWords words = kf::unpack_scales(y, z, w);
    for (int c = 0; c < 4; ++c) {
      for (int t = 0; t < 4; ++t) {
        for (int p = 0; p < 2; ++p) {
          uint32_t q;
          std::memcpy(&q, blk + kf::kQs + kf::word_byte(c, t, p), 4);
          for (int h = 0; h < 2; ++h) {
            const uint32_t sm = kf::scale_magic(words, 2 * c + h);
            const float sc = kf::round_f16_host(lo_half(sm) - 1024.0), mn = kf::round_f16_host(hi_half(sm) - 1024.0);
            const float s = f16_mul(sc, d), m = f16_mul(mn, dmin);
            for (int pair = 0; pair < 2; ++pair) {
              const uint32_t cm = kf::code_magic(q, h, pair);
              for (int half = 0; half < 2; ++half) {
                const float v = half ? hi_half(cm) : lo_half(cm);
                const float n = h ? f16_fma(v, 0.0625f, -64.0f) : kf::round_f16_host(v - 1024.0);
                ASSERT_EQ(n, std::floor(n));
                ASSERT_LT(n, 16.0f);
                const float got = f16_fma(n, s, -m);
                const int e = 64 * c + 32 * h + kf::sub_elem(t, p, pair, half);
                ASSERT_EQ(got, want[e]) << "element " << e << " d " << d << " dmin " << dmin;
              }
            }
          }
        }
      }
    }
  }
}

TEST(CudaKqF16Layout, OneWarpBlockEqualsTheDotProducts) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::uniform_int_distribution<int> small(-4, 4);
  // 16 GGUF rows of one block and 8 activation rows.
  std::vector<float> wf(16 * 256);
  for (auto& v : wf) v = dist(rng);
  std::vector<uint8_t> rows(16 * kf::kBlockBytes);
  for (int r = 0; r < 16; ++r) {
    ASSERT_TRUE(quantize_row(DType::kQ4_K, wf.data() + 256 * r, rows.data() + kf::kBlockBytes * r, 256).ok());
  }
  std::vector<float> w16(16 * 256);
  for (int r = 0; r < 16; ++r) kf::dequant_block_host(rows.data() + kf::kBlockBytes * r, w16.data() + 256 * r);
  double X[8][256];
  for (auto& row : X) for (auto& v : row) v = small(rng);
  double D[16][8] = {};
  for (int c = 0; c < 4; ++c) {
    for (int h = 0; h < 2; ++h) {
      for (int p = 0; p < 2; ++p) {
        // One MMA: A[m][k], B[k][n] filled through each lane's registers.
        double A[16][16] = {}, B[16][8] = {};
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          for (int r = 0; r < 4; ++r) {
            const int row = g + (kf::a_upper(r) ? 8 : 0);
            for (int e = 0; e < 2; ++e) {
              const mma::RowCol rc = mma::a_elem(lane, 2 * r + e);
              A[rc.row][rc.col] = w16[256 * row + 64 * c + 32 * h + kf::sub_elem(t, p, kf::a_pair(r), e)];
            }
          }
          for (int r = 0; r < 2; ++r) {
            for (int e = 0; e < 2; ++e) {
              const mma::RowCol rc = mma::b_elem(lane, 2 * r + e);
              B[rc.row][rc.col] = X[g][64 * c + 32 * h + kf::sub_elem(t, p, kf::b_pair(r), e)];
            }
          }
        }
        for (int m = 0; m < 16; ++m) {
          for (int n = 0; n < 8; ++n) {
            for (int k = 0; k < 16; ++k) D[m][n] += A[m][k] * B[k][n];
          }
        }
      }
    }
  }
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      double want = 0;
      for (int e = 0; e < 256; ++e) want += static_cast<double>(w16[256 * m + e]) * X[n][e];
      EXPECT_NEAR(D[m][n], want, 1e-9) << "row " << m << " column " << n;
    }
  }
}

// ---- Q6_K

TEST(CudaKqF16Layout, Q6FragmentsAgreeAndCoverTheSubBlock) {
  std::vector<int> cover(256, 0);
  for (int h = 0; h < 2; ++h) {
    for (int r = 0; r < 4; ++r) {
      for (int sb = 0; sb < 2; ++sb) {
        const int base = 128 * h + 32 * r + 16 * sb;
        for (int lane = 0; lane < 32; ++lane) {
          const int t = lane & 3;
          int elem_of_k[16];
          for (int reg = 0; reg < 2; ++reg) {
            for (int e = 0; e < 2; ++e) {
              const mma::RowCol rc = mma::b_elem(lane, 2 * reg + e);
              elem_of_k[rc.row] = kf::q6::elem(h, r, sb, t, kf::b_pair(reg), e);
              ++cover[elem_of_k[rc.row]];
            }
          }
          for (int reg = 0; reg < 4; ++reg) {
            for (int e = 0; e < 2; ++e) {
              const mma::RowCol rc = mma::a_elem(lane, 2 * reg + e);
              EXPECT_EQ(kf::q6::elem(h, r, sb, t, kf::a_pair(reg), e), elem_of_k[rc.col]);
            }
          }
          // The lane's elements are the four its ql and qh words hold.
          for (int i = 0; i < 4; ++i) {
            const int e = base + 4 * t + i, l = e % 32;
            EXPECT_EQ(kf::q6::ql_byte(h, r, sb, t) + i, 64 * h + 32 * (r & 1) + l);
            EXPECT_EQ(kf::q6::qh_byte(h, sb, t) + i, kf::q6::kQh + 32 * h + l);
          }
        }
      }
    }
  }
  // Each element once per group g of eight lanes (B columns): 8 of them.
  for (int e = 0; e < 256; ++e) EXPECT_EQ(cover[e], 8) << "element " << e;
}

TEST(CudaKqF16Layout, Q6CodesAndScales) {
  std::mt19937 rng(13);
  for (int it = 0; it < 2000; ++it) {
    const uint32_t ql = rng(), qh = rng(), word = rng();
    for (int r = 0; r < 4; ++r) {
      const uint32_t c = kf::q6::codes(ql, qh, r);
      for (int i = 0; i < 4; ++i) {
        const int want = ((ql >> (8 * i + 4 * (r >> 1))) & 0xF) | (((qh >> (8 * i + 2 * r)) & 3) << 4);
        EXPECT_EQ(static_cast<int>((c >> (8 * i)) & 0xFF), want);
      }
      for (int pair = 0; pair < 2; ++pair) {
        const uint32_t m = kf::q6::code_magic(c, pair);
        EXPECT_EQ(lo_half(m), 1024.0f + ((c >> (8 * pair)) & 0xFF));
        EXPECT_EQ(hi_half(m), 1024.0f + ((c >> (8 * (pair + 2))) & 0xFF));
      }
    }
    for (int i = 0; i < 4; i += 2) {
      const uint32_t m = kf::q6::scale_magic(word, i);
      EXPECT_EQ(lo_half(m) - 1152.0f, static_cast<float>(static_cast<int8_t>(word >> (8 * i))));
      EXPECT_EQ(hi_half(m) - 1152.0f, static_cast<float>(static_cast<int8_t>(word >> (8 * (i + 1)))));
    }
  }
}

uint32_t word_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

TEST(CudaKqF16Layout, Q6DequantisationStepsGiveTheOracleWeights) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> exp(-24, 0);
  for (int it = 0; it < 2000; ++it) {
    uint8_t blk[kf::q6::kBlockBytes + 2];
    for (auto& b : blk) b = static_cast<uint8_t>(rng());
    const uint16_t dh = fp32_to_fp16(std::ldexp(1.0f + (rng() % 1024) / 1024.0f, exp(rng)));
    std::memcpy(blk + kf::q6::kD, &dh, 2);
    const float d = fp16_to_fp32(dh);
    float want[256];
    kf::dequant_q6_block_host(blk, want);
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < 4; ++r) {
        const int i0 = 8 * h + 2 * r;  // the scale pair (i0, i0 + 1)
        const uint32_t sm = kf::q6::scale_magic(word_at(blk + kf::q6::kScales + 4 * (i0 >> 2)), i0);
        const float sc[2] = {kf::round_f16_host(lo_half(sm) - 1152.0), kf::round_f16_host(hi_half(sm) - 1152.0)};
        for (int sb = 0; sb < 2; ++sb) {
          const float s = f16_mul(sc[sb], d);
          for (int t = 0; t < 4; ++t) {
            const uint32_t c = kf::q6::codes(word_at(blk + kf::q6::ql_byte(h, r, sb, t)),
                                             word_at(blk + kf::q6::qh_byte(h, sb, t)), r);
            for (int pair = 0; pair < 2; ++pair) {
              const uint32_t m = kf::q6::code_magic(c, pair);
              for (int half = 0; half < 2; ++half) {
                const float n = kf::round_f16_host((half ? hi_half(m) : lo_half(m)) - 1056.0);
                const float got = f16_mul(n, s);
                const int e = kf::q6::elem(h, r, sb, t, pair, half);
                ASSERT_EQ(got, want[e]) << "element " << e << " d " << d;
              }
            }
          }
        }
      }
    }
  }
}

// Blocks staged as the kernel stages them (16-byte chunks from the boundary at or below the block's start) read
// back every word of the block through stage_at / staged_word, for rows that start anywhere (Q6_K rows of 9
// blocks are 1,890 bytes), never reading past the matrix's 16 bytes of slack.
TEST(CudaKqF16Layout, StagedBlocksReadBackTheirWords) {
  const int64_t row_bytes = 9 * kf::q6::kBlockBytes, n_rows = 5;
  std::vector<uint8_t> m(static_cast<size_t>(row_bytes * n_rows + 16));
  std::mt19937 rng(19);
  for (auto& b : m) b = static_cast<uint8_t>(rng());
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t b = 0; b < 9; ++b) {
      const int64_t start = r * row_bytes + b * kf::q6::kBlockBytes;
      uint32_t row[60] = {};  // 240 bytes: the kernel's staged row stride
      for (int c = 0; c < kf::q6::kStageChunks; ++c) {
        const int64_t src = kf::stage_chunk_src(start, c);
        ASSERT_LE(src + 16, static_cast<int64_t>(m.size())) << "a copy past the slack";
        std::memcpy(reinterpret_cast<uint8_t*>(row) + 16 * c, m.data() + src, 16);
      }
      const int at = kf::stage_at(start);
      ASSERT_EQ(at % 2, 0);
      for (int off = 0; off + 4 <= kf::q6::kBlockBytes; off += 2) {
        ASSERT_EQ(kf::staged_word(row, at + off), word_at(m.data() + start + off)) << "row " << r << " block " << b << " byte " << off;
      }
    }
  }
}

}  // namespace
}  // namespace saker
