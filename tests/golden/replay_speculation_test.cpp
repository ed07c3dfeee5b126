// The replay proposer (saker bench --spec replay:L) in the engine on saker-mini, CPU backend: batched
// requests drafting their own recorded greedy continuations give plain decoding's tokens, and the verify
// steps commit the L tokens a step asked for (a request's last step can commit fewer: max_tokens cuts it).
// With the speculation cost policy, drafts that do not pay (on this CPU a verify row costs about what a
// decode step does, so two tokens per eight-row step never pay) stand down, and the tokens stay the same.
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

struct Replay {
  std::unique_ptr<Model> model;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<GenerateOptions> opts;
  std::vector<GenerateResult> plain;
  std::shared_ptr<const spec::ReplayProposer::References> refs;

  EngineOptions options(double L) const {
    EngineOptions eo;
    eo.n_ctx = 512;
    eo.prefill_chunk = 64;
    eo.max_seqs = static_cast<int32_t>(prompts.size());
    eo.adaptive_drafts = false;
    auto factory = spec::ReplayProposer::factory(refs, L, 7, static_cast<int32_t>(model->hparams().n_vocab));
    EXPECT_TRUE(factory.ok()) << factory.status().to_string();
    if (factory.ok()) eo.proposer = *factory;
    return eo;
  }
};

// Four held-out prompts, 40 greedy tokens each, alone and without speculation: the references.
Replay make_replay() {
  Replay r;
  r.model = load_mini(OpsOptions{});
  if (!r.model) return r;
  r.prompts = heldout_prompts();
  r.prompts.resize(4);
  r.opts.assign(r.prompts.size(), greedy_options(40));
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 64;
  r.plain = run_alone(*r.model, r.prompts, r.opts, eo);
  spec::ReplayProposer::References continuations;
  for (const GenerateResult& g : r.plain) continuations.push_back(g.tokens);
  r.refs = spec::ReplayProposer::references(r.prompts, continuations);
  return r;
}

TEST(ReplaySpeculation, CommitsWhatItIsAskedAndPlainDecodingsTokens) {
  SAKER_REQUIRE_MINI();
  Replay rp = make_replay();
  ASSERT_TRUE(rp.model);
  const auto& prompts = rp.prompts;
  const auto& opts = rp.opts;
  const auto& plain = rp.plain;
  for (double L : {3.0, 5.5}) {
    auto engine = make_engine(*rp.model, rp.options(L));
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

TEST(ReplaySpeculation, TheCostPolicyStandsDownDraftsThatDoNotPay) {
  SAKER_REQUIRE_MINI();
  Replay rp = make_replay();
  ASSERT_TRUE(rp.model);
  EngineOptions eo = rp.options(2.0);
  eo.speculation_cost_policy = true;
  auto engine = make_engine(*rp.model, eo);
  ASSERT_TRUE(engine);
  const auto got = run_batched(*engine, rp.prompts, rp.opts);
  int64_t verify_steps = 0;
  for (size_t i = 0; i < rp.prompts.size(); ++i) {
    ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
    EXPECT_EQ(got[i].result->tokens, rp.plain[i].tokens) << "request " << i;
    if (got[i].result->draft) verify_steps += got[i].result->draft->verify_steps;
  }
  const EngineStats st = engine->stats();
  std::printf("cost policy, replay:2: %lld of %lld steps drafted nothing, %lld verify steps\n",
              static_cast<long long>(st.undrafted_steps), static_cast<long long>(st.steps),
              static_cast<long long>(verify_steps));
  // It explores the verify width once, then stands down for most of the run.
  EXPECT_GT(st.undrafted_steps, st.steps / 2);
}

}  // namespace
}  // namespace saker
