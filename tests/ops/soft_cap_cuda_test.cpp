// CUDA soft_cap against cap * tanh(x / cap) in double.
#include <cmath>
#include <random>

#include "ops/cuda/soft_cap.h"
#include "ops/cuda_test_util.h"

namespace saker {
namespace {

TEST(CudaSoftCap, MatchesTanhCap) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 40.0f);
  const int64_t n = 100003;
  std::vector<float> x(n), ref(n);
  for (auto& v : x) v = dist(rng);
  const float cap = 30.0f;
  for (int64_t i = 0; i < n; ++i) ref[i] = static_cast<float>(cap * std::tanh(static_cast<double>(x[i]) / cap));
  testing::DeviceArray<float> d(x);
  ASSERT_TRUE(cuda::soft_cap(d.get(), n, cap, nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_LT(testing::nmse(d.to_host(), ref), 1e-12);
  EXPECT_FALSE(cuda::soft_cap(d.get(), n, 0.0f, nullptr).ok());
}

}  // namespace
}  // namespace saker
