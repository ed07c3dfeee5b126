// Speculative decoding inside the batched engine step on saker-mini (CPU backend): every proposer (the DFlash
// drafter as chain and tree, n-gram prompt lookup, a draft model, n-gram chained to the drafter) drafts for
// several sequences batched together, greedy and sampled, and each request's tokens equal plain decoding's
// alone (same seeds); the drafts are used; the n-gram proposer and the drafter keep the prefix cache.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "saker_mini.h"
#include "spec/chained_proposer.h"
#include "spec/dflash_proposer.h"
#include "spec/draft_model_proposer.h"
#include "spec/ngram_proposer.h"
#include "spec_sampling_check.h"

namespace saker {
namespace {

using testing::greedy_options;
using testing::heldout_prompts;
using testing::load_mini;
using testing::make_engine;
using testing::mini_dir;
using testing::Outcome;
using testing::run_alone;
using testing::run_batched;

// n requests of `tokens` tokens: greedy, except every `every`-th (index % every == every - 1) sampled at
// `temperature` with its own seed.
std::vector<GenerateOptions> mixed_options(size_t n, int32_t tokens, size_t every, float temperature,
                                           uint64_t seed_base) {
  std::vector<GenerateOptions> opts;
  for (size_t i = 0; i < n; ++i) {
    GenerateOptions o = greedy_options(tokens);
    if (i % every == every - 1) {
      o.sampling.temperature = temperature;
      o.sampling.seed = seed_base + i;
    }
    opts.push_back(o);
  }
  return opts;
}

template <typename P>
ProposerFactory factory_of(std::function<Result<std::unique_ptr<P>>()> make) {
  return [make]() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(auto p, make());
    return std::unique_ptr<Proposer>(std::move(p));
  };
}

struct SpeculationRun {
  DraftStats all, greedy, sampled;  // summed over the requests (and over the greedy / sampled ones)
  int64_t engine_steps = 0;
};

// Runs the requests batched on an engine (eo with `max_seqs` sequences, `step_tokens` per step) whose
// sequences draft with `proposer`, and expects each request's tokens to equal `plain` (the same requests
// alone, without speculation).
SpeculationRun expect_speculation_equals_plain(Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                               const std::vector<GenerateOptions>& opts,
                                               const std::vector<GenerateResult>& plain, EngineOptions eo,
                                               ProposerFactory proposer, const std::string& what) {
  eo.max_seqs = static_cast<int32_t>(prompts.size());
  eo.proposer = std::move(proposer);
  auto engine = make_engine(model, eo);
  SpeculationRun run;
  if (!engine) return run;
  const std::vector<Outcome> got = run_batched(*engine, prompts, opts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i].done_calls, 1) << what << " request " << i;
    if (!got[i].result.ok()) {
      ADD_FAILURE() << what << " request " << i << ": " << got[i].result.status().to_string();
      continue;
    }
    EXPECT_EQ(got[i].result->tokens, plain[i].tokens) << what << " request " << i;
    if (!got[i].result->draft) {
      ADD_FAILURE() << what << " request " << i << " has no draft stats";
      continue;
    }
    const DraftStats& d = *got[i].result->draft;
    run.all.merge(d);
    (opts[i].sampling.temperature > 0.0f ? run.sampled : run.greedy).merge(d);
  }
  run.engine_steps = engine->stats().steps;
  std::printf("engine %s: %zu batched sequences identical to plain decoding; %.3f tokens per verify step over "
              "%lld verify steps (greedy %.3f, sampled %.3f), %lld engine steps\n",
              what.c_str(), prompts.size(), run.all.mean_accepted_length(),
              static_cast<long long>(run.all.verify_steps), run.greedy.mean_accepted_length(),
              run.sampled.mean_accepted_length(), static_cast<long long>(run.engine_steps));
  return run;
}

