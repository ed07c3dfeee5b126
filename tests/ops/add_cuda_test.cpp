// CUDA adds vs ref adds: the residual add at sizes that exercise the vectorised body and the scalar tail, the
// broadcast bias add on strided rows (the qkv layout) with the columns past the bias left alone.
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

TEST(CudaAddRowBias, MatchesRefOnStridedRows) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  struct Shape {
    int64_t rows, cols, stride;
  };
  // qwen2-0.5B's q|k|v row (896 + 2 x 128) at decode and prefill widths; odd sizes; a bias over part of a row;
  // more rows than one grid dimension holds.
  for (const Shape& s : {Shape{1, 1152, 1152}, Shape{64, 1152, 1152}, Shape{7, 3, 5}, Shape{33, 300, 1000},
                         Shape{70000, 4, 4}}) {
    std::vector<float> x(s.rows * s.stride), bias(s.cols);
    for (auto& v : x) v = dist(rng);
    for (auto& v : bias) v = dist(rng);
    std::vector<float> ref = x;
    ref::add_row_bias(ref.data(), bias.data(), s.rows, s.cols, s.stride);
    testing::DeviceArray<float> dx(x), db(bias);
    ASSERT_TRUE(cuda::add_row_bias(dx.get(), db.get(), s.rows, s.cols, s.stride, nullptr).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> out = dx.to_host();
    EXPECT_EQ(out, ref) << "rows=" << s.rows << " cols=" << s.cols << " stride=" << s.stride;  // bit-exact
  }
}

TEST(CudaAddRowBias, EmptyIsANoOpAndShortStrideIsRefused) {
  SAKER_REQUIRE_GPU();
  testing::DeviceArray<float> d(16);
  EXPECT_TRUE(cuda::add_row_bias(d.get(), d.get(), 0, 4, 4, nullptr).ok());
  EXPECT_EQ(cuda::add_row_bias(d.get(), d.get(), 2, 8, 4, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace saker
