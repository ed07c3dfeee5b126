// The chi-square helper the speculative-sampling tests use: p-values at the textbook critical values, and the
// two-sample test telling one distribution from another.
#include "chi_square.h"

#include <gtest/gtest.h>

#include <random>

namespace saker {
namespace {

using testing::chi_square_p_value;
using testing::chi_square_two_samples;

TEST(ChiSquare, PValuesAtTextbookCriticalValues) {
  EXPECT_NEAR(chi_square_p_value(3.841459, 1), 0.05, 1e-6);
  EXPECT_NEAR(chi_square_p_value(6.634897, 1), 0.01, 1e-6);
  EXPECT_NEAR(chi_square_p_value(5.991465, 2), 0.05, 1e-6);  // exp(-x / 2) for two degrees of freedom
  EXPECT_NEAR(chi_square_p_value(18.307038, 10), 0.05, 1e-6);
  EXPECT_NEAR(chi_square_p_value(29.588298, 10), 0.001, 1e-7);
  EXPECT_NEAR(chi_square_p_value(124.342113, 100), 0.05, 1e-6);
  EXPECT_NEAR(chi_square_p_value(0.454936, 1), 0.5, 1e-6);
  EXPECT_EQ(chi_square_p_value(0.0, 3), 1.0);
  EXPECT_LT(chi_square_p_value(500.0, 3), 1e-100);
}

TEST(ChiSquare, TwoSamplesOfOneDistributionPassAndOfTwoFail) {
  std::mt19937_64 rng(5);
  std::discrete_distribution<int32_t> p({40, 25, 15, 10, 5, 3, 1, 1});
  std::discrete_distribution<int32_t> q({35, 25, 20, 10, 5, 3, 1, 1});  // 5 points moved from 0 to 2
  std::vector<int32_t> a, b, c;
  for (int i = 0; i < 4000; ++i) {
    a.push_back(p(rng));
    b.push_back(p(rng));
    c.push_back(q(rng));
  }
  const auto same = chi_square_two_samples(a, b);
  EXPECT_GT(same.p_value, 1e-3) << "statistic " << same.statistic << " df " << same.df;
  EXPECT_GE(same.categories, 6);  // the rarest two pool together or stand alone, the rest are cells
  const auto other = chi_square_two_samples(a, c);
  EXPECT_LT(other.p_value, 1e-4) << "statistic " << other.statistic << " df " << other.df;
  // Identical samples: statistic 0.
  EXPECT_EQ(chi_square_two_samples(a, a).statistic, 0.0);
}

}  // namespace
}  // namespace saker
