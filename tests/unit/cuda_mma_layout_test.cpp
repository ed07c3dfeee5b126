// The tensor-core matmul's index math (ops/cuda/mma_layout.h), checked on the host: the fragment helpers
// against the PTX ISA's m16n8k16 layout (transcribed here independently), then a lane-by-lane emulation of
// matmul_mma_kernel (decode into the step tile, A/B fragment loads, the MMA, the K-split reduction and the
// epilogue) against a plain dot product, for several weight formats, odd n_out and partial n-tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "formats/quant/codec.h"
#include "ops/cuda/mma_layout.h"

namespace saker {
namespace {

namespace mma = cuda::mma;

// PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" (f16/bf16 A and B, f32 C/D).
mma::RowCol ptx_a(int lane, int i) {
  const int g = lane / 4, t = lane % 4;
  const bool lower = i == 2 || i == 3 || i == 6 || i == 7;
  return {g + (lower ? 8 : 0), t * 2 + (i % 2) + (i >= 4 ? 8 : 0)};
}
mma::RowCol ptx_b(int lane, int i) {
  const int g = lane / 4, t = lane % 4;
  return {t * 2 + (i % 2) + (i >= 2 ? 8 : 0), g};
}
mma::RowCol ptx_c(int lane, int i) {
  const int g = lane / 4, t = lane % 4;
  return {g + (i >= 2 ? 8 : 0), t * 2 + (i % 2)};
}

TEST(CudaMmaLayout, FragmentHelpersMatchPtx) {
  std::vector<int> a_seen(256, 0), b_seen(128, 0), c_seen(128, 0);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const mma::RowCol h = mma::a_elem(lane, i), p = ptx_a(lane, i);
      EXPECT_EQ(h.row, p.row);
      EXPECT_EQ(h.col, p.col);
      ++a_seen[p.row * 16 + p.col];
    }
    for (int i = 0; i < 4; ++i) {
      const mma::RowCol hb = mma::b_elem(lane, i), pb = ptx_b(lane, i);
      EXPECT_EQ(hb.row, pb.row);
      EXPECT_EQ(hb.col, pb.col);
      ++b_seen[pb.row * 8 + pb.col];
      const mma::RowCol hc = mma::c_elem(lane, i), pc = ptx_c(lane, i);
      EXPECT_EQ(hc.row, pc.row);
      EXPECT_EQ(hc.col, pc.col);
      ++c_seen[pc.row * 8 + pc.col];
    }
    // The kernel loads a register pair (2j, 2j + 1) as one 32-bit word and b0 b1 / b2 b3 as float pairs.
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(mma::a_elem(lane, 2 * j + 1).row, mma::a_elem(lane, 2 * j).row);
      EXPECT_EQ(mma::a_elem(lane, 2 * j + 1).col, mma::a_elem(lane, 2 * j).col + 1);
    }
    EXPECT_EQ(mma::b_elem(lane, 1).row, mma::b_elem(lane, 0).row + 1);
    EXPECT_EQ(mma::b_elem(lane, 2).row, mma::b_elem(lane, 0).row + 8);
    EXPECT_EQ(mma::b_elem(lane, 3).row, mma::b_elem(lane, 0).row + 9);
  }
  for (int v : a_seen) EXPECT_EQ(v, 1);
  for (int v : b_seen) EXPECT_EQ(v, 1);
  for (int v : c_seen) EXPECT_EQ(v, 1);
  // Every epilogue thread index maps to a distinct (m, n).
  std::vector<int> seen(16 * 64, 0);
  for (int e = 0; e < 8 * 128; ++e) {
    const mma::OutElem oe = mma::red_elem(e);
    ASSERT_LT(oe.m, 16);
    ASSERT_LT(oe.n, 64);
    ++seen[oe.m * 64 + oe.n];
  }
  for (int v : seen) EXPECT_EQ(v, 1);
}

