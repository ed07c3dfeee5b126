// Byte-level BPE and SentencePiece encoding/decoding on tiny hand-made vocabularies.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"
#include "text_test_vocabs.h"

namespace saker::text {
namespace {

using Ids = std::vector<int32_t>;

std::unique_ptr<Tokenizer> make(VocabSpec spec) {
  auto vocab = Vocab::create(std::move(spec));
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  auto t = Tokenizer::from_vocab(std::move(vocab).value());
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

int32_t id(const Tokenizer& t, const std::string& text) {
  const auto found = t.find_token(text);
  EXPECT_TRUE(found.has_value()) << "no token " << text;
  return found.value_or(-1);
}

TEST(TextBpe, MergesByRank) {
  auto t = make(testing::tiny_bpe_spec());
  EXPECT_EQ(t->kind(), VocabKind::kBpe);
  EXPECT_EQ(t->pretokenizer_name(), "gpt-2");
  EXPECT_EQ(t->encode("hello world", false, false), (Ids{id(*t, "hello"), id(*t, "Ġworld")}));
  // "  world": the first space is its own piece, the second leads the word.
  EXPECT_EQ(t->encode("hello  world", false, false), (Ids{id(*t, "hello"), id(*t, "Ġ"), id(*t, "Ġworld")}));
  // Equal ranks merge left to right: "lll" -> "ll" + "l".
  EXPECT_EQ(t->encode("lll", false, false), (Ids{id(*t, "ll"), id(*t, "l")}));
  // A piece no merge covers stays as bytes.
  EXPECT_EQ(t->encode("hellx", false, false), (Ids{id(*t, "hell"), id(*t, "x")}));
  EXPECT_TRUE(t->encode("", true, true).empty());  // this vocabulary does not ask for BOS
}

TEST(TextBpe, TiktokenStyleLooksUpWholePieces) {
  auto t = make(testing::tiny_bpe_spec("llama-bpe"));
  EXPECT_EQ(t->pretokenizer_name(), "llama3");
  EXPECT_EQ(t->encode("hellx", false, false), (Ids{id(*t, "hellx")}));
}

TEST(TextBpe, DecodeIsLosslessAndInvalidInputIsSafe) {
  auto t = make(testing::tiny_bpe_spec());
  const std::string text = "héllo wörld\n\t🦙 ok";
  EXPECT_EQ(t->decode(t->encode(text, false, false)), text);
  // Invalid bytes become U+FFFD (as llama.cpp does) instead of failing.
  const Ids ids = t->encode("a\xFF\xC3", false, false);
  EXPECT_EQ(t->decode(ids), "a\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(t->token_to_piece(-1).empty());
  EXPECT_TRUE(t->token_to_piece(t->n_vocab()).empty());
}

TEST(TextBpe, UnknownPreTokenizerFallsBack) {
  auto t = make(testing::tiny_bpe_spec("qwen7-new"));
  EXPECT_EQ(t->pretokenizer_name(), "qwen2");
  EXPECT_EQ(t->encode("hello world", false, false), (Ids{id(*t, "hello"), id(*t, "Ġworld")}));
}

TEST(TextSpm, MergesByScoreWithDummyPrefix) {
  auto t = make(testing::tiny_spm_spec());
  EXPECT_EQ(t->kind(), VocabKind::kSpm);
  EXPECT_EQ(t->encode("hello world", false, false), (Ids{id(*t, "▁hello"), id(*t, "▁world")}));
  EXPECT_EQ(t->encode("hello world", true, false), (Ids{1, id(*t, "▁hello"), id(*t, "▁world")}));
  EXPECT_EQ(t->encode(" hello", false, false), (Ids{id(*t, "▁"), id(*t, "▁hello")}));
  EXPECT_TRUE(t->encode("", false, false).empty());
  EXPECT_EQ(t->encode("", true, false), (Ids{1}));
}

TEST(TextSpm, ByteFallbackAndDecode) {
  auto t = make(testing::tiny_spm_spec());
  // "é" (C3 A9) is not a piece: two byte tokens.
  const Ids ids = t->encode("hé", false, false);
  EXPECT_EQ(ids, (Ids{id(*t, "▁h"), id(*t, "<0xC3>"), id(*t, "<0xA9>")}));
  EXPECT_EQ(t->decode(ids), "hé");  // the dummy space is dropped again
  DecodeOptions keep;
  keep.strip_leading_space = false;
  EXPECT_EQ(t->decode(ids, keep), " hé");
  // BOS renders as its text unless skipped.
  EXPECT_EQ(t->decode(Ids{1, id(*t, "▁hello")}), "<s>hello");
  DecodeOptions skip;
  skip.skip_special = true;
  EXPECT_EQ(t->decode(Ids{1, id(*t, "▁hello"), 2}, skip), "hello");
  // Invalid UTF-8 goes through byte tokens and comes back unchanged.
  const std::string bad = "h\xFF\x80w";
  EXPECT_EQ(t->decode(t->encode(bad, false, false)), bad);
}

TEST(TextSpm, UnknownWithoutByteTokens) {
  VocabSpec spec = testing::tiny_spm_spec();
  for (size_t i = 0; i < spec.types.size(); ++i) {
    if (spec.types[i] == TokenType::kByte) spec.tokens[i] = "byte" + std::to_string(i);  // no <0xNN> left
  }
  auto t = make(std::move(spec));
  EXPECT_EQ(t->encode("hé", false, false), (Ids{id(*t, "▁h"), 0, 0}));
}

TEST(TextVocab, RejectsInconsistentSpecs) {
  VocabSpec empty;
  EXPECT_FALSE(Vocab::create(empty).ok());
  VocabSpec bad_scores = testing::tiny_spm_spec();
  bad_scores.scores.pop_back();
  EXPECT_FALSE(Vocab::create(bad_scores).ok());
  VocabSpec bad_merge = testing::tiny_bpe_spec();
  bad_merge.merges.push_back("nospace");
  auto v = Vocab::create(bad_merge);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("nospace"), std::string::npos);
  // A special id outside the vocabulary is dropped, not trusted.
  VocabSpec bad_id = testing::tiny_spm_spec();
  bad_id.bos_id = 1 << 30;
  auto w = Vocab::create(bad_id);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->bos_id(), kNoToken);
}

}  // namespace
}  // namespace saker::text
