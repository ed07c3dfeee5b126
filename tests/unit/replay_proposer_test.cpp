// ReplayProposer: drafts a recorded continuation with exactly the acceptance asked for.
#include <gtest/gtest.h>

#include <numeric>

#include "spec/replay_proposer.h"

namespace saker::spec {
namespace {

using Refs = std::vector<std::vector<int32_t>>;

std::shared_ptr<const Refs> refs_of(Refs r) { return std::make_shared<const Refs>(std::move(r)); }

TEST(ReplayProposer, AcceptsLMinusOneDraftsPerStepOnAverage) {
  for (double L : {1.0, 2.0, 2.5, 6.0, 7.3}) {
    int64_t sum = 0;
    for (int64_t s = 0; s < 100; ++s) {
      const int64_t k = ReplayProposer::accepted_at(s, L);
      EXPECT_GE(k, 0);
      EXPECT_LE(k, static_cast<int64_t>(L));  // never more than ceil(L - 1)
      sum += k;
    }
    EXPECT_NEAR(static_cast<double>(sum) / 100, L - 1, 0.011) << L;
  }
  EXPECT_EQ(ReplayProposer::accepted_at(0, 6.0), 5);
  EXPECT_EQ(ReplayProposer::accepted_at(1, 2.5), 2);  // 1, 2, 1, 2, ...
}

TEST(ReplayProposer, DraftsTheReferenceWithOneCorruptedToken) {
  std::vector<int32_t> a(40), b(40);
  std::iota(a.begin(), a.end(), 10);
  std::iota(b.begin(), b.end(), 100);
  auto p = ReplayProposer::create(refs_of({a, b}), 4.0, 6, 1000);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  // The sequence of reference b, 20 tokens in: drafts b[20..26), the fourth (index 3) changed.
  const std::vector<int32_t> tokens(b.begin(), b.begin() + 20);
  DraftNodes d;
  ASSERT_TRUE((*p)->propose(tokens, 15, &d).ok());
  ASSERT_EQ(d.size(), 6);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(d.tokens[i], i == 3 ? b[23] + 1 : b[20 + i]) << i;
    EXPECT_EQ(d.parent[i], i - 1);
    EXPECT_EQ(d.depth[i], i + 1);
  }
  EXPECT_TRUE(d.is_chain());  // the engine sends it to the attention as causal rows
  // The step's depth limit and the reference's end cut the chain.
  ASSERT_TRUE((*p)->propose(tokens, 2, &d).ok());
  EXPECT_EQ(d.size(), 2);
  const std::vector<int32_t> near_end(b.begin(), b.begin() + 38);
  ASSERT_TRUE((*p)->propose(near_end, 15, &d).ok());
  EXPECT_EQ(d.size(), 2);
}

TEST(DraftNodes, AChainIsEveryNodeTheChildOfTheOneBefore) {
  DraftNodes d;
  EXPECT_TRUE(d.is_chain());  // nothing drafted: the pending token alone
  d.tokens = {7, 8, 9};
  d.parent = {-1, 0, 1};
  d.depth = {1, 2, 3};
  EXPECT_TRUE(d.is_chain());
  d.parent = {-1, 0, 0};  // two children of node 0
  d.depth = {1, 2, 2};
  EXPECT_FALSE(d.is_chain());
  d.parent = {-1, -1, 1};  // two children of the root
  d.depth = {1, 1, 2};
  EXPECT_FALSE(d.is_chain());
}

TEST(ReplayProposer, ProposesNothingOffItsReference) {
  std::vector<int32_t> a(30);
  std::iota(a.begin(), a.end(), 5);
  auto p = ReplayProposer::create(refs_of({a}), 3.0, 4, 100);
  ASSERT_TRUE(p.ok());
  std::vector<int32_t> tokens(a.begin(), a.begin() + 12);
  tokens.back() = 99;  // the target decided otherwise
  DraftNodes d;
  ASSERT_TRUE((*p)->propose(tokens, 4, &d).ok());
  EXPECT_EQ(d.size(), 0);
  auto q = ReplayProposer::create(refs_of({a}), 3.0, 4, 100);
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->propose(std::vector<int32_t>{1, 2, 3}, 4, &d).ok());  // no reference starts like this
  EXPECT_EQ(d.size(), 0);
}

TEST(ReplayProposer, RefusesWhatItCannotReplay) {
  auto r = refs_of({{1, 2, 3}});
  EXPECT_FALSE(ReplayProposer::create(r, 0.5, 4, 100).ok());
  EXPECT_FALSE(ReplayProposer::create(r, 6.0, 4, 100).ok());  // more than a block commits
  EXPECT_FALSE(ReplayProposer::create(r, 2.0, 0, 100).ok());
  EXPECT_FALSE(ReplayProposer::create(r, 2.0, 4, 1).ok());
  EXPECT_FALSE(ReplayProposer::create(refs_of({}), 2.0, 4, 100).ok());
  EXPECT_FALSE(ReplayProposer::create(nullptr, 2.0, 4, 100).ok());
}

}  // namespace
}  // namespace saker::spec
