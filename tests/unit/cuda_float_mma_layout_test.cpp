// The width-invariant F16 / BF16 matmul's index math (ops/cuda/float_mma_layout.h), checked on the host: the
// registers each lane passes to the two MMAs of a chunk hold, at every PTX fragment position, the physical
// element that chunk_k names, for the weights and the activations alike; and an emulation of one warp's chunk
// (16 weight rows x 8 activation rows x 32 elements) through the PTX fragment layout equals the plain dot
// products, so every element is multiplied exactly once with its own partner.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ops/cuda/float_mma_layout.h"
#include "ops/cuda/mma_layout.h"

namespace saker {
namespace {

namespace fm = cuda::float_mma;
namespace mma = cuda::mma;

// Physical element (0..31 of the chunk) in half `half` of word `word` of lane's 16-byte load.
int loaded_elem(int lane, int word, int half) { return 8 * (lane & 3) + fm::lane_elem(word) + half; }

TEST(CudaFloatMmaLayout, RegistersHoldTheElementsChunkKNames) {
  for (int h = 0; h < 2; ++h) {
    for (int lane = 0; lane < 32; ++lane) {
      for (int j = 0; j < 4; ++j) {  // A register j = fragment elements 2j, 2j + 1
        const fm::AWord aw = fm::a_word(h, j);
        for (int half = 0; half < 2; ++half) {
          const mma::RowCol rc = mma::a_elem(lane, 2 * j + half);
          EXPECT_EQ(rc.row, (lane >> 2) + (aw.upper ? 8 : 0)) << "h " << h << " lane " << lane << " reg " << j;
          EXPECT_EQ(loaded_elem(lane, aw.word, half), fm::chunk_k(h, rc.col))
              << "h " << h << " lane " << lane << " reg " << j << " half " << half;
        }
      }
      for (int j = 0; j < 2; ++j) {  // B register j = fragment elements 2j, 2j + 1
        for (int half = 0; half < 2; ++half) {
          const mma::RowCol rc = mma::b_elem(lane, 2 * j + half);
          EXPECT_EQ(rc.col, lane >> 2);
          EXPECT_EQ(loaded_elem(lane, fm::b_word(h, j), half), fm::chunk_k(h, rc.row))
              << "h " << h << " lane " << lane << " B reg " << j << " half " << half;
        }
      }
    }
  }
  // The two MMAs together cover the 32 elements of the chunk once each.
  std::vector<int> cover(fm::kChunk, 0);
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 16; ++k) ++cover[fm::chunk_k(h, k)];
  }
  for (int e = 0; e < fm::kChunk; ++e) EXPECT_EQ(cover[e], 1) << "element " << e;
}

TEST(CudaFloatMmaLayout, OneWarpChunkEqualsTheDotProducts) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-8, 8);  // exact in any order
  int64_t W[16][32], X[8][32];
  for (auto& row : W) for (auto& v : row) v = small(rng);
  for (auto& row : X) for (auto& v : row) v = small(rng);
  int64_t D[16][8] = {};
  for (int h = 0; h < 2; ++h) {
    // Gather the MMA's logical A [16 x 16] and B [16 x 8] from what each lane's registers hold.
    int64_t A[16][16] = {}, B[16][8] = {};
    bool a_set[16][16] = {}, b_set[16][8] = {};
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane >> 2;
      for (int j = 0; j < 4; ++j) {
        const fm::AWord aw = fm::a_word(h, j);
        for (int half = 0; half < 2; ++half) {
          const mma::RowCol rc = mma::a_elem(lane, 2 * j + half);
          A[rc.row][rc.col] = W[g + (aw.upper ? 8 : 0)][loaded_elem(lane, aw.word, half)];
          a_set[rc.row][rc.col] = true;
        }
      }
      for (int j = 0; j < 2; ++j) {
        for (int half = 0; half < 2; ++half) {
          const mma::RowCol rc = mma::b_elem(lane, 2 * j + half);
          B[rc.row][rc.col] = X[g][loaded_elem(lane, fm::b_word(h, j), half)];
          b_set[rc.row][rc.col] = true;
        }
      }
    }
    for (int m = 0; m < 16; ++m) {
      for (int k = 0; k < 16; ++k) ASSERT_TRUE(a_set[m][k]);
    }
    for (int k = 0; k < 16; ++k) {
      for (int n = 0; n < 8; ++n) ASSERT_TRUE(b_set[k][n]);
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        for (int k = 0; k < 16; ++k) D[m][n] += A[m][k] * B[k][n];
      }
    }
  }
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      int64_t want = 0;
      for (int e = 0; e < 32; ++e) want += W[m][e] * X[n][e];
      EXPECT_EQ(D[m][n], want) << "m " << m << " n " << n;
    }
  }
}

TEST(CudaFloatMmaLayout, WarpQuartersAreWholeChunks) {
  for (int64_t n_in : {128, 4096, 12288, 20480}) {
    ASSERT_TRUE(fm::n_in_supported(n_in));
    for (int w = 0; w < fm::kWarps; ++w) {
      EXPECT_EQ(fm::warp_k_begin(n_in, w) % fm::kChunk, 0);
      EXPECT_EQ(fm::warp_k_begin(n_in, w), n_in / fm::kWarps * w);
    }
  }
  for (int64_t n_in : {0, 64, 96, 4000}) EXPECT_FALSE(fm::n_in_supported(n_in)) << n_in;
}

}  // namespace
}  // namespace saker
