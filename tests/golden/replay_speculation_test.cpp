// The replay proposer (saker bench --spec replay:L) in the engine on saker-mini, CPU backend: batched
// requests drafting their own recorded greedy continuations give plain decoding's tokens, and the verify
// steps commit the L tokens a step asked for (a request's last step can commit fewer: max_tokens cuts it).
// With the speculation cost policy, drafts that do not pay (on this CPU a verify row costs about what a
// decode step does, so two tokens per eight-row step never pay) stand down, and the tokens stay the same.
#include <gtest/gtest.h>

#include <cstring>

#include "engine_test_util.h"
#include "saker_mini.h"
#include "spec/dflash_drafter.h"
#include "spec/dflash_proposer.h"
#include "spec/replay_proposer.h"
#include "spec/shadowed_proposer.h"

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

// The engine's recent acceptance (what a new sequence's DraftPolicy starts from, instead of half the most):
// a moving average of every verify step's accepted drafts, here replay:3's two.
TEST(ReplaySpeculation, TheEngineKeepsTheAcceptanceNewSequencesStartFrom) {
  SAKER_REQUIRE_MINI();
  Replay rp = make_replay();
  ASSERT_TRUE(rp.model);
  auto engine = make_engine(*rp.model, rp.options(3.0));
  ASSERT_TRUE(engine);
  EXPECT_LT(engine->stats().accepted_drafts, 0.0) << "no verify step yet";
  const auto got = run_batched(*engine, rp.prompts, rp.opts);
  for (size_t i = 0; i < rp.prompts.size(); ++i) ASSERT_TRUE(got[i].result.ok());
  EXPECT_NEAR(engine->stats().accepted_drafts, 2.0, 0.3);
}

// EngineOptions::draft_rows bounds a drafting step's rows (on CUDA the width-invariant kernels' 64) and shares
// them out evenly: four sequences in 12 rows draft two tokens each, every one of them drafts, and a verify
// step commits at most three tokens. Without the even share the oldest sequences took the whole budget.
TEST(ReplaySpeculation, DraftRowsAreSharedEvenlyAndBoundTheStep) {
  SAKER_REQUIRE_MINI();
  Replay rp = make_replay();
  ASSERT_TRUE(rp.model);
  EngineOptions eo = rp.options(5.5);
  eo.draft_rows = 12;
  auto engine = make_engine(*rp.model, eo);
  ASSERT_TRUE(engine);
  const auto got = run_batched(*engine, rp.prompts, rp.opts);
  for (size_t i = 0; i < rp.prompts.size(); ++i) {
    ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
    EXPECT_EQ(got[i].result->tokens, rp.plain[i].tokens) << "request " << i;
    ASSERT_TRUE(got[i].result->draft) << "request " << i;
    const DraftStats& d = *got[i].result->draft;
    EXPECT_GT(d.verify_steps, 5) << "request " << i << " hardly drafted";
    EXPECT_LE(d.mean_accepted_length(), 3.0) << "request " << i;
    EXPECT_GT(d.mean_accepted_length(), 2.0) << "request " << i;  // replay:5.5 accepts what it may
  }
}

// saker bench's replay with a drafter's cost: each sequence replays its reference while a slot of one random
// drafter of the target's shape (DFlashWeights::random) is fed and asked every step and its drafts dropped.
// The tokens and the commits are the replay's; the drafter drafts one block per verify step, batched.
TEST(ReplaySpeculation, AShadowDrafterCostsTimeAndChangesNothing) {
  SAKER_REQUIRE_MINI();
  Replay rp = make_replay();
  ASSERT_TRUE(rp.model);
  auto weights = testing::load_mini_weights();
  ASSERT_TRUE(weights);
  auto random = spec::DFlashWeights::random(weights, 2, 8, 7);
  ASSERT_TRUE(random.ok()) << random.status().to_string();
  const spec::DFlashConfig& c = (*random)->config;
  EXPECT_EQ(c.n_embd, rp.model->hparams().n_embd);
  EXPECT_EQ(c.n_ff, rp.model->hparams().n_ff);
  EXPECT_EQ(c.target_layers, spec::DFlashConfig::spread_taps(rp.model->hparams().n_layer, 2));
  EXPECT_EQ((*random)->layers[0].wq.dtype, DType::kBF16);

  EngineOptions eo = rp.options(4.0);
  auto made = spec::DFlashDrafter::create(*random, eo.n_ctx + c.block_size, OpsOptions{}, eo.max_seqs);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  std::shared_ptr<spec::DFlashDrafter> drafter = std::move(made).value();
  const ProposerFactory replay = eo.proposer;
  eo.proposer = spec::ShadowedProposer::factory(replay, [drafter]() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(auto slot, spec::DFlashProposer::create(drafter, 0));
    return std::unique_ptr<Proposer>(std::move(slot));
  });
  auto engine = make_engine(*rp.model, eo);
  ASSERT_TRUE(engine);
  const auto got = run_batched(*engine, rp.prompts, rp.opts);
  int64_t verify_steps = 0;
  for (size_t i = 0; i < rp.prompts.size(); ++i) {
    ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
    EXPECT_EQ(got[i].result->tokens, rp.plain[i].tokens) << "request " << i;
    ASSERT_TRUE(got[i].result->draft);
    EXPECT_GE(got[i].result->draft->mean_accepted_length(), 3.25) << "request " << i;
    verify_steps += got[i].result->draft->verify_steps;
  }
  const spec::DFlashDrafter::Stats& st = drafter->stats();
  EXPECT_EQ(st.blocks, verify_steps) << "one drafter block per verify step";
  EXPECT_LT(st.block_forwards, st.blocks) << "the sequences' blocks were drafted together";
  EXPECT_GT(st.context_rows, 0);

  // The same seed gives the same weights; another seed others.
  auto again = spec::DFlashWeights::random(weights, 2, 8, 7);
  auto other = spec::DFlashWeights::random(weights, 2, 8, 8);
  ASSERT_TRUE(again.ok() && other.ok());
  const TensorView& a = (*random)->layers[1].w_down;
  const size_t bytes = static_cast<size_t>(a.n_elements()) * 2;
  EXPECT_EQ(std::memcmp(a.data, (*again)->layers[1].w_down.data, bytes), 0);
  EXPECT_NE(std::memcmp(a.data, (*other)->layers[1].w_down.data, bytes), 0);
  // A shadow may not be null, and the lead may not read hidden states.
  auto lead = replay();
  ASSERT_TRUE(lead.ok());
  EXPECT_FALSE(spec::ShadowedProposer::create(std::move(lead).value(), nullptr).ok());
}

TEST(ReplaySpeculation, TapsAreSpreadAsDFlashSpreadsThem) {
  EXPECT_EQ(spec::DFlashConfig::spread_taps(36, 5), (std::vector<int32_t>{1, 9, 17, 25, 33}));
  EXPECT_EQ(spec::DFlashConfig::spread_taps(28, 1), (std::vector<int32_t>{14}));
  EXPECT_EQ(spec::DFlashConfig::spread_taps(64, 5), (std::vector<int32_t>{1, 16, 31, 46, 61}));
  // A target too small for the rule gets fewer taps, inside it and ascending.
  EXPECT_EQ(spec::DFlashConfig::spread_taps(2, 5), (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(spec::DFlashConfig::spread_taps(0, 3).empty());
}

}  // namespace
}  // namespace saker
