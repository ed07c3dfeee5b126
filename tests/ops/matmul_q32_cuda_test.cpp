// The 32-element formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) and IQ4_XS on the width-invariant int8 kernel
// (matmul_kq_mma.cu with q32_layout.h), in contexts made with MatmulOptions::invariant: every output equals the
// canonical order of kq_canon.h recomputed on the host, bit for bit, including rows whose n_in ends in a partial
// 256-element group; a row's output does not depend on how many rows share the call; and contexts without the
// option keep the default kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/cuda/kq_canon.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda/norm_rope.h"
#include "ops/cuda/q32_layout.h"
#include "ops/cuda_test_util.h"
#include "ops/matmul_test_util.h"

namespace saker {
namespace {

namespace kq = cuda::kq;
namespace q32 = cuda::q32;

constexpr cuda::MatmulOptions kInvariant{.invariant = true};

struct Shape {
  DType type;
  int64_t n_out, n_in;
};
// Whole groups (1, 9 and 16 a row: streams of unequal length), partial last groups of 1 .. 7 sub-blocks (rows
// 2- or 4-byte aligned, at many offsets mod 16), a row of one partial group, odd n_out.
constexpr Shape kShapes[] = {
    {DType::kQ8_0, 301, 2304}, {DType::kQ8_0, 45, 384},    {DType::kQ8_0, 20, 32},     {DType::kQ8_0, 19, 448},
    {DType::kQ4_0, 77, 576},   {DType::kQ4_0, 23, 480},    {DType::kQ4_1, 37, 896},    {DType::kQ5_0, 16, 4096},
    {DType::kQ5_0, 29, 2400},  {DType::kQ5_1, 45, 352},    {DType::kQ5_1, 21, 416},    {DType::kIQ4_NL, 33, 288},
    {DType::kIQ4_NL, 24, 256}, {DType::kIQ4_XS, 77, 2304}, {DType::kIQ4_XS, 16, 4096},
};
constexpr int64_t kMaxIn = 4096, kMaxOut = 301;

std::string name(const Shape& s) {
  return std::string(dtype_name(s.type)) + " " + std::to_string(s.n_out) + "x" + std::to_string(s.n_in);
}

// The host quantisation of x, row by row (a row's last block partial where n_in is not a multiple of 256).
struct HostBlocks {
  std::vector<int8_t> q;         // [rows, n_in]
  std::vector<kq::KxBlock> kx;   // [rows, n_blocks]
  int64_t n_blocks = 0;
};
HostBlocks quantize_rows(const std::vector<float>& x, int64_t rows, int64_t n_in) {
  HostBlocks h;
  h.n_blocks = (n_in + kq::kBlock - 1) / kq::kBlock;
  h.q.assign(static_cast<size_t>(rows * n_in), 0);
  h.kx.resize(static_cast<size_t>(rows * h.n_blocks));
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t b = 0; b < h.n_blocks; ++b) {
      const int64_t at = t * n_in + b * kq::kBlock;
      const int valid = static_cast<int>(std::min<int64_t>(kq::kBlock, n_in - b * kq::kBlock));
      kq::quantize_block_host(x.data() + at, h.q.data() + at, &h.kx[t * h.n_blocks + b], valid);
    }
  }
  return h;
}

// One weight row times activation row t in the canonical order.
float oracle(DType type, const uint8_t* wrow, int64_t n_in, const HostBlocks& h, int64_t t) {
  const int gb = q32::group_bytes(type);
  float streams[kq::kStreams] = {};
  for (int64_t b = 0; b < h.n_blocks; ++b) {
    const int n_sub = static_cast<int>(std::min<int64_t>(kq::kBlock, n_in - b * kq::kBlock) / kq::kSub);
    const float v = q32::host_group_value(type, wrow + b * gb, n_sub, h.q.data() + t * n_in + b * kq::kBlock,
                                          h.kx[t * h.n_blocks + b]);
    streams[b % kq::kStreams] = kq::fadd(streams[b % kq::kStreams], v);
  }
  return kq::combine_streams(streams);
}

TEST(CudaMatmulQ32, OnlyContextsAskingForInvarianceTakeTheKernel) {
  for (const Shape& s : kShapes) {
    EXPECT_FALSE(cuda::matmul_width_invariant(s.type, s.n_in)) << name(s);
    EXPECT_EQ(cuda::matmul_width_invariant(s.type, s.n_in, kInvariant), testing::invariant_matmul_env_on()) << name(s);
  }
  EXPECT_FALSE(cuda::matmul_width_invariant(DType::kQ8_0, 48, kInvariant)) << "n_in not a multiple of 32";
  EXPECT_FALSE(cuda::matmul_width_invariant(DType::kIQ4_XS, 384, kInvariant)) << "IQ4_XS blocks are 256 elements";
}

