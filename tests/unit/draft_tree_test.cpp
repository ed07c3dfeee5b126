// DDTree's best-first draft tree: budget, order, distinct siblings, and the highest-scoring paths kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "spec/draft_tree.h"

namespace saker::spec {
namespace {

struct Depths {
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<float>> lps;
  std::vector<DepthCandidates> view() const {
    std::vector<DepthCandidates> v;
    for (size_t d = 0; d < ids.size(); ++d) v.push_back({ids[d], lps[d]});
    return v;
  }
};

// Depth d has tokens 100*d + r with probabilities p[r] (the same shape at every depth).
Depths uniform_shape(int n_depths, std::vector<float> probs) {
  Depths d;
  for (int i = 1; i <= n_depths; ++i) {
    d.ids.emplace_back();
    d.lps.emplace_back();
    for (size_t r = 0; r < probs.size(); ++r) {
      d.ids.back().push_back(100 * i + static_cast<int32_t>(r));
      d.lps.back().push_back(std::log(probs[r]));
    }
  }
  return d;
}

TEST(DraftTree, ConfidentDrafterGivesTheChainFirst) {
  const Depths d = uniform_shape(5, {0.9f, 0.05f, 0.05f});
  const auto v = d.view();
  const DraftTree t = build_draft_tree(v, 5);
  ASSERT_EQ(t.size(), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(t.tokens[i], 100 * (i + 1));
    EXPECT_EQ(t.depth[i], i + 1);
    EXPECT_EQ(t.parent[i], i - 1);
  }
}

TEST(DraftTree, UnsureDrafterBranchesAtTheTop) {
  const Depths d = uniform_shape(4, {0.5f, 0.4f, 0.1f});
  const auto v = d.view();
  const DraftTree t = build_draft_tree(v, 3);
  ASSERT_EQ(t.size(), 3);
  // 0.5 (depth 1, rank 0); then 0.4 (depth 1, rank 1) beats 0.25 (depth 2 below the first)
  EXPECT_EQ(t.tokens[0], 100);
  EXPECT_EQ(t.tokens[1], 101);
  EXPECT_EQ(t.parent[1], -1);
  EXPECT_EQ(t.tokens[2], 200);  // 0.25 beats 0.2 (0.4 * 0.5) and 0.1
  EXPECT_EQ(t.parent[2], 0);
}

TEST(DraftTree, StructureIsValidAndScoresAreTheBestPaths) {
  const Depths d = uniform_shape(6, {0.4f, 0.3f, 0.2f, 0.1f});
  const auto v = d.view();
  for (int budget : {1, 7, 20, 30}) {
    const DraftTree t = build_draft_tree(v, budget);
    ASSERT_EQ(t.size(), budget);
    std::set<std::pair<int32_t, int32_t>> parent_token;
    for (int64_t i = 0; i < t.size(); ++i) {
      const int32_t p = t.parent[i];
      ASSERT_LT(p, i) << "parents precede children";
      EXPECT_EQ(t.depth[i], p < 0 ? 1 : t.depth[p] + 1);
      EXPECT_TRUE(parent_token.insert({p, t.tokens[i]}).second) << "siblings carry distinct tokens";
      const float parent_score = p < 0 ? 0.0f : t.score[p];
      const int32_t rank = t.tokens[i] % 100;
      EXPECT_FLOAT_EQ(t.score[i], parent_score + d.lps[t.depth[i] - 1][rank]);
      if (i > 0) {
        EXPECT_LE(t.score[i], t.score[i - 1] + 1e-6f) << "best first";
      }
    }
  }
}

TEST(DraftTree, DepthAndBudgetLimits) {
  const Depths d = uniform_shape(2, {1.0f});
  const auto v = d.view();
  const DraftTree t = build_draft_tree(v, 10);
  EXPECT_EQ(t.size(), 2) << "one token per depth, two depths";
  EXPECT_EQ(build_draft_tree(v, 0).size(), 0);
  EXPECT_EQ(build_draft_tree({}, 5).size(), 0);
}

}  // namespace
}  // namespace saker::spec