std::shared_ptr<const spec::DFlashWeights> mini_drafter(std::shared_ptr<const ModelWeights> weights) {
  auto drafter = spec::DFlashWeights::load((mini_dir() / "drafter").string(), std::move(weights));
  EXPECT_TRUE(drafter.ok()) << drafter.status().to_string();
  return drafter.ok() ? std::move(drafter).value() : nullptr;
}

// saker-mini and its DFlash drafter over one set of weights (either null when loading failed).
struct MiniWithDrafter {
  std::unique_ptr<Model> model;
  std::shared_ptr<const spec::DFlashWeights> drafter;
};
MiniWithDrafter load_mini_with_drafter() {
  MiniWithDrafter m;
  auto weights = testing::load_mini_weights();
  if (!weights) return m;
  m.model = load_mini(OpsOptions{}, weights);
  m.drafter = mini_drafter(weights);
  return m;
}

ProposerFactory ngram_factory() {
  return factory_of<spec::NgramProposer>([] { return spec::NgramProposer::create(spec::NgramOptions{}); });
}

EngineOptions small_engine(int64_t step_tokens) {
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 64;
  eo.step_tokens = step_tokens;
  return eo;
}

// saker-mini's DFlash drafter, chain and tree of 12, 8 sequences.
TEST(EngineSpeculation, DrafterChainAndTreeEqualPlainDecoding) {
  SAKER_REQUIRE_MINI();
  auto [model, dw] = load_mini_with_drafter();
  ASSERT_TRUE(model && dw);
  auto prompts = heldout_prompts();
  prompts.resize(8);
  auto opts = mixed_options(prompts.size(), 48, 4, 0.8f, 100);
  for (auto& o : opts) {
    if (o.sampling.temperature > 0.0f) o.sampling.top_k = 40;
  }
  const EngineOptions eo = small_engine(8 * 32);
  const auto plain = run_alone(*model, prompts, opts, eo);
  for (int32_t tree : {0, 12}) {
    const std::string what = tree ? "drafter tree of 12" : "drafter chain";
    // Every sequence a slot of one drafter (how the CLI and the server run it): one forward drafts them all.
    auto shared = spec::DFlashDrafter::create(dw, 512 + dw->config.block_size, OpsOptions{}, 8);
    ASSERT_TRUE(shared.ok()) << shared.status().to_string();
    std::shared_ptr<spec::DFlashDrafter> drafter = std::move(shared).value();
    const SpeculationRun run = expect_speculation_equals_plain(
        *model, prompts, opts, plain, eo,
        factory_of<spec::DFlashProposer>([drafter, tree] { return spec::DFlashProposer::create(drafter, tree); }),
        what + ", one drafter");
    EXPECT_GT(run.all.mean_accepted_length(), 1.5) << "the drafter's tokens were not accepted";
    const spec::DFlashDrafter::Stats& st = drafter->stats();
    std::printf("%s: %lld blocks drafted in %lld forwards, %lld positions fused in %lld forwards\n", what.c_str(),
                static_cast<long long>(st.blocks), static_cast<long long>(st.block_forwards),
                static_cast<long long>(st.context_rows), static_cast<long long>(st.context_forwards));
    EXPECT_GT(static_cast<double>(st.blocks), 3.0 * static_cast<double>(st.block_forwards))
        << "the sequences' blocks were not drafted together";
    // A drafter of its own per sequence drafts the same: the same drafts, verify steps and commits.
    const SpeculationRun own = expect_speculation_equals_plain(
        *model, prompts, opts, plain, eo,
        factory_of<spec::DFlashProposer>([dw, tree] { return spec::DFlashProposer::create(dw, 512, tree, OpsOptions{}); }),
        what + ", a drafter each");
    EXPECT_EQ(own.all.verify_steps, run.all.verify_steps);
    EXPECT_EQ(own.all.committed_tokens, run.all.committed_tokens);
    EXPECT_EQ(own.all.drafted_tokens, run.all.drafted_tokens);
  }
}