TEST(CudaMatmulQ32, EqualsCanonicalOrderBitForBit) {
  SAKER_REQUIRE_GPU();
  if (!testing::invariant_matmul_env_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr int64_t kRows = 64;
  auto ctx = cuda::MatmulContext::create(kRows, kMaxIn, kMaxOut, kInvariant);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 7100;
  for (const Shape& s : kShapes) {
    const std::vector<uint8_t> w = testing::make_weights(s.type, s.n_out, s.n_in, seed++);
    cuda::DeviceMatrix dm = testing::upload_weights(s.type, w, s.n_out, s.n_in);
    ASSERT_NE(dm.data, nullptr);
    const std::vector<float> x = testing::varied_activations(kRows, s.n_in, seed++);
    const std::vector<float> base = testing::random_floats(static_cast<size_t>(kRows * s.n_out), seed++);
    const HostBlocks h = quantize_rows(x, kRows, s.n_in);
    const uint64_t rb = *row_bytes(s.type, s.n_in);
    for (bool accumulate : {false, true}) {
      testing::DeviceArray<float> dx(x), dout(base);
      ASSERT_TRUE(cuda::matmul(**ctx, dm, dx.get(), kRows, dout.get(), s.n_out, accumulate, nullptr).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> got = dout.to_host();
      int64_t mismatches = 0;
      for (int64_t t = 0; t < kRows; ++t) {
        for (int64_t o = 0; o < s.n_out; ++o) {
          float want = oracle(s.type, w.data() + o * rb, s.n_in, h, t);
          if (accumulate) want = kq::fadd(base[t * s.n_out + o], want);
          const float g = got[t * s.n_out + o];
          if (std::memcmp(&g, &want, sizeof(float)) != 0 && mismatches++ < 5) {
            ADD_FAILURE() << name(s) << " acc=" << accumulate << ": row " << t << " out " << o << " got " << g
                          << " want " << want;
          }
        }
      }
      EXPECT_EQ(mismatches, 0) << name(s);
    }
    // And the dot product of the dequantised weights with the values of the activation codes, to float rounding
    // (the oracle is exact to its own definition; this catches a definition that reads the format wrong).
    std::vector<float> wf(static_cast<size_t>(s.n_out * s.n_in));
    for (int64_t o = 0; o < s.n_out; ++o) {
      ASSERT_TRUE(dequantize_row(s.type, w.data() + o * rb, wf.data() + o * s.n_in, s.n_in).ok());
    }
    std::vector<double> xv(x.size());  // the codes' values: 8 d8 q / 2^(3 - sh)
    for (int64_t t = 0; t < kRows; ++t) {
      for (int64_t i = 0; i < s.n_in; ++i) {
        const kq::KxBlock& kb = h.kx[t * h.n_blocks + i / kq::kBlock];
        xv[t * s.n_in + i] = 8.0 * kb.d8 * h.q[t * s.n_in + i] / static_cast<double>(1 << (3 - kb.sh[(i % kq::kBlock) / kq::kSub]));
      }
    }
    testing::DeviceArray<float> dx(x), dout(static_cast<size_t>(kRows * s.n_out));
    ASSERT_TRUE(cuda::matmul(**ctx, dm, dx.get(), kRows, dout.get(), s.n_out, false, nullptr).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = dout.to_host();
    int64_t far = 0;
    for (int64_t t = 0; t < kRows; ++t) {
      for (int64_t o = 0; o < s.n_out; ++o) {
        double want = 0, mag = 0;
        for (int64_t i = 0; i < s.n_in; ++i) {
          want += static_cast<double>(wf[o * s.n_in + i]) * xv[t * s.n_in + i];
          mag += std::fabs(static_cast<double>(wf[o * s.n_in + i]) * xv[t * s.n_in + i]);
        }
        if (!(std::fabs(got[t * s.n_out + o] - want) <= 1e-5 * mag + 1e-9) && far++ < 5) {
          ADD_FAILURE() << name(s) << " row " << t << " out " << o << ": " << got[t * s.n_out + o]
                        << " against the dot product " << want;
        }
      }
    }
    EXPECT_EQ(far, 0) << name(s);
    cuda::free_matrix(&dm);
  }
}

TEST(CudaMatmulQ32, RowsAreWidthInvariantUpTo64) {
  SAKER_REQUIRE_GPU();
  if (!testing::invariant_matmul_env_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr int64_t kRows = 64;
  auto ctx = cuda::MatmulContext::create(kRows, kMaxIn, kMaxOut, kInvariant);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 7300;
  for (const Shape& s : kShapes) {
    const std::vector<uint8_t> w = testing::make_weights(s.type, s.n_out, s.n_in, seed++);
    cuda::DeviceMatrix dm = testing::upload_weights(s.type, w, s.n_out, s.n_in);
    ASSERT_NE(dm.data, nullptr);
    const std::vector<float> x = testing::varied_activations(kRows, s.n_in, seed++);
    testing::DeviceArray<float> dx(x), dout(static_cast<size_t>(kRows * s.n_out));
    const std::vector<float> nans(static_cast<size_t>(kRows * s.n_out), std::nanf(""));
    auto run = [&](int64_t first, int64_t rows) {
      dout.copy_from(nans);  // a launch that writes nothing must not pass
      EXPECT_TRUE(cuda::matmul(**ctx, dm, dx.get() + first * s.n_in, rows, dout.get(), s.n_out, false, nullptr).ok());
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<float> all = dout.to_host();
      all.resize(static_cast<size_t>(rows * s.n_out));
      return all;
    };
    const std::vector<float> full = run(0, kRows);
    for (int64_t rows : {1, 2, 3, 7, 8, 9, 16, 17, 33, 63}) {
      for (int64_t first : {int64_t{0}, kRows - rows}) {
        const std::vector<float> got = run(first, rows);
        for (int64_t t = 0; t < rows; ++t) {
          ASSERT_EQ(0, std::memcmp(got.data() + t * s.n_out, full.data() + (first + t) * s.n_out,
                                   sizeof(float) * static_cast<size_t>(s.n_out)))
              << name(s) << ": row " << first + t << " in a call of " << rows << " rows differs from the 64-row call";
        }
      }
    }
    cuda::free_matrix(&dm);
  }
}

// The fused norm quantises whole 256-element blocks: it is offered for whole-group rows only, and then gives the
// matmul's own bits.
TEST(CudaMatmulQ32, NormFusedQuantisationOnlyForWholeBlocks) {
  SAKER_REQUIRE_GPU();
  if (!testing::invariant_matmul_env_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  auto ctx = cuda::MatmulContext::create(64, kMaxIn, kMaxOut, kInvariant);
  auto plain = cuda::MatmulContext::create(64, kMaxIn, kMaxOut);
  ASSERT_TRUE(ctx.ok() && plain.ok());
  uint32_t seed = 7500;
  for (const Shape& s : {Shape{DType::kQ8_0, 45, 384}, Shape{DType::kQ4_1, 37, 2304}}) {
    const std::vector<uint8_t> w = testing::make_weights(s.type, s.n_out, s.n_in, seed++);
    cuda::DeviceMatrix dm = testing::upload_weights(s.type, w, s.n_out, s.n_in);
    ASSERT_NE(dm.data, nullptr);
    const std::vector<float> gamma = testing::random_floats(static_cast<size_t>(s.n_in), seed++);
    testing::DeviceArray<float> dgamma(gamma);
    for (int64_t rows : {1, 5, 64}) {
      const std::vector<float> x = testing::varied_activations(rows, s.n_in, seed++);
      testing::DeviceArray<float> dx(x), normed_a(x.size()), normed_b(x), out_a(rows * s.n_out), out_b(rows * s.n_out);
      EXPECT_FALSE(cuda::matmul_quantizes_input(**plain, dm, dx.get(), rows)) << name(s) << ": default context";
      const bool whole = s.n_in % kq::kBlock == 0;
      ASSERT_EQ(cuda::matmul_quantizes_input(**ctx, dm, dx.get(), rows), whole) << name(s);
      if (!whole) {
        // A caller that says x is quantised where it cannot be gets x quantised anyway: the same bits.
        ASSERT_TRUE(cuda::matmul(**ctx, dm, dx.get(), rows, out_a.get(), s.n_out, false, nullptr).ok());
        ASSERT_TRUE(cuda::matmul(**ctx, dm, dx.get(), rows, out_b.get(), s.n_out, false, nullptr, true).ok());
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<float> oa = out_a.to_host(), ob = out_b.to_host();
        EXPECT_EQ(0, std::memcmp(oa.data(), ob.data(), oa.size() * sizeof(float))) << name(s) << " rows " << rows;
        continue;
      }
      ASSERT_TRUE(cuda::rms_norm(dx.get(), dgamma.get(), normed_a.get(), rows, s.n_in, 1e-6f, false, nullptr).ok());
      ASSERT_TRUE(cuda::matmul(**ctx, dm, normed_a.get(), rows, out_a.get(), s.n_out, false, nullptr).ok());
      ASSERT_TRUE(cuda::rms_norm_quantized(**ctx, normed_b.get(), dgamma.get(), normed_b.get(), rows, s.n_in, 1e-6f,
                                           nullptr).ok());
      ASSERT_TRUE(cuda::matmul(**ctx, dm, normed_b.get(), rows, out_b.get(), s.n_out, false, nullptr, true).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> oa = out_a.to_host(), ob = out_b.to_host();
      EXPECT_EQ(0, std::memcmp(oa.data(), ob.data(), oa.size() * sizeof(float))) << name(s) << " rows " << rows;
    }
    cuda::free_matrix(&dm);
  }
}

}  // namespace
}  // namespace saker
