// DraftPolicy: the draft depth follows acceptance (grow by two after a fully accepted draft, shrink to the
// accepted length plus one after a rejection), bounded by 1 and the proposer's most; fixed stays at the most.
#include <gtest/gtest.h>

#include "engine/draft_policy.h"

namespace saker {
namespace {

TEST(DraftPolicy, StartsAtTheMostAndFollowsAcceptance) {
  DraftPolicy p(15, true);
  EXPECT_EQ(p.depth(), 15);
  p.record(15, 2);  // rejected at the third token
  EXPECT_EQ(p.depth(), 3);
  p.record(3, 3);  // all accepted
  EXPECT_EQ(p.depth(), 5);
  p.record(5, 0);  // the first token rejected
  EXPECT_EQ(p.depth(), 1);
  p.record(1, 0);
  EXPECT_EQ(p.depth(), 1);  // never below one
  for (int i = 0; i < 20; ++i) p.record(p.depth(), p.depth());
  EXPECT_EQ(p.depth(), 15);  // never above the most
}

TEST(DraftPolicy, AShortDraftAcceptedWholeDoesNotShrinkTheDepth) {
  // A proposer may draft less than the depth it was given (an n-gram found a short continuation): accepting
  // all of those few grows from the depth, not from the short draft.
  DraftPolicy p(8, true);
  p.record(8, 2);
  EXPECT_EQ(p.depth(), 3);
  p.record(1, 1);
  EXPECT_EQ(p.depth(), 5);
  p.record(6, 6);  // a draft longer than the depth (a tree's depth, say) accepted whole
  EXPECT_EQ(p.depth(), 8);
  p.record(0, 0);  // no draft: nothing learned
  EXPECT_EQ(p.depth(), 8);
}

TEST(DraftPolicy, FixedAlwaysDraftsTheMost) {
  DraftPolicy p(6, false);
  p.record(6, 0);
  EXPECT_EQ(p.depth(), 6);
  DraftPolicy q(0, true);
  EXPECT_EQ(q.depth(), 1);
}

TEST(DraftPolicy, ExpectsItsPriorUntilItsOwnDraftsAreVerified) {
  EXPECT_DOUBLE_EQ(DraftPolicy(15, true).expected_accepted(), 7.5);  // none given: half the most
  EXPECT_DOUBLE_EQ(DraftPolicy(15, true, 1.25).expected_accepted(), 1.25);
  EXPECT_DOUBLE_EQ(DraftPolicy(4, true, 9.0).expected_accepted(), 4.0);  // never more than the most
  DraftPolicy p(15, true, 0.0);
  p.record(15, 10);
  EXPECT_GT(p.expected_accepted(), 0.0);
}

}  // namespace
}  // namespace saker