// Sampled speculation through one shared drafter against plain sampling over 96 seeds: on the CPU every seed
// gives the same tokens (verify rows round as decode rows do), so the chi-square test on each position must
// pass too; the GPU test runs the same comparison where only the distributions must agree.
TEST(EngineSpeculation, SampledSpeculationIsPlainSamplingByChiSquare) {
  SAKER_REQUIRE_MINI();
  auto [model, dw] = load_mini_with_drafter();
  ASSERT_TRUE(model && dw);
  EngineOptions eo = small_engine(16 * 16);
  eo.max_seqs = 16;
  // One prompt for every seed: with the prefix cache, plain requests after the first would prefill only its
  // last page, in other runs than the speculating ones (which prefill everything for the drafter's taps).
  eo.prefix_cache = false;
  auto made = spec::DFlashProposer::factory(dw, eo.max_seqs, eo.n_ctx, 0, OpsOptions{});
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  SamplingParams sp;
  sp.temperature = 1.0f;
  sp.top_k = 10;
  const auto c = testing::compare_sampling(*model, heldout_prompts()[3], 96, 6, sp, eo, *made);
  EXPECT_EQ(c.identical, c.seeds) << "on the CPU speculative sampling is plain sampling draw for draw";
  ASSERT_EQ(c.positions.size(), 6u);
  for (size_t p = 0; p < c.positions.size(); ++p) EXPECT_GT(c.positions[p].p_value, 1e-3) << "position " << p;
  EXPECT_GT(c.drafts.verify_steps, 0);
}

// n-gram prompt lookup, 8 sequences; some drafts accepted.
TEST(EngineSpeculation, NgramEqualsPlainDecoding) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  auto prompts = heldout_prompts();
  prompts.resize(8);
  const auto opts = mixed_options(prompts.size(), 64, 4, 0.8f, 200);
  const EngineOptions eo = small_engine(8 * 16);
  const auto plain = run_alone(*model, prompts, opts, eo);
  const SpeculationRun run = expect_speculation_equals_plain(*model, prompts, opts, plain, eo, ngram_factory(), "n-gram");
  EXPECT_GT(run.all.verify_steps, 0) << "no n-gram draft was proposed";
  EXPECT_GT(run.all.committed_tokens, run.all.verify_steps) << "no n-gram draft token was accepted";
}

// saker-mini drafts for itself as a draft model (a second instance, its own KV cache per sequence): greedy
// accepts every draft; sampled rejects often, so the draft cache's rollback runs.
TEST(EngineSpeculation, DraftModelEqualsPlainDecoding) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  auto draft = load_mini(OpsOptions{});
  ASSERT_TRUE(model && draft);
  auto prompts = heldout_prompts();
  prompts.resize(6);
  const auto opts = mixed_options(prompts.size(), 40, 2, 1.0f, 300);
  const EngineOptions eo = small_engine(6 * 16);
  const auto plain = run_alone(*model, prompts, opts, eo);
  Model* dm = draft.get();
  const SpeculationRun run = expect_speculation_equals_plain(
      *model, prompts, opts, plain, eo,
      factory_of<spec::DraftModelProposer>([dm] { return spec::DraftModelProposer::create(*dm, 512, 6); }),
      "draft model");
  // One draft model batch for every sequence (how the CLI and the server run it): the same drafts, verify steps
  // and commits as a draft cache per sequence, in fewer forwards.
  auto shared = spec::DraftModelBatch::create(*dm, static_cast<int32_t>(prompts.size()), 512);
  ASSERT_TRUE(shared.ok()) << shared.status().to_string();
  std::shared_ptr<spec::DraftModelBatch> batch = *shared;
  const SpeculationRun together = expect_speculation_equals_plain(
      *model, prompts, opts, plain, eo,
      factory_of<spec::DraftModelProposer>([batch] { return spec::DraftModelProposer::create(batch, 6); }),
      "draft model, one batch");
  EXPECT_EQ(together.all.verify_steps, run.all.verify_steps);
  EXPECT_EQ(together.all.committed_tokens, run.all.committed_tokens);
  EXPECT_EQ(together.all.drafted_tokens, run.all.drafted_tokens);
  const spec::DraftModelBatch::Stats& st = batch->stats();
  std::printf("draft model, one batch: %lld tokens drafted in %lld forwards\n", static_cast<long long>(st.drafted),
              static_cast<long long>(st.forwards));
  EXPECT_LT(st.forwards * 2, st.drafted) << "the sequences' drafts were not batched";
  // A queued request's proposer holds no draft KV cache yet.
  auto lazy = spec::DraftModelProposer::create(*dm, 512, 6);
  ASSERT_TRUE(lazy.ok());
  EXPECT_FALSE((*lazy)->allocated());
  DraftNodes nodes;
  ASSERT_TRUE((*lazy)->propose(prompts[0], 6, &nodes).ok());
  EXPECT_TRUE((*lazy)->allocated());
  EXPECT_EQ(nodes.size(), 6);
  // Greedy: the draft is the target, so each step commits its 6 drafts and the target's next token (the last
  // step of a request may have less room).
  EXPECT_GT(run.greedy.mean_accepted_length(), 6.0);
  EXPECT_LT(run.sampled.mean_accepted_length(), run.greedy.mean_accepted_length());
}

