// TokenOutput, the per-token output stage of plain and speculative decoding: finish reasons, stop strings
// held back, text released, the length limit and logprobs.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "engine/token_output.h"
#include "text_test_vocabs.h"

namespace saker {
namespace {

std::unique_ptr<text::Tokenizer> tiny_tokenizer() {
  auto t = text::Tokenizer::from_vocab(text::Vocab::create(text::testing::tiny_bpe_spec()).value());
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

std::vector<int32_t> ids_of(const text::Tokenizer& t, const std::string& s) { return t.encode(s, false, false); }

TEST(TokenOutput, ReleasesTextAndStopsAtTheLengthLimit) {
  auto tok = tiny_tokenizer();
  GenerateOptions opt;
  opt.max_tokens = 3;
  GenerateResult r;
  std::string seen;
  std::function<bool(std::string_view)> on_text = [&](std::string_view s) {
    seen += s;
    return true;
  };
  TokenOutput out(tok.get(), opt, 5, 100, on_text, &r);
  const auto ids = ids_of(*tok, "hello world");
  ASSERT_GE(ids.size(), 2u);
  EXPECT_TRUE(out.push(ids[0], {}));
  EXPECT_TRUE(out.push(ids[1], {}));
  EXPECT_FALSE(out.push(ids[0], {}));  // the third token reaches max_tokens
  out.finish();
  EXPECT_EQ(r.finish, FinishReason::kLength);
  EXPECT_EQ(r.tokens.size(), 3u);
  EXPECT_EQ(seen, r.text);
  EXPECT_EQ(r.text, "hello worldhello");
}

TEST(TokenOutput, ContextLimitCountsThePrompt) {
  auto tok = tiny_tokenizer();
  GenerateOptions opt;
  opt.max_tokens = 100;
  GenerateResult r;
  std::function<bool(std::string_view)> none;
  TokenOutput out(tok.get(), opt, 9, 10, none, &r);
  EXPECT_FALSE(out.push(ids_of(*tok, "hello")[0], {}));  // prompt 9 + 1 = n_ctx 10
  EXPECT_EQ(r.finish, FinishReason::kLength);
}

TEST(TokenOutput, StopStringsAreHeldBackAndNamed) {
  auto tok = tiny_tokenizer();
  GenerateOptions opt;
  opt.stop = {"world"};
  GenerateResult r;
  std::function<bool(std::string_view)> none;
  TokenOutput out(tok.get(), opt, 1, 100, none, &r);
  bool going = true;
  for (int32_t id : ids_of(*tok, "hello world and more")) {
    if (!(going = out.push(id, {}))) break;
  }
  EXPECT_FALSE(going);
  out.finish();
  EXPECT_EQ(r.finish, FinishReason::kStop);
  EXPECT_EQ(r.stop_string, "world");
  EXPECT_EQ(r.text, "hello ");
}

TEST(TokenOutput, AConsumerThatRefusesTextCancels) {
  // A server client that went away: its stream refuses text; that is a cancellation, not a stop string.
  auto tok = tiny_tokenizer();
  GenerateOptions opt;
  GenerateResult r;
  std::function<bool(std::string_view)> refuse = [](std::string_view) { return false; };
  TokenOutput out(tok.get(), opt, 1, 100, refuse, &r);
  EXPECT_FALSE(out.push(ids_of(*tok, "hello")[0], {}));
  EXPECT_EQ(r.finish, FinishReason::kCancelled);
  EXPECT_TRUE(r.stop_string.empty());
}

TEST(TokenOutput, TheCancelFlagIsReadOnRequest) {
  auto tok = tiny_tokenizer();
  GenerateOptions opt;
  std::atomic<bool> cancel{false};
  opt.cancel = &cancel;
  GenerateResult r;
  std::function<bool(std::string_view)> none;
  TokenOutput out(tok.get(), opt, 1, 100, none, &r);
  EXPECT_FALSE(out.cancelled());
  cancel.store(true);
  EXPECT_TRUE(out.cancelled());
  EXPECT_EQ(r.finish, FinishReason::kCancelled);
}

TEST(TokenOutput, LogprobsComeFromTheRawRow) {
  GenerateOptions opt;
  opt.top_logprobs = 2;
  std::vector<GeneratedToken> got;
  opt.on_token = [&](const GeneratedToken& t) {
    got.push_back(t);
    return true;
  };
  GenerateResult r;
  std::function<bool(std::string_view)> none;
  TokenOutput out(nullptr, opt, 1, 100, none, &r);
  const std::vector<float> row = {0.0f, 2.0f, 1.0f, -1.0f};
  EXPECT_TRUE(out.push(2, row));
  ASSERT_EQ(got.size(), 1u);
  double z = 0;
  for (float l : row) z += std::exp(l);
  EXPECT_NEAR(got[0].logprob, 1.0 - std::log(z), 1e-5);
  ASSERT_EQ(got[0].top.size(), 2u);
  EXPECT_EQ(got[0].top[0].id, 1);
  EXPECT_EQ(got[0].top[1].id, 2);
}

}  // namespace
}  // namespace saker
