// CUDA gather_rows against a host gather: exact copies, any row order, repeated rows, odd widths.
#include <random>

#include "ops/cuda/gather_rows.h"
#include "ops/cuda_test_util.h"

namespace saker {
namespace {

TEST(CudaGatherRows, CopiesTheNamedRows) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  for (int64_t n : {1, 7, 64, 4096, 4099}) {
    const int64_t rows_in = 37;
    std::vector<float> x(rows_in * n);
    for (auto& v : x) v = dist(rng);
    const std::vector<int32_t> rows = {36, 0, 5, 5, 17};
    std::vector<float> ref;
    for (int32_t r : rows) ref.insert(ref.end(), x.begin() + r * n, x.begin() + (r + 1) * n);
    testing::DeviceArray<float> dx(x), dout(std::vector<float>(rows.size() * n, NAN));
    testing::DeviceArray<int32_t> drows(rows);
    ASSERT_TRUE(cuda::gather_rows(dx.get(), drows.get(), rows.size(), n, dout.get(), nullptr).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(dout.to_host(), ref) << "n=" << n;
  }
}

}  // namespace
}  // namespace saker