// Prompt lookup chained to the DFlash drafter (the drafter reads taps; the chain forwards them, and the
// drafter keeps its context on steps where the n-gram drafted).
TEST(EngineSpeculation, NgramChainedToTheDrafterEqualsPlainDecoding) {
  SAKER_REQUIRE_MINI();
  auto [model, dw] = load_mini_with_drafter();
  ASSERT_TRUE(model && dw);
  auto prompts = heldout_prompts();
  prompts.resize(6);
  const auto opts = mixed_options(prompts.size(), 48, 3, 0.8f, 400);
  const EngineOptions eo = small_engine(6 * 20);
  const auto plain = run_alone(*model, prompts, opts, eo);
  const SpeculationRun run = expect_speculation_equals_plain(
      *model, prompts, opts, plain, eo, factory_of<spec::ChainedProposer>([dw]() -> Result<std::unique_ptr<spec::ChainedProposer>> {
        std::vector<std::unique_ptr<Proposer>> chain;
        SAKER_ASSIGN_OR_RETURN(auto ngram, spec::NgramProposer::create(spec::NgramOptions{}));
        SAKER_ASSIGN_OR_RETURN(auto dflash, spec::DFlashProposer::create(dw, 512, 0, OpsOptions{}));
        chain.push_back(std::move(ngram));
        chain.push_back(std::move(dflash));
        return spec::ChainedProposer::create(std::move(chain));
      }),
      "n-gram then drafter");
  EXPECT_GT(run.all.mean_accepted_length(), 1.5);
}

// A proposer that fails every other call (as a draft model whose cache cannot be allocated would): those steps
// decode without a draft, nothing stalls, and the output is still plain decoding's.
class FlakyProposer : public Proposer {
 public:
  std::span<const int32_t> tap_layers() const override { return {}; }
  void reset() override {}
  Status add_context(int64_t, const FloatRows&) override { return {}; }
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override {
    if (++calls_ % 2 == 0) return make_error(StatusCode::kOutOfRange, "no memory for the draft");
    return ngram_->propose(tokens, max_depth, out);
  }
  int64_t max_nodes() const override { return ngram_->max_nodes(); }

 private:
  std::unique_ptr<spec::NgramProposer> ngram_ = std::move(spec::NgramProposer::create({})).value();
  int64_t calls_ = 0;
};

TEST(EngineSpeculation, AFailingProposerCostsTheDraftNotTheStep) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  auto prompts = heldout_prompts();
  prompts.resize(4);
  const auto opts = mixed_options(prompts.size(), 40, 2, 0.8f, 500);
  const EngineOptions eo = small_engine(4 * 16);
  const auto plain = run_alone(*model, prompts, opts, eo);
  const SpeculationRun run = expect_speculation_equals_plain(
      *model, prompts, opts, plain, eo,
      factory_of<FlakyProposer>([] { return Result<std::unique_ptr<FlakyProposer>>(std::make_unique<FlakyProposer>()); }),
      "failing every other draft");
  EXPECT_GT(run.all.verify_steps, 0);
}

