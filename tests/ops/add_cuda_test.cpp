// CUDA add vs ref add, at sizes that exercise the vectorised body and the scalar tail.
#include <random>

#include "ops/cuda/add.h"
#include "ops/cuda_test_util.h"
#include "ops/ref/add.h"

namespace saker {
namespace {

TEST(CudaAdd, MatchesRef) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  for (int64_t n : {1, 3, 4, 1000, 4097, 1 << 20}) {
    std::vector<float> a(n), b(n), ref(n);
    for (auto& x : a) x = dist(rng);
    for (auto& x : b) x = dist(rng);
    ref::add_f32(a.data(), b.data(), ref.data(), n);
    testing::DeviceArray<float> da(a), db(b), dout(n);
    ASSERT_TRUE(cuda::add_f32(da.get(), db.get(), dout.get(), n, nullptr).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> out = dout.to_host();
    EXPECT_EQ(out, ref) << "n=" << n;  // one rounding each: bit-exact
    EXPECT_EQ(testing::nmse(out, ref), 0.0);
  }
}

TEST(CudaAdd, RejectsMisalignedPointers) {
  SAKER_REQUIRE_GPU();
  testing::DeviceArray<float> d(16);
  const Status s = cuda::add_f32(d.get() + 1, d.get(), d.get(), 8, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace saker
