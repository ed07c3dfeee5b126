// Prompt-lookup drafting: which n-gram matches, which occurrence wins, how long the draft is, and the chain it
// hands the engine.
#include <gtest/gtest.h>

#include <vector>

#include "spec/ngram_proposer.h"

namespace saker::spec {
namespace {

std::vector<int32_t> lookup(const std::vector<int32_t>& tokens, NgramOptions o, int64_t max_tokens = 64) {
  std::vector<int32_t> out;
  NgramProposer::lookup(tokens, o, max_tokens, &out);
  return out;
}

TEST(NgramProposer, DraftsWhatFollowedTheLatestEarlierOccurrence) {
  // "... 5 6 7 8 9 | ... 5 6 7 1 2 | ... 5 6 7" -> the latest occurrence of (5 6 7) was followed by 1 2 3.
  const std::vector<int32_t> t = {5, 6, 7, 8, 9, 0, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7};
  NgramOptions o;
  o.max_draft = 3;
  EXPECT_EQ(lookup(t, o), (std::vector<int32_t>{1, 2, 3}));
  o.max_draft = 8;
  EXPECT_EQ(lookup(t, o), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));  // up to the end of the sequence
  EXPECT_EQ(lookup(t, o, 2), (std::vector<int32_t>{1, 2}));             // the engine's room caps it too
}

TEST(NgramProposer, LongestNgramFirst) {
  // The 2-gram (3 4) last occurred before 9, the 3-gram (2 3 4) before 7: the longer match wins.
  const std::vector<int32_t> t = {2, 3, 4, 7, 0, 3, 4, 9, 1, 2, 3, 4};
  NgramOptions o;
  o.min_ngram = 2;
  o.max_ngram = 3;
  EXPECT_EQ(lookup(t, o).front(), 7);
  o.max_ngram = 2;
  EXPECT_EQ(lookup(t, o).front(), 9);
}

TEST(NgramProposer, NothingWithoutARepeat) {
  NgramOptions o;
  EXPECT_TRUE(lookup({1, 2, 3, 4, 5, 6}, o).empty());
  EXPECT_TRUE(lookup({7}, o).empty());
  EXPECT_TRUE(lookup({}, o).empty());
  // A single repeated token is below min_ngram 2 ...
  EXPECT_TRUE(lookup({4, 1, 2, 4}, o).empty());
  // ... and drafts with min_ngram 1.
  o.min_ngram = 1;
  EXPECT_EQ(lookup({4, 1, 2, 4}, o), (std::vector<int32_t>{1, 2, 4}));
}

TEST(NgramProposer, ARunContinuesItself) {
  // The occurrence may overlap the suffix: a b a b a b proposes a b ...
  NgramOptions o;
  o.max_draft = 4;
  EXPECT_EQ(lookup({1, 2, 1, 2, 1, 2}, o), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(lookup({3, 3, 3, 3, 3}, o), (std::vector<int32_t>{3}));
}

TEST(NgramProposer, ProposesAChain) {
  auto p = NgramProposer::create(NgramOptions{2, 3, 4});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->max_nodes(), 4);
  EXPECT_FALSE((*p)->needs_taps());
  DraftNodes d;
  const std::vector<int32_t> t = {10, 11, 12, 13, 14, 15, 10, 11};
  ASSERT_TRUE((*p)->propose(t, 16, &d).ok());
  EXPECT_EQ(d.tokens, (std::vector<int32_t>{12, 13, 14, 15}));
  EXPECT_EQ(d.parent, (std::vector<int32_t>{-1, 0, 1, 2}));
  EXPECT_EQ(d.depth, (std::vector<int32_t>{1, 2, 3, 4}));
  ASSERT_TRUE((*p)->propose(t, 0, &d).ok());
  EXPECT_EQ(d.size(), 0);
}

TEST(NgramProposer, RefusesBadOptionsByName) {
  auto a = NgramProposer::create(NgramOptions{0, 3, 8});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("min_ngram"), std::string::npos);
  auto b = NgramProposer::create(NgramOptions{3, 2, 8});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("max_ngram"), std::string::npos);
  auto c = NgramProposer::create(NgramOptions{2, 3, 0});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("max_draft"), std::string::npos);
}

}  // namespace
}  // namespace saker::spec
