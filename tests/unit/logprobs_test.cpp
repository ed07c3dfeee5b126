// log_sum_exp and top_ids: the normaliser stays finite for large logits, ties go to the lowest id.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/logits.h"

namespace saker {
namespace {

TEST(Logprobs, LogSumExpIsStableAndExact) {
  const std::vector<float> small = {0.0f, std::log(3.0f)};
  EXPECT_NEAR(log_sum_exp(small), std::log(4.0), 1e-6);
  const std::vector<float> large = {1000.0f, 1000.0f};
  EXPECT_NEAR(log_sum_exp(large), 1000.0 + std::log(2.0), 1e-3);
}

TEST(Logprobs, TopIdsHighestFirstLowestIdOnTies) {
  const std::vector<float> l = {1.0f, 3.0f, 3.0f, 2.0f, -1.0f};
  EXPECT_EQ(top_ids(l, 3), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(top_ids(l, 10).size(), 5u);
  EXPECT_TRUE(top_ids(l, 0).empty());
}

}  // namespace
}  // namespace saker
