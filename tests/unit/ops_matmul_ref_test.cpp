// ref::matmul against a naive double-precision product with the dequantised weight, for every weight dtype.
#include <gtest/gtest.h>

#include <string>

#include "ops/ref/matmul.h"
#include "unit/ops_test_util.h"

namespace saker {
namespace {

using testing::make_weight;
using testing::naive_matmul;
using testing::nmse;
using testing::OpsRng;
using testing::view;

class RefMatmul : public ::testing::TestWithParam<DType> {};

TEST_P(RefMatmul, MatchesNaiveProductOfDequantisedWeight) {
  const DType type = GetParam();
  constexpr int64_t kTokens = 5, kOut = 48, kIn = 512;
  testing::QuantWeight w = make_weight(type, kOut, kIn, 7);
  ASSERT_FALSE(w.bytes.empty());
  OpsRng rng(11);
  std::vector<float> x = rng.normals(kTokens * kIn);
  std::vector<float> out(kTokens * kOut, -1.0f);
  ASSERT_TRUE(ref::matmul(view(x, {kTokens, kIn}), w.view(), view(out, {kTokens, kOut})).ok());
  const std::vector<float> expect = naive_matmul(x, w.dequantized, kTokens, kOut, kIn);
  // Both sides accumulate the same products in double; only the final rounding to f32 can differ.
  EXPECT_LE(testing::max_rel_error(out, expect, 1e-6), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, RefMatmul, ::testing::ValuesIn(testing::weight_dtypes()),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

TEST(RefMatmulTest, ReadsStridedActivationsAndWritesStridedOutput) {
  constexpr int64_t kTokens = 3, kOut = 8, kIn = 64;
  testing::QuantWeight w = make_weight(DType::kF32, kOut, kIn, 3);
  OpsRng rng(5);
  // x is the second half of each row of a [kTokens, 2 * kIn] buffer; out the first kOut of [kTokens, 2 * kOut].
  std::vector<float> wide = rng.normals(kTokens * 2 * kIn);
  std::vector<float> wide_out(kTokens * 2 * kOut, 7.0f);
  TensorView x = view(wide, {kTokens, kIn});
  x.data = wide.data() + kIn;
  x.stride_bytes[0] = 2 * kIn * sizeof(float);
  TensorView out = view(wide_out, {kTokens, kOut});
  out.stride_bytes[0] = 2 * kOut * sizeof(float);
  ASSERT_TRUE(ref::matmul(x, w.view(), out).ok());
  std::vector<float> packed(kTokens * kIn);
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t i = 0; i < kIn; ++i) packed[t * kIn + i] = wide[t * 2 * kIn + kIn + i];
  }
  const std::vector<float> expect = naive_matmul(packed, w.dequantized, kTokens, kOut, kIn);
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t o = 0; o < kOut; ++o) {
      EXPECT_FLOAT_EQ(wide_out[t * 2 * kOut + o], expect[t * kOut + o]);
      EXPECT_EQ(wide_out[t * 2 * kOut + kOut + o], 7.0f) << "wrote outside the view";
    }
  }
}

TEST(RefMatmulTest, RejectsBadArguments) {
  std::vector<float> x(2 * 32), out(2 * 4), w_f32(4 * 32);
  TensorView w = view(w_f32, {4, 32});
  EXPECT_EQ(ref::matmul(view(x, {2, 32}), w, view(out, {2, 3})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ref::matmul(view(x, {2, 16}), view(w_f32, {4, 16}), view(out, {2, 4})).code(), StatusCode::kOk);
  EXPECT_EQ(ref::matmul(view(x, {2, 32}), view(w_f32, {4, 16}), view(out, {2, 4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ref::matmul(view(x, {1, 32}), w, view(out, {2, 4})).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> q2k(4 * 84);
  TensorView w_q2k = TensorView::contiguous(q2k.data(), DType::kQ2_K, {1, 256});
  std::vector<float> x256(256), out1(1);
  EXPECT_EQ(ref::matmul(view(x256, {1, 256}), w_q2k, view(out1, {1, 1})).code(), StatusCode::kUnsupported);
  TensorView x_f16 = view(x, {2, 32});
  x_f16.dtype = DType::kF16;
  EXPECT_EQ(ref::matmul(x_f16, w, view(out, {2, 4})).code(), StatusCode::kUnsupported);
  // Q4_K rows must be whole 256-element blocks.
  TensorView w_q4k = TensorView::contiguous(q2k.data(), DType::kQ4_K, {1, 32});
  EXPECT_EQ(ref::matmul(view(x, {2, 32}), w_q4k, view(out, {2, 1})).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace saker