TEST(EngineSpeculation, ChainRefusesTwoTapReadersAndAnEmptyList) {
  SAKER_REQUIRE_MINI();
  auto dw = mini_drafter(testing::load_mini_weights());
  ASSERT_TRUE(dw);
  std::vector<std::unique_ptr<Proposer>> two;
  two.push_back(std::move(spec::DFlashProposer::create(dw, 64, 0, OpsOptions{})).value());
  two.push_back(std::move(spec::DFlashProposer::create(dw, 64, 0, OpsOptions{})).value());
  auto r = spec::ChainedProposer::create(std::move(two));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hidden states"), std::string::npos);
  EXPECT_FALSE(spec::ChainedProposer::create({}).ok());
}

// Two greedy requests sharing a 400-token prefix, one after the other on one engine (n_ctx 1024, prefill chunks
// of 128, `proposer` drafting if set), the first generating first_tokens (0: a prompt pass only), the second 48:
// the second's result and the tokens the engine's prefix cache served over both.
struct PrefixPairRun {
  GenerateResult second;
  int64_t hit_tokens = 0;
};
PrefixPairRun run_prefix_pair(Model& model, ProposerFactory proposer = nullptr, int32_t first_tokens = 48) {
  const auto [first, second] = testing::shared_prefix_pair(400);
  const GenerateOptions o = greedy_options(48);
  EngineOptions eo;
  eo.n_ctx = 1024;
  eo.prefill_chunk = 128;
  eo.proposer = std::move(proposer);
  auto engine = make_engine(model, eo);
  PrefixPairRun run;
  if (!engine) return run;
  EXPECT_TRUE(engine->generate(first, greedy_options(first_tokens)).ok());
  auto r = engine->generate(second, o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (r.ok()) run.second = *r;
  run.hit_tokens = engine->stats().pool.hit_tokens;
  return run;
}

// The n-gram proposer reads no hidden states, so a speculating request still takes its shared prefix from the
// cache, and its output stays plain decoding's with the same cache state. (The reference is plain decoding
// after the same earlier request: with BLAS prefill, a prompt prefilled in other chunks may part at a near-tie,
// docs/internals.md; that is the prefix cache's property, tested in PrefixCacheHitEqualsColdRun.)
TEST(EngineSpeculation, NgramKeepsThePrefixCache) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  const PrefixPairRun plain = run_prefix_pair(*model);
  const PrefixPairRun spec = run_prefix_pair(*model, ngram_factory());
  EXPECT_GE(spec.hit_tokens, 384) << "the shared 400-token prefix should come from the cache";
  EXPECT_EQ(spec.hit_tokens, plain.hit_tokens);
  EXPECT_EQ(spec.second.tokens, plain.second.tokens);
  ASSERT_TRUE(spec.second.draft);
  EXPECT_GT(spec.second.draft->verify_steps, 0);
}

