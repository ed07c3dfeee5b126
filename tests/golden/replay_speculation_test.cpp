// The replay proposer (saker bench --spec replay:L) in the engine on saker-mini, CPU backend: batched
// requests drafting their own recorded greedy continuations give plain decoding's tokens, and the verify
// steps commit the L tokens a step asked for (a request's last step can commit fewer: max_tokens cuts it).
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "saker_mini.h"
#include "spec/replay_proposer.h"

namespace saker {
namespace {

using testing::greedy_options;
using testing::heldout_prompts;
using testing::load_mini;
using testing::make_engine;
using testing::run_alone;
using testing::run_batched;

TEST(ReplaySpeculation, CommitsWhatItIsAskedAndPlainDecodingsTokens) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  auto prompts = heldout_prompts();
  prompts.resize(4);
  const std::vector<GenerateOptions> opts(prompts.size(), greedy_options(40));
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 64;
  const auto plain = run_alone(*model, prompts, opts, eo);
  auto refs = std::make_shared<std::vector<std::vector<int32_t>>>();
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int32_t> r = prompts[i];
    r.insert(r.end(), plain[i].tokens.begin(), plain[i].tokens.end());
    refs->push_back(std::move(r));
  }
  const int32_t n_vocab = static_cast<int32_t>(model->hparams().n_vocab);
  for (double L : {3.0, 5.5}) {
    eo.max_seqs = static_cast<int32_t>(prompts.size());
    eo.adaptive_drafts = false;
    eo.proposer = [refs, L, n_vocab]() -> Result<std::unique_ptr<Proposer>> {
      SAKER_ASSIGN_OR_RETURN(auto p, spec::ReplayProposer::create(refs, L, 7, n_vocab));
      return std::unique_ptr<Proposer>(std::move(p));
    };
    auto engine = make_engine(*model, eo);
    ASSERT_TRUE(engine);
    const auto got = run_batched(*engine, prompts, opts);
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
      EXPECT_EQ(got[i].result->tokens, plain[i].tokens) << "L " << L << " request " << i;
      ASSERT_TRUE(got[i].result->draft);
      const DraftStats& d = *got[i].result->draft;
      // Every step but the last commits accepted_at(step) + 1 tokens.
      EXPECT_GE(d.mean_accepted_length(), L - 0.75) << "L " << L << " request " << i;
      EXPECT_LE(d.mean_accepted_length(), L + 0.5) << "L " << L << " request " << i;
    }
  }
}

}  // namespace
}  // namespace saker
