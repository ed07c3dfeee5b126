// CUDA top_k_rows (a drafter tree's per-row top tokens) against core/logits.h's top_ids and log_sum_exp: the
// same ids in the same order (ties to the lower id), log-probabilities within float rounding, over vocabulary
// sizes from one warp's worth to Qwen's, k from 1 to kMaxTopK, with ties.
#include <cmath>
#include <random>

#include "core/logits.h"
#include "ops/cuda/top_k.h"
#include "ops/cuda_test_util.h"

namespace saker {
namespace {

TEST(CudaTopK, MatchesTheHostTopIdsAndLogSumExp) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int64_t n : {17, 1000, 16384, 151936}) {
    for (int32_t k : {1, 4, 16}) {
      if (k > n) continue;
      const int64_t rows = 7;
      std::vector<float> x(rows * n);
      for (auto& v : x) v = dist(rng);
      for (int64_t r = 0; r < rows; ++r) {
        float* xr = &x[r * n];
        if (r % 2 == 0) {  // ties at the top: the lower id first
          const int64_t a = rng() % n, b = rng() % n, c = rng() % n;
          xr[a] = xr[b] = xr[c] = 40.0f;
        }
      }
      testing::DeviceArray<float> dx(x);
      testing::DeviceArray<int32_t> dids(rows * k);
      testing::DeviceArray<float> dlp(rows * k);
      ASSERT_TRUE(cuda::top_k_rows(dx.get(), rows, n, k, dids.get(), dlp.get(), nullptr).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<int32_t> ids = dids.to_host();
      const std::vector<float> lp = dlp.to_host();
      for (int64_t r = 0; r < rows; ++r) {
        const std::span<const float> row(&x[r * n], static_cast<size_t>(n));
        const std::vector<int32_t> want = top_ids(row, k);
        const float log_z = log_sum_exp(row);
        for (int32_t j = 0; j < k; ++j) {
          EXPECT_EQ(ids[r * k + j], want[j]) << "n=" << n << " k=" << k << " row " << r << " rank " << j;
          EXPECT_NEAR(lp[r * k + j], row[want[j]] - log_z, 1e-4f) << "n=" << n << " row " << r << " rank " << j;
        }
      }
    }
  }
  testing::DeviceArray<float> d(std::vector<float>(64, 0.0f));
  testing::DeviceArray<int32_t> i(64);
  testing::DeviceArray<float> l(64);
  EXPECT_FALSE(cuda::top_k_rows(d.get(), 1, 64, kMaxTopK + 1, i.get(), l.get(), nullptr).ok());
}

}  // namespace
}  // namespace saker
