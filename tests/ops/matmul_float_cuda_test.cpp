// The width-invariant F16 / BF16 matmul (matmul_float_wi.cu, contexts made with invariant): outputs match a host dot product of the same
// rounded inputs (x rounded to the weight's type, f32 accumulation) to accumulation-order tolerance, and a
// row's output is the same, bit for bit, whether it is multiplied alone or with up to 63 other rows, from
// aligned or misaligned activations. Speculative and batched greedy output on F16 / BF16 files equal plain
// decoding only if the second holds.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/half.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda_test_util.h"
#include "ops/matmul_test_util.h"

namespace saker {
namespace {

float round_to(DType type, float v) {
  return type == DType::kF16 ? fp16_to_fp32(fp32_to_fp16(v)) : bf16_to_fp32(fp32_to_bf16(v));
}

constexpr cuda::MatmulOptions kInvariant{.invariant = true};

struct Shape {
  DType type;
  int64_t n_out, n_in;
};

// Odd n_out (partial m-tiles of 16 and 32 rows), the smallest n_in (one chunk a warp), and decode sizes.
constexpr Shape kShapes[] = {
    {DType::kF16, 301, 2304}, {DType::kF16, 37, 128},    {DType::kF16, 64, 12288},
    {DType::kBF16, 301, 2304}, {DType::kBF16, 45, 4096}, {DType::kBF16, 16, 128},
};

struct Upload {
  cuda::DeviceMatrix dm;
  std::vector<float> w;  // the weights as stored (rounded to the type)
};

Upload upload(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  Upload u;
  std::vector<uint8_t> bytes = testing::make_weights(type, n_out, n_in, seed);
  u.w.resize(static_cast<size_t>(n_out * n_in));
  for (size_t i = 0; i < u.w.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    u.w[i] = type == DType::kF16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
  }
  u.dm = testing::upload_weights(type, bytes, n_out, n_in);
  return u;
}

TEST(CudaMatmulFloat, MatchesHostDotOfRoundedInputs) {
  SAKER_REQUIRE_GPU();
  if (!testing::invariant_matmul_env_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  auto ctx = cuda::MatmulContext::create(64, 12288, 301, kInvariant);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 5100;
  for (const Shape& sh : kShapes) {
    ASSERT_TRUE(cuda::matmul_width_invariant(sh.type, sh.n_in, kInvariant));
    ASSERT_FALSE(cuda::matmul_width_invariant(sh.type, sh.n_in));  // cuBLAS unless asked
    Upload u = upload(sh.type, sh.n_out, sh.n_in, seed++);
    ASSERT_NE(u.dm.data, nullptr);
    for (int64_t rows : {1, 5, 16, 64}) {
      const std::vector<float> x = testing::random_floats(static_cast<size_t>(rows * sh.n_in), seed++);
      const std::vector<float> base = testing::random_floats(static_cast<size_t>(rows * sh.n_out), seed++);
      for (bool accumulate : {false, true}) {
        testing::DeviceArray<float> dx(x), dout(base);
        ASSERT_TRUE(cuda::matmul(**ctx, u.dm, dx.get(), rows, dout.get(), sh.n_out, accumulate, nullptr).ok());
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<float> got = dout.to_host();
        const testing::HostDotCheck c = testing::check_against_host_dot(
            got, u.w, x, accumulate ? &base : nullptr, rows, sh.n_out, sh.n_in,
            [&](float v) { return round_to(sh.type, v); },
            std::string(dtype_name(sh.type)) + " " + std::to_string(sh.n_out) + "x" + std::to_string(sh.n_in) +
                " rows " + std::to_string(rows) + " acc=" + std::to_string(accumulate));
        EXPECT_EQ(c.bad, 0) << dtype_name(sh.type) << " " << sh.n_out << "x" << sh.n_in << " rows " << rows
                            << " worst error / sum|w x| " << c.worst;
      }
    }
    cuda::free_matrix(&u.dm);
  }
}

// A row multiplied alone, or as any row of calls of 2 .. 64 rows, gives the same bits: every n-tile and
// m-tile choice of the launcher, f32 activations read directly (decode widths) or through the rounded
// scratch (wider calls, misaligned x), and rows at every position of a tile.
TEST(CudaMatmulFloat, RowsAreWidthInvariantUpTo64) {
  SAKER_REQUIRE_GPU();
  if (!testing::invariant_matmul_env_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr int64_t kRows = 64;
  auto ctx = cuda::MatmulContext::create(kRows, 12288, 301, kInvariant);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 5300;
  for (const Shape& sh : kShapes) {
    Upload u = upload(sh.type, sh.n_out, sh.n_in, seed++);
    ASSERT_NE(u.dm.data, nullptr);
    const std::vector<float> x = testing::random_floats(static_cast<size_t>(kRows * sh.n_in), seed++);
    testing::DeviceArray<float> dx(x), dout(static_cast<size_t>(kRows * sh.n_out));
    auto run = [&](const float* xd, int64_t rows) {
      EXPECT_TRUE(cuda::matmul(**ctx, u.dm, xd, rows, dout.get(), sh.n_out, false, nullptr).ok());
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<float> all = dout.to_host();
      all.resize(static_cast<size_t>(rows * sh.n_out));
      return all;
    };
    const std::vector<float> full = run(dx.get(), kRows);
    {
      std::vector<float> shifted(x.size() + 1, 0.0f);
      std::copy(x.begin(), x.end(), shifted.begin() + 1);
      testing::DeviceArray<float> dxs(shifted);
      for (int64_t rows : {1, 7, 64}) {
        const std::vector<float> got = run(dxs.get() + 1, rows);
        ASSERT_EQ(0, std::memcmp(got.data(), full.data(), sizeof(float) * static_cast<size_t>(rows * sh.n_out)))
            << dtype_name(sh.type) << ": " << rows << " rows with misaligned x differ from the aligned call";
      }
    }
    for (int64_t rows : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 63}) {
      for (int64_t first : {int64_t{0}, kRows - rows, (kRows - rows) / 2}) {
        const std::vector<float> got = run(dx.get() + first * sh.n_in, rows);
        for (int64_t t = 0; t < rows; ++t) {
          ASSERT_EQ(0, std::memcmp(got.data() + t * sh.n_out, full.data() + (first + t) * sh.n_out,
                                   sizeof(float) * static_cast<size_t>(sh.n_out)))
              << dtype_name(sh.type) << " " << sh.n_out << "x" << sh.n_in << ": row " << first + t << " in a call of "
              << rows << " rows from " << first << " differs from the 64-row call";
        }
      }
    }
    cuda::free_matrix(&u.dm);
  }
}

}  // namespace
}  // namespace saker
