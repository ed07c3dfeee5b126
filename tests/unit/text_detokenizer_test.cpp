// Incremental detokenizer: never emits part of a UTF-8 character.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "text/detokenizer.h"
#include "text/utf8.h"
#include "text_test_vocabs.h"

namespace saker::text {
namespace {

std::unique_ptr<Tokenizer> make(VocabSpec spec) {
  auto t = Tokenizer::from_vocab(Vocab::create(std::move(spec)).value());
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

// Streams `ids`, checking every chunk is valid UTF-8 on its own; returns the chunks.
std::vector<std::string> stream(IncrementalDetokenizer& d, const std::vector<int32_t>& ids) {
  std::vector<std::string> chunks;
  for (int32_t id : ids) chunks.push_back(d.push(id));
  chunks.push_back(d.flush());
  for (const auto& c : chunks) EXPECT_TRUE(utf8_is_valid(c)) << c;
  return chunks;
}

std::string join(const std::vector<std::string>& chunks) {
  std::string s;
  for (const auto& c : chunks) s += c;
  return s;
}

TEST(TextDetokenizer, SpmByteTokensOfOneCharacter) {
  auto t = make(testing::tiny_spm_spec());
  IncrementalDetokenizer d(*t);
  const auto byte = [&](int b) { return *t->find_token(fmt::format("<0x{:02X}>", b)); };
  EXPECT_EQ(d.push(*t->find_token("▁hello")), "hello");  // dummy space stripped at the start
  EXPECT_EQ(d.push(byte(0xF0)), "");
  EXPECT_EQ(d.push(byte(0x9F)), "");
  EXPECT_EQ(d.push(byte(0xA6)), "");
  EXPECT_EQ(d.pending_bytes(), 3u);
  EXPECT_EQ(d.push(byte(0x99)), "🦙");
  EXPECT_EQ(d.push(*t->find_token("▁world")), " world");  // only the first space is a dummy
  EXPECT_EQ(d.flush(), "");
}

TEST(TextDetokenizer, ContinuationKeepsTheLeadingSpace) {
  auto t = make(testing::tiny_spm_spec());
  DecodeOptions continuation;
  continuation.strip_leading_space = false;
  IncrementalDetokenizer d(*t, continuation);
  EXPECT_EQ(d.push(*t->find_token("▁world")), " world");
}

TEST(TextDetokenizer, ByteLevelEmojiSplitAcrossTokens) {
  auto t = make(testing::tiny_bpe_spec());
  const std::string text = "héllo 😶‍🌫️ 🦙!";
  const std::vector<int32_t> ids = t->encode(text, false, false);
  IncrementalDetokenizer d(*t);
  const auto chunks = stream(d, ids);
  EXPECT_EQ(join(chunks), text);
  // The tiny vocabulary has no multi-byte tokens, so characters arrive byte by byte and must be held.
  size_t empty = 0;
  for (const auto& c : chunks) empty += c.empty();
  EXPECT_GT(empty, 5u);
}

TEST(TextDetokenizer, UnfinishedCharacterAtTheEndBecomesReplacement) {
  auto t = make(testing::tiny_spm_spec());
  IncrementalDetokenizer d(*t);
  EXPECT_EQ(d.push(*t->find_token("<0xE2>")), "");
  EXPECT_EQ(d.push(*t->find_token("<0x96>")), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD");
  // A byte that can never start a character is replaced at once, not held.
  EXPECT_EQ(d.push(*t->find_token("<0x80>")), "\xEF\xBF\xBD");
  // A broken sequence followed by a normal character: replacement, then the character.
  EXPECT_EQ(d.push(*t->find_token("<0xC3>")), "");
  EXPECT_EQ(d.push(*t->find_token("w")), "\xEF\xBF\xBDw");
}

TEST(TextDetokenizer, SpecialTokensAndReset) {
  auto t = make(testing::tiny_spm_spec());
  DecodeOptions skip;
  skip.skip_special = true;
  IncrementalDetokenizer d(*t, skip);
  EXPECT_EQ(d.push(1), "");  // BOS
  EXPECT_EQ(d.push(*t->find_token("▁hello")), "hello");
  EXPECT_EQ(d.push(2), "");
  d.reset();
  EXPECT_EQ(d.push(*t->find_token("▁world")), "world");
}

}  // namespace
}  // namespace saker::text
