// ref::rope against the two published formulations: HF's rotate_half (x * cos + rotate_half(x) * sin with
// the frequency table repeated over both halves) for NeoX, and Meta's complex multiplication of adjacent
// pairs for the interleaved style; plus the property that makes RoPE relative.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "ops/ref/rope.h"
#include "unit/ops_test_util.h"

namespace saker {
namespace {

using testing::OpsRng;
using testing::view;

constexpr int64_t kTokens = 5, kHeads = 3;

std::vector<int32_t> test_positions() { return {0, 1, 17, 4095, 150000}; }

TEST(RefRope, NeoxMatchesRotateHalfWithPartialRotary) {
  constexpr int64_t kDim = 64, kRot = 48;
  constexpr double kBase = 1e6;
  OpsRng rng(1);
  std::vector<float> x = rng.normals(kTokens * kHeads * kDim), y = x;
  const std::vector<int32_t> pos = test_positions();
  ASSERT_TRUE(ref::rope(view(y, {kTokens, kHeads, kDim}), pos, {ref::RopeStyle::kNeox, kRot, kBase, 1.0, nullptr}).ok());
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t h = 0; h < kHeads; ++h) {
      const float* in = &x[(t * kHeads + h) * kDim];
      const float* out = &y[(t * kHeads + h) * kDim];
      for (int64_t i = 0; i < kDim; ++i) {
        double expect = in[i];
        if (i < kRot) {
          const int64_t k = i % (kRot / 2);  // cat(freqs, freqs)
          const double angle = pos[t] / std::pow(kBase, 2.0 * k / kRot);
          const double rotated = i < kRot / 2 ? -in[i + kRot / 2] : in[i - kRot / 2];  // rotate_half
          expect = in[i] * std::cos(angle) + rotated * std::sin(angle);
        }
        EXPECT_NEAR(out[i], expect, 1e-5) << "t " << t << " h " << h << " i " << i;
      }
    }
  }
}

TEST(RefRope, InterleavedMatchesComplexMultiplicationWithScaling) {
  constexpr int64_t kDim = 32;
  constexpr double kBase = 10000.0, kFreqScale = 0.25;
  std::vector<float> factors(kDim / 2);
  for (int64_t k = 0; k < kDim / 2; ++k) factors[k] = 1.0f + 0.5f * static_cast<float>(k);
  OpsRng rng(2);
  std::vector<float> x = rng.normals(kTokens * kHeads * kDim), y = x;
  const std::vector<int32_t> pos = test_positions();
  ASSERT_TRUE(ref::rope(view(y, {kTokens, kHeads, kDim}), pos,
                        {ref::RopeStyle::kInterleaved, 0, kBase, kFreqScale, factors.data()}).ok());
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t k = 0; k < kDim / 2; ++k) {
        const int64_t base = (t * kHeads + h) * kDim + 2 * k;
        const double angle = pos[t] * kFreqScale / std::pow(kBase, 2.0 * k / kDim) / factors[k];
        const std::complex<double> z = std::complex<double>(x[base], x[base + 1]) * std::polar(1.0, angle);
        EXPECT_NEAR(y[base], z.real(), 1e-5);
        EXPECT_NEAR(y[base + 1], z.imag(), 1e-5);
      }
    }
  }
}

TEST(RefRope, DotProductDependsOnlyOnRelativePosition) {
  constexpr int64_t kDim = 128;
  OpsRng rng(3);
  const std::vector<float> q = rng.normals(kDim), k = rng.normals(kDim);
  for (ref::RopeStyle style : {ref::RopeStyle::kNeox, ref::RopeStyle::kInterleaved}) {
    auto rotated_dot = [&](int32_t pq, int32_t pk) {
      std::vector<float> a = q, b = k;
      const int32_t pa[1] = {pq}, pb[1] = {pk};
      EXPECT_TRUE(ref::rope(view(a, {1, 1, kDim}), pa, {style, 0, 1e6, 1.0, nullptr}).ok());
      EXPECT_TRUE(ref::rope(view(b, {1, 1, kDim}), pb, {style, 0, 1e6, 1.0, nullptr}).ok());
      double d = 0.0;
      for (int64_t i = 0; i < kDim; ++i) d += static_cast<double>(a[i]) * b[i];
      return d;
    };
    EXPECT_NEAR(rotated_dot(10, 3), rotated_dot(1007, 1000), 1e-4);
    EXPECT_NEAR(rotated_dot(3, 10), rotated_dot(50, 57), 1e-4);
  }
}

TEST(RefRope, RejectsBadArguments) {
  std::vector<float> x(2 * 2 * 8);
  const std::vector<int32_t> pos = {0, 1}, short_pos = {0};
  EXPECT_EQ(ref::rope(view(x, {2, 2, 8}), short_pos, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ref::rope(view(x, {2, 2, 8}), pos, {ref::RopeStyle::kNeox, 10, 1e4, 1.0, nullptr}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ref::rope(view(x, {2, 2, 8}), pos, {ref::RopeStyle::kNeox, 3, 1e4, 1.0, nullptr}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ref::rope(view(x, {4, 8}), pos, {}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace saker