// Lane-by-lane emulation of matmul_mma_kernel (4 warps, NT n-tiles), values kept in f32.
template <class F>
std::vector<float> emulate(const uint8_t* w, int64_t rb, int n_out, int n_in, const std::vector<float>& x, int rows) {
  constexpr int kWarps = 4;
  const int nt_count = rows <= 8 ? 1 : rows <= 16 ? 2 : rows <= 32 ? 4 : 8;
  const int n_steps = n_in / mma::kStepElems;
  constexpr int kBlocksPerStep = mma::kStepElems / F::kBlockElems;
  std::vector<float> out(static_cast<size_t>(rows) * n_out, std::nanf(""));
  for (int o0 = 0; o0 < n_out; o0 += mma::kTileRows) {
    std::vector<float> red(static_cast<size_t>(kWarps) * nt_count * 128, 0.0f);
    for (int warp = 0; warp < kWarps; ++warp) {
      std::vector<float> c(32 * nt_count * 4, 0.0f);  // [lane][nt][i]
      for (int s = warp; s < n_steps; s += kWarps) {
        std::vector<float> tile(mma::kTileRows * mma::kTilePitch, std::nanf(""));
        for (int lane = 0; lane < 32; ++lane) {
          const int su = mma::decode_unit_of_step(lane);
          for (int i = 0; i < 4; ++i) {
            const int r = std::min(o0 + mma::decode_row(lane, i), n_out - 1);
            const uint8_t* p = w + r * rb + mma::step_block<F>(su) * F::kBlockBytes +
                               static_cast<int64_t>(s) * kBlocksPerStep * F::kBlockBytes;
            float v[32];
            F::decode_unit(p, mma::step_unit<F>(su), v);
            for (int q = 0; q < 4; ++q) {
              const int col = mma::tile_col<F>(su, q);
              EXPECT_EQ(col % 8, 0);
              for (int j = 0; j < 8; ++j) tile[mma::decode_row(lane, i) * mma::kTilePitch + col + j] = v[8 * q + j];
            }
          }
        }
        for (int kt = 0; kt < mma::kStepElems / 16; ++kt) {
          for (int nt = 0; nt < nt_count; ++nt) {
            // Registers as the kernel loads them.
            float a[32][8], b[32][4];
            for (int lane = 0; lane < 32; ++lane) {
              for (int j = 0; j < 4; ++j) {
                const mma::RowCol rc = mma::a_elem(lane, 2 * j);
                a[lane][2 * j] = tile[rc.row * mma::kTilePitch + 16 * kt + rc.col];
                a[lane][2 * j + 1] = tile[rc.row * mma::kTilePitch + 16 * kt + rc.col + 1];
              }
              const int n = nt * 8 + (lane >> 2);
              const int k0 = s * mma::kStepElems + 16 * kt + mma::b_elem(lane, 0).row;
              for (int i = 0; i < 4; ++i) {
                b[lane][i] = n < rows ? x[static_cast<size_t>(n) * n_in + k0 + (i & 1) + 8 * (i >> 1)] : 0.0f;
              }
            }
            // The hardware, per the PTX layout.
            float am[16][16], bm[16][8];
            for (int lane = 0; lane < 32; ++lane) {
              for (int i = 0; i < 8; ++i) am[ptx_a(lane, i).row][ptx_a(lane, i).col] = a[lane][i];
              for (int i = 0; i < 4; ++i) bm[ptx_b(lane, i).row][ptx_b(lane, i).col] = b[lane][i];
            }
            for (int lane = 0; lane < 32; ++lane) {
              for (int i = 0; i < 4; ++i) {
                const mma::RowCol rc = ptx_c(lane, i);
                float d = 0.0f;
                for (int k = 0; k < 16; ++k) d += am[rc.row][k] * bm[k][rc.col];
                c[(lane * nt_count + nt) * 4 + i] += d;
              }
            }
          }
        }
      }
      for (int lane = 0; lane < 32; ++lane) {
        for (int nt = 0; nt < nt_count; ++nt) {
          for (int i = 0; i < 4; ++i) red[mma::red_index(nt_count, warp, nt, i, lane)] = c[(lane * nt_count + nt) * 4 + i];
        }
      }
    }
    for (int e = 0; e < nt_count * 128; ++e) {
      float sum = 0.0f;
      for (int ww = 0; ww < kWarps; ++ww) sum += red[static_cast<size_t>(ww) * nt_count * 128 + e];
      const mma::OutElem oe = mma::red_elem(e);
      if (o0 + oe.m < n_out && oe.n < rows) out[static_cast<size_t>(oe.n) * n_out + o0 + oe.m] = sum;
    }
  }
  return out;
}

template <DType T>
void check_format(int n_out, int n_in, int rows, uint32_t seed) {
  using F = cuda::blocks::Fmt<T>;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> wf(static_cast<size_t>(n_out) * n_in), x(static_cast<size_t>(rows) * n_in);
  for (auto& v : wf) v = 0.05f * dist(rng);
  for (auto& v : x) v = dist(rng);
  const uint64_t rb = *row_bytes(T, n_in);
  std::vector<uint8_t> w(rb * n_out);
  for (int r = 0; r < n_out; ++r) ASSERT_TRUE(quantize_row(T, wf.data() + static_cast<size_t>(r) * n_in, w.data() + r * rb, n_in).ok());
  std::vector<float> deq(static_cast<size_t>(n_in));
  const std::vector<float> got = emulate<F>(w.data(), static_cast<int64_t>(rb), n_out, n_in, x, rows);
  double num = 0, den = 0;
  for (int o = 0; o < n_out; ++o) {
    ASSERT_TRUE(dequantize_row(T, w.data() + o * rb, deq.data(), n_in).ok());
    for (int t = 0; t < rows; ++t) {
      double ref = 0;
      for (int k = 0; k < n_in; ++k) ref += static_cast<double>(deq[k]) * x[static_cast<size_t>(t) * n_in + k];
      const double g = got[static_cast<size_t>(t) * n_out + o];
      ASSERT_FALSE(std::isnan(g)) << "o=" << o << " t=" << t;
      num += (g - ref) * (g - ref);
      den += ref * ref;
    }
  }
  EXPECT_LT(num / den, 1e-10) << dtype_name(T) << " n_out=" << n_out << " n_in=" << n_in << " rows=" << rows;
}

TEST(CudaMmaLayout, EmulatedKernelMatchesDotProduct) {
  check_format<DType::kQ4_K>(37, 512, 3, 1);
  check_format<DType::kQ4_K>(16, 2048, 64, 2);
  check_format<DType::kQ6_K>(21, 1280, 17, 3);
  check_format<DType::kQ5_K>(16, 256, 9, 4);
  check_format<DType::kQ8_0>(19, 768, 33, 5);
  check_format<DType::kQ4_0>(5, 256, 2, 6);
  check_format<DType::kIQ4_XS>(30, 512, 8, 7);
  check_format<DType::kF16>(17, 512, 16, 8);
  check_format<DType::kBF16>(33, 256, 40, 9);
}

}  // namespace
}  // namespace saker
