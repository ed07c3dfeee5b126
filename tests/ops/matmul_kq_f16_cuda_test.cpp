// The f16 tensor-core Q4_K / Q6_K matmul (matmul_kq_f16.cu, contexts made with kq_f16):
// - its weights are GGUF's dequantised and rounded to f16 exactly as kq_f16::dequant_block_host documents: one-hot
//   activation rows read single weights back, bit for bit, at every
//   position of a block (which also pins the fragment-to-element map);
// - random rows match a host dot product of those weights with x rounded to f16, to accumulation tolerance;
// - a row's output is the same, bit for bit, alone or in calls of up to 64 rows, from aligned or misaligned
//   activations (the f32 and f16-copy paths), which is what makes speculation and batching exact.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/half.h"
#include "ops/cuda/kq_f16_layout.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda_test_util.h"
#include "ops/matmul_test_util.h"

namespace saker {
namespace {

constexpr cuda::MatmulOptions kF16{.kq_f16 = true};

struct Upload {
  cuda::DeviceMatrix dm;
  std::vector<float> w;  // [n_out, n_in] as the kernel sees it
};

Upload upload(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  Upload u;
  std::vector<uint8_t> bytes = testing::make_weights(type, n_out, n_in, seed);
  u.w.resize(static_cast<size_t>(n_out * n_in));
  for (int64_t b = 0; b < n_out * n_in / 256; ++b) {
    if (type == DType::kQ6_K) {
      cuda::kq_f16::dequant_q6_block_host(bytes.data() + cuda::kq_f16::q6::kBlockBytes * b, u.w.data() + 256 * b);
    } else {
      cuda::kq_f16::dequant_block_host(bytes.data() + cuda::kq_f16::kBlockBytes * b, u.w.data() + 256 * b);
    }
  }
  u.dm = testing::upload_weights(type, bytes, n_out, n_in);
  return u;
}

struct Shape {
  DType type;
  int64_t n_out, n_in;
};
// Partial m-tiles, one block (three warps idle), blocks that do not divide among the four warps, decode sizes;
// Q6_K rows of 9 blocks (1,890 bytes) start off 16-byte boundaries.
constexpr Shape kShapes[] = {{DType::kQ4_K, 301, 2304}, {DType::kQ4_K, 37, 256},    {DType::kQ4_K, 64, 1280},
                             {DType::kQ4_K, 48, 12288}, {DType::kQ4_K, 4112, 4096}, {DType::kQ6_K, 301, 2304},
                             {DType::kQ6_K, 37, 256},   {DType::kQ6_K, 64, 1280},   {DType::kQ6_K, 4112, 4096}};

std::vector<float> run(cuda::MatmulContext& ctx, const Upload& u, const float* xd, int64_t rows, float* dout,
                       bool accumulate = false) {
  EXPECT_TRUE(cuda::matmul(ctx, u.dm, xd, rows, dout, u.dm.n_out, accumulate, nullptr).ok());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> all(static_cast<size_t>(rows * u.dm.n_out));
  EXPECT_EQ(cudaMemcpy(all.data(), dout, all.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return all;
}

TEST(CudaMatmulKqF16, OneHotRowsReadTheF16Weights) {
  SAKER_REQUIRE_GPU();
  if (!testing::invariant_matmul_env_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  ASSERT_TRUE(cuda::matmul_width_invariant(DType::kQ4_K, 4096, kF16));
  ASSERT_TRUE(cuda::matmul_width_invariant(DType::kQ6_K, 4096, kF16));
  uint32_t seed = 7100;
  for (const Shape& sh : kShapes) {
    auto ctx = cuda::MatmulContext::create(64, sh.n_in, sh.n_out, kF16);
    ASSERT_TRUE(ctx.ok());
    Upload u = upload(sh.type, sh.n_out, sh.n_in, seed++);
    ASSERT_NE(u.dm.data, nullptr);
    // Rows of 64 one-hot vectors cover every position of a 256-element block in four calls (at 1, 8 and 64
    // rows: the f32 and the f16-copy paths), spread over the blocks of the row.
    for (int64_t rows : {1, 8, 64}) {
      for (int64_t pass = 0; pass < 256 / rows; pass += (rows == 1 ? 17 : 1)) {
        std::vector<float> x(static_cast<size_t>(rows * sh.n_in), 0.0f);
        std::vector<int64_t> at(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t pos = pass * rows + r;  // position in the block
          const int64_t block = (pos * 7 + pass) % (sh.n_in / 256);
          at[r] = block * 256 + pos;
          x[r * sh.n_in + at[r]] = 1.0f;
        }
        testing::DeviceArray<float> dx(x), dout(static_cast<size_t>(rows * sh.n_out));
        const std::vector<float> got = run(**ctx, u, dx.get(), rows, dout.get());
        int bad = 0;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t o = 0; o < sh.n_out; ++o) {
            const float want = u.w[o * sh.n_in + at[r]];
            if (std::memcmp(&got[r * sh.n_out + o], &want, 4) != 0 && bad++ < 5) {
              ADD_FAILURE() << dtype_name(sh.type) << " " << sh.n_out << "x" << sh.n_in << " rows " << rows << ": weight (" << o << ", " << at[r]
                            << ") read back " << got[r * sh.n_out + o] << ", want " << want;
            }
          }
        }
        ASSERT_EQ(bad, 0);
      }
    }
    cuda::free_matrix(&u.dm);
  }
}

TEST(CudaMatmulKqF16, MatchesHostDotOfRoundedInputs) {
  SAKER_REQUIRE_GPU();
  if (!testing::invariant_matmul_env_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  uint32_t seed = 7300;
  for (const Shape& sh : kShapes) {
    auto ctx = cuda::MatmulContext::create(64, sh.n_in, sh.n_out, kF16);
    ASSERT_TRUE(ctx.ok());
    Upload u = upload(sh.type, sh.n_out, sh.n_in, seed++);
    ASSERT_NE(u.dm.data, nullptr);
    for (int64_t rows : {1, 5, 16, 64}) {
      const std::vector<float> x = testing::random_floats(static_cast<size_t>(rows * sh.n_in), seed++);
      const std::vector<float> base = testing::random_floats(static_cast<size_t>(rows * sh.n_out), seed++);
      for (bool accumulate : {false, true}) {
        testing::DeviceArray<float> dx(x), dout(base);
        const std::vector<float> got = run(**ctx, u, dx.get(), rows, dout.get(), accumulate);
        const testing::HostDotCheck c = testing::check_against_host_dot(
            got, u.w, x, accumulate ? &base : nullptr, rows, sh.n_out, sh.n_in,
            [](float v) { return cuda::kq_f16::round_f16_host(v); },
            std::string(dtype_name(sh.type)) + " " + std::to_string(sh.n_out) + "x" + std::to_string(sh.n_in) +
                " rows " + std::to_string(rows) + " acc=" + std::to_string(accumulate));
        ASSERT_EQ(c.bad, 0);
      }
    }
    cuda::free_matrix(&u.dm);
  }
}

TEST(CudaMatmulKqF16, RowsAreWidthInvariantUpTo64) {
  SAKER_REQUIRE_GPU();
  if (!testing::invariant_matmul_env_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr int64_t kRows = 64;
  uint32_t seed = 7500;
  for (const Shape& sh : kShapes) {
    auto ctx = cuda::MatmulContext::create(kRows, sh.n_in, sh.n_out, kF16);
    ASSERT_TRUE(ctx.ok());
    Upload u = upload(sh.type, sh.n_out, sh.n_in, seed++);
    ASSERT_NE(u.dm.data, nullptr);
    const std::vector<float> x = testing::random_floats(static_cast<size_t>(kRows * sh.n_in), seed++);
    testing::DeviceArray<float> dx(x), dout(static_cast<size_t>(kRows * sh.n_out));
    const std::vector<float> full = run(**ctx, u, dx.get(), kRows, dout.get());
    {
      std::vector<float> shifted(x.size() + 1, 0.0f);
      std::copy(x.begin(), x.end(), shifted.begin() + 1);
      testing::DeviceArray<float> dxs(shifted);
      for (int64_t rows : {1, 7, 64}) {
        const std::vector<float> got = run(**ctx, u, dxs.get() + 1, rows, dout.get());
        ASSERT_EQ(0, std::memcmp(got.data(), full.data(), sizeof(float) * static_cast<size_t>(rows * sh.n_out)))
            << rows << " rows with misaligned x differ from the aligned call";
      }
    }
    for (int64_t rows : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 63}) {
      for (int64_t first : {int64_t{0}, kRows - rows, (kRows - rows) / 2}) {
        const std::vector<float> got = run(**ctx, u, dx.get() + first * sh.n_in, rows, dout.get());
        for (int64_t t = 0; t < rows; ++t) {
          ASSERT_EQ(0, std::memcmp(got.data() + t * sh.n_out, full.data() + (first + t) * sh.n_out,
                                   sizeof(float) * static_cast<size_t>(sh.n_out)))
              << dtype_name(sh.type) << " " << sh.n_out << "x" << sh.n_in << ": row " << first + t << " in a call of " << rows << " rows from "
              << first << " differs from the 64-row call";
        }
      }
    }
    cuda::free_matrix(&u.dm);
  }
}

}  // namespace
}  // namespace saker