// The DFlash drafter reads hidden states, which cached pages do not keep; its own pages keep the context it
// fused, under the same prefix keys, so a second request with a shared prefix takes it from both caches and
// prefills only the rest, and its output stays plain decoding's with the same cache state.
TEST(EngineSpeculation, DrafterKeepsThePrefixCache) {
  SAKER_REQUIRE_MINI();
  auto [model, dw] = load_mini_with_drafter();
  ASSERT_TRUE(model && dw);
  const PrefixPairRun plain = run_prefix_pair(*model);
  auto shared = spec::DFlashDrafter::create(dw, 1024 + dw->config.block_size, OpsOptions{}, EngineOptions{}.max_seqs);
  ASSERT_TRUE(shared.ok()) << shared.status().to_string();
  std::shared_ptr<spec::DFlashDrafter> drafter = std::move(shared).value();
  const PrefixPairRun spec = run_prefix_pair(
      *model, factory_of<spec::DFlashProposer>([drafter] { return spec::DFlashProposer::create(drafter, 0); }));
  EXPECT_GE(spec.hit_tokens, 384) << "the shared 400-token prefix should come from the cache";
  EXPECT_EQ(spec.hit_tokens, plain.hit_tokens);
  EXPECT_GE(drafter->stats().cached_positions, spec.hit_tokens) << "the drafter adopted the prefix the engine took";
  EXPECT_EQ(spec.second.tokens, plain.second.tokens);
  ASSERT_TRUE(spec.second.draft);
  EXPECT_GT(spec.second.draft->verify_steps, 0);
  EXPECT_GT(spec.second.draft->mean_accepted_length(), 1.2) << "drafts from adopted context were accepted";
  // A first request that only reads its prompt drafts nothing, yet its fused context is kept (the engine commits
  // it after every step).
  auto fresh = spec::DFlashDrafter::create(dw, 1024 + dw->config.block_size, OpsOptions{}, EngineOptions{}.max_seqs);
  ASSERT_TRUE(fresh.ok()) << fresh.status().to_string();
  std::shared_ptr<spec::DFlashDrafter> second_drafter = std::move(fresh).value();
  const PrefixPairRun plain_pass = run_prefix_pair(*model, nullptr, 0);
  const PrefixPairRun spec_pass = run_prefix_pair(
      *model,
      factory_of<spec::DFlashProposer>([second_drafter] { return spec::DFlashProposer::create(second_drafter, 0); }),
      0);
  EXPECT_GE(spec_pass.hit_tokens, 384) << "the prompt pass's context should be cached";
  EXPECT_EQ(spec_pass.second.tokens, plain_pass.second.tokens);
}

// A conversation's next turn takes the previous answer's pages from the prefix cache. With a drafter tree,
// accepted rows that left the chain were moved into those pages at the end of their step (the pages join the
// cache after the move), so the next turn reads what plain decoding wrote and gives its tokens.
TEST(EngineSpeculation, TreeMovedRowsServeTheNextTurnFromTheCache) {
  SAKER_REQUIRE_MINI();
  auto [model, dw] = load_mini_with_drafter();
  ASSERT_TRUE(model && dw);
  const std::vector<int32_t> prompt = heldout_prompts()[1];
  struct Turns {
    GenerateResult first, second;
    EngineStats stats;
  };
  auto converse = [&](ProposerFactory proposer) {
    EngineOptions eo;
    eo.n_ctx = 1024;
    eo.prefill_chunk = 128;
    eo.proposer = std::move(proposer);
    Turns t;
    auto engine = make_engine(*model, eo);
    if (!engine) return t;
    auto first = engine->generate(prompt, greedy_options(160));
    EXPECT_TRUE(first.ok()) << first.status().to_string();
    if (!first.ok()) return t;
    t.first = *first;
    std::vector<int32_t> next = prompt;  // the answer, then the opening of the prompt as the user's next turn
    next.insert(next.end(), t.first.tokens.begin(), t.first.tokens.end());
    next.insert(next.end(), prompt.begin(), prompt.begin() + 8);
    auto second = engine->generate(next, greedy_options(48));
    EXPECT_TRUE(second.ok()) << second.status().to_string();
    if (second.ok()) t.second = *second;
    t.stats = engine->stats();
    return t;
  };
  const Turns plain = converse(nullptr);
  auto shared = spec::DFlashDrafter::create(dw, 1024 + dw->config.block_size, OpsOptions{}, EngineOptions{}.max_seqs);
  ASSERT_TRUE(shared.ok()) << shared.status().to_string();
  std::shared_ptr<spec::DFlashDrafter> drafter = std::move(shared).value();
  const Turns tree =
      converse(factory_of<spec::DFlashProposer>([drafter] { return spec::DFlashProposer::create(drafter, 12); }));
  EXPECT_EQ(tree.first.tokens, plain.first.tokens);
  EXPECT_GT(tree.stats.moved_draft_rows, 0) << "no accepted row left the chain: the test moves nothing";
  EXPECT_GE(tree.stats.pool.hit_tokens, static_cast<int64_t>(prompt.size() + 128))
      << "the answer's pages should come from the cache";
  EXPECT_EQ(tree.stats.pool.hit_tokens, plain.stats.pool.hit_tokens);
  EXPECT_EQ(tree.second.tokens, plain.second.tokens);
}

