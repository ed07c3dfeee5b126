// Sampler: each processor in isolation, reproducibility by seed, and draws that follow the distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sample/sampler.h"

namespace saker {
namespace {

std::vector<float> logits_of(std::vector<float> v) { return v; }

TEST(Sampler, GreedyTakesArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  auto l = logits_of({0.1f, 3.0f, -1.0f, 3.0f});
  EXPECT_EQ(s.sample(l, {}), 1);
}

TEST(Sampler, TopKOneIsGreedy) {
  SamplingParams p;
  p.top_k = 1;
  p.seed = 3;
  Sampler s(p);
  for (int i = 0; i < 50; ++i) {
    auto l = logits_of({0.5f, 0.4f, 2.0f, 1.9f});
    EXPECT_EQ(s.sample(l, {}), 2);
  }
}

TEST(Sampler, DistributionIsSoftmaxAtTemperature) {
  SamplingParams p;
  p.temperature = 2.0f;
  Sampler s(p);
  auto l = logits_of({1.0f, 2.0f, 3.0f});
  const auto d = s.distribution(l, {});
  ASSERT_EQ(d.size(), 3u);
  const double z = std::exp(0.5) + std::exp(1.0) + std::exp(1.5);
  EXPECT_EQ(d[0].id, 2);
  EXPECT_NEAR(d[0].prob, std::exp(1.5) / z, 1e-6);
  EXPECT_NEAR(d[2].prob, std::exp(0.5) / z, 1e-6);
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingP) {
  SamplingParams p;
  p.top_p = 0.7f;
  Sampler s(p);
  // probabilities 0.5, 0.3, 0.2 (logits are their logs)
  auto l = logits_of({std::log(0.2f), std::log(0.5f), std::log(0.3f)});
  const auto d = s.distribution(l, {});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].id, 1);
  EXPECT_EQ(d[1].id, 2);
  EXPECT_NEAR(d[0].prob, 0.625, 1e-6);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  SamplingParams p;
  p.min_p = 0.5f;
  Sampler s(p);
  auto l = logits_of({std::log(0.5f), std::log(0.3f), std::log(0.2f)});
  const auto d = s.distribution(l, {});
  ASSERT_EQ(d.size(), 2u);  // 0.2 < 0.5 * 0.5
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams p;
  p.seed = 1234;
  auto run = [&] {
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 100; ++i) {
      auto l = logits_of({0.f, 0.1f, 0.2f, 0.3f, 0.4f});
      out.push_back(s.sample(l, {}));
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

TEST(Sampler, DrawsFollowTheDistribution) {
  SamplingParams p;
  p.seed = 99;
  Sampler s(p);
  const std::vector<float> probs = {0.1f, 0.2f, 0.3f, 0.4f};
  std::map<int32_t, int> counts;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l;
    for (float q : probs) l.push_back(std::log(q));
    counts[s.sample(l, {})]++;
  }
  for (int i = 0; i < 4; ++i) {
    const double expected = probs[i] * n;
    EXPECT_NEAR(counts[i], expected, 5 * std::sqrt(expected)) << "token " << i;  // 5 sigma
  }
}

TEST(Sampler, PenaltiesAndBias) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.logit_bias[3] = 10.0f;
  Sampler s(p);
  auto l = logits_of({4.0f, -1.0f, 1.0f, 0.0f});
  const std::vector<int32_t> history = {0, 0, 1};
  s.distribution(l, history);
  EXPECT_FLOAT_EQ(l[0], 4.0f / 2 - 0.5f - 2 * 0.25f);
  EXPECT_FLOAT_EQ(l[1], -1.0f * 2 - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[2], 1.0f);
  EXPECT_FLOAT_EQ(l[3], 10.0f);
}

TEST(Sampler, PenaltyWindowOnlySeesRecentTokens) {
  SamplingParams p;
  p.temperature = 0;
  p.presence_penalty = 1.0f;
  p.penalty_last_n = 2;
  Sampler s(p);
  auto l = logits_of({1.0f, 1.0f, 1.0f});
  const std::vector<int32_t> history = {0, 1, 2};
  s.distribution(l, history);
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[1], 0.0f);
}

TEST(SamplingParams, ValidateNamesTheField) {
  SamplingParams p;
  p.top_p = 0;
  EXPECT_NE(p.validate().message().find("top_p"), std::string::npos);
  p = {};
  p.temperature = -1;
  EXPECT_NE(p.validate().message().find("temperature"), std::string::npos);
  EXPECT_TRUE(SamplingParams{}.validate().ok());
}

TEST(Sampler, LogSoftmaxAt) {
  const std::vector<float> l = {0.0f, std::log(3.0f)};
  EXPECT_NEAR(log_softmax_at(l, 1), std::log(0.75), 1e-6);
}

}  // namespace
}  // namespace saker
