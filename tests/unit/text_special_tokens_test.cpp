// Special and added tokens written in input text.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"
#include "text_test_vocabs.h"

namespace saker::text {
namespace {

using Ids = std::vector<int32_t>;

std::unique_ptr<Tokenizer> make(VocabSpec spec) {
  auto t = Tokenizer::from_vocab(Vocab::create(std::move(spec)).value());
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

TEST(TextSpecialTokens, ControlTokensOnlyWhenParsingSpecial) {
  auto t = make(testing::tiny_bpe_spec());
  const int32_t eot = *t->find_token("<|endoftext|>");
  const int32_t hello = *t->find_token("hello");
  EXPECT_EQ(t->encode("hello<|endoftext|>", false, true), (Ids{hello, eot}));
  const Ids plain = t->encode("hello<|endoftext|>", false, false);
  EXPECT_EQ(plain.size(), 1u + std::string("<|endoftext|>").size());  // characters as byte tokens
  EXPECT_EQ(t->decode(plain), "hello<|endoftext|>");
  EXPECT_TRUE(t->is_control(eot));
  EXPECT_TRUE(t->is_end_of_generation(eot));
}

TEST(TextSpecialTokens, UserDefinedTokensAreAlwaysMatched) {
  auto t = make(testing::tiny_bpe_spec());
  const int32_t tool = *t->find_token("<tool>");
  const Ids ids = t->encode("<tool>hello", false, false);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], tool);
  EXPECT_EQ(t->token_to_piece(tool), "<tool>");
  EXPECT_EQ(t->decode(ids), "<tool>hello");
}

TEST(TextSpecialTokens, LongestTokenWinsAndAdjacentTokensSplit) {
  auto t = make(testing::tiny_bpe_spec());
  const int32_t start = *t->find_token("<|im_start|>");
  const int32_t start_x = *t->find_token("<|im_start|>x");
  const int32_t eot = *t->find_token("<|endoftext|>");
  EXPECT_EQ(t->encode("<|im_start|>x<|im_start|><|endoftext|>", false, true), (Ids{start_x, start, eot}));
}

TEST(TextSpecialTokens, SkippedInDecodeWhenAsked) {
  auto t = make(testing::tiny_bpe_spec());
  const Ids ids = t->encode("<|im_start|>hello<|endoftext|>", false, true);
  DecodeOptions skip;
  skip.skip_special = true;
  EXPECT_EQ(t->decode(ids, skip), "hello");
  EXPECT_EQ(t->decode(ids), "<|im_start|>hello<|endoftext|>");
}

TEST(TextSpecialTokens, SentencePieceAddsDummySpaceAfterSpecialTokens) {
  auto t = make(testing::tiny_spm_spec());
  const int32_t hello = *t->find_token("▁hello");
  const int32_t world = *t->find_token("▁world");
  // llama.cpp convention: text after a special token gets the dummy prefix too.
  EXPECT_EQ(t->encode("<s>hello</s>world", false, true), (Ids{1, hello, 2, world}));
  EXPECT_EQ(t->encode("hello", true, false), (Ids{1, hello}));
  // Without parse_special "<s>" is text (no token 1 apart from the BOS we asked for).
  const Ids plain = t->encode("<s>hello", true, false);
  EXPECT_EQ(plain[0], 1);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 1);
  const int32_t tool = *t->find_token("<tool>");
  EXPECT_EQ(t->encode("<tool>hello", false, false), (Ids{tool, hello}));
}

TEST(TextSpecialTokens, AddsEosWhenTheVocabularyAsks) {
  VocabSpec spec = testing::tiny_spm_spec();
  spec.add_eos = true;
  auto t = make(std::move(spec));
  const Ids ids = t->encode("hello", true, false);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
}

}  // namespace
}  // namespace saker::text