// A running request cancelled in a step gives its drafter slot back before that step admits the next: with one
// slot, the next request (sharing the prefix) still adopts the cached context and takes its prefix from the
// engine's cache.
TEST(EngineSpeculation, ACancelledRequestsDrafterSlotServesTheNextAdmission) {
  SAKER_REQUIRE_MINI();
  auto [model, dw] = load_mini_with_drafter();
  ASSERT_TRUE(model && dw);
  auto one = spec::DFlashDrafter::create(dw, 1024 + dw->config.block_size, OpsOptions{}, 1);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  std::shared_ptr<spec::DFlashDrafter> drafter = std::move(one).value();
  EngineOptions eo;
  eo.max_seqs = 1;
  eo.n_ctx = 1024;
  eo.prefill_chunk = 128;
  eo.proposer = factory_of<spec::DFlashProposer>([drafter] { return spec::DFlashProposer::create(drafter, 0); });
  auto engine = make_engine(*model, eo);
  ASSERT_TRUE(engine);
  const auto [first, second] = testing::shared_prefix_pair(400);
  std::atomic<bool> cancel_first{false};
  GenerateOptions a = greedy_options(400);
  a.cancel = &cancel_first;
  Outcome got_a, got_b;
  engine->submit(first, a, nullptr, [&](Result<GenerateResult> r) {
    ++got_a.done_calls;
    got_a.result = std::move(r);
  });
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(engine->step().ok());  // its prompt and a few drafted steps
  ASSERT_EQ(got_a.done_calls, 0);
  engine->submit(second, greedy_options(16), nullptr, [&](Result<GenerateResult> r) {
    ++got_b.done_calls;
    got_b.result = std::move(r);
  });
  cancel_first.store(true);
  for (int i = 0; i < 200 && got_b.done_calls == 0; ++i) ASSERT_TRUE(engine->step().ok());
  ASSERT_EQ(got_a.done_calls, 1);
  ASSERT_EQ(got_b.done_calls, 1);
  ASSERT_TRUE(got_b.result.ok()) << got_b.result.status().to_string();
  EXPECT_GE(engine->stats().pool.hit_tokens, 384) << "the next request took its prefix from the caches";
}

// A draft model keeps its own KV pages under the same prefix keys: a second request sharing a prefix feeds the
// draft model only what is new, and its output stays plain decoding's with the same cache state.
TEST(EngineSpeculation, DraftModelKeepsItsPrefixCache) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  auto draft = load_mini(OpsOptions{});
  ASSERT_TRUE(model && draft);
  const PrefixPairRun plain = run_prefix_pair(*model);
  auto shared = spec::DraftModelBatch::create(*draft, EngineOptions{}.max_seqs, 1024);
  ASSERT_TRUE(shared.ok()) << shared.status().to_string();
  std::shared_ptr<spec::DraftModelBatch> batch = *shared;
  const PrefixPairRun spec = run_prefix_pair(
      *model, factory_of<spec::DraftModelProposer>([batch] { return spec::DraftModelProposer::create(batch, 6); }));
  EXPECT_EQ(spec.second.tokens, plain.second.tokens);
  ASSERT_TRUE(spec.second.draft);
  EXPECT_GT(spec.second.draft->mean_accepted_length(), 6.0) << "the draft is the target: every draft is accepted";
  EXPECT_GE(batch->stats().cached_positions, 384) << "the shared 400-token prefix should come from the draft cache";
}

}  // namespace
}  // namespace saker
