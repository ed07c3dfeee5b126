// The batched engine on saker-mini (a real trained model), CPU backend:
//   * each request's greedy output under concurrency equals its output alone, bit for bit (default kernels:
//     BLAS prefill chunks beside integer-path decode rows);
//   * a scheduler fuzz (random arrivals, cancels, lengths, sampling, a pool small enough to preempt) with
//     validate() after every step: nothing lost, every request ends once, outputs equal their lone runs;
//   * the prefix cache: a request sharing a long prefix with an earlier one reuses its pages and sees the
//     same logits (logprobs bit for bit) as a cold run.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/engine.h"
#include "spec/dflash_proposer.h"
#include "spec/ngram_proposer.h"
#include "spec/draft_model_proposer.h"
#include "spec/chained_proposer.h"
#include "saker_mini.h"

namespace saker {
namespace {

using testing::load_mini;
using testing::mini_dir;
using testing::read_json;

std::vector<std::vector<int32_t>> heldout_prompts() {
  std::vector<std::vector<int32_t>> out;
  for (const auto& p : read_json(mini_dir() / "heldout_prompts.json")) out.push_back(p.at("ids"));
  return out;
}

GenerateOptions greedy_options(int32_t n) {
  GenerateOptions o;
  o.max_tokens = n;
  o.ignore_eos = true;
  o.sampling.temperature = 0.0f;
  return o;
}

struct Outcome {
  int done_calls = 0;
  Result<GenerateResult> result = make_error(StatusCode::kInternal, "not finished");
};

std::unique_ptr<Engine> make_engine(Model& model, EngineOptions o) {
  auto e = Engine::create(model, nullptr, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// Each request alone: an engine that runs one sequence at a time.
std::vector<GenerateResult> run_alone(Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                      const std::vector<GenerateOptions>& opts, EngineOptions eo) {
  eo.max_seqs = 1;
  eo.kv_tokens = 0;
  auto engine = make_engine(model, eo);
  std::vector<GenerateResult> out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto r = engine->generate(prompts[i], opts[i]);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    out.push_back(r.ok() ? *r : GenerateResult{});
  }
  return out;
}

// Submits every request at once and steps the engine on this thread until it is idle, validating after each
// step; *steps receives the number of steps that did work.
std::vector<Outcome> run_batched(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                 const std::vector<GenerateOptions>& opts, int64_t* steps = nullptr) {
  std::vector<Outcome> got(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    engine.submit(prompts[i], opts[i], nullptr, [&got, i](Result<GenerateResult> r) {
      ++got[i].done_calls;
      got[i].result = std::move(r);
    });
  }
  int64_t n = 0;
  for (;;) {
    auto r = engine.step();
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    const Status v = engine.validate();
    EXPECT_TRUE(v.ok()) << v.to_string();
    if (!r.ok() || !v.ok() || !*r) break;
    ++n;
  }
  if (steps) *steps = n;
  return got;
}

void concurrent_equals_alone(const OpsOptions& ops, const char* what, size_t n_requests) {
  auto model = load_mini(ops);
  ASSERT_TRUE(model);
  auto prompts = heldout_prompts();
  prompts.resize(n_requests);
  std::vector<GenerateOptions> opts;
  for (size_t i = 0; i < prompts.size(); ++i) opts.push_back(greedy_options(24 + 4 * static_cast<int32_t>(i % 5)));
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 48;  // prompts of ~60-200 tokens: several chunks each, mixed with other sequences' decodes
  const auto alone = run_alone(*model, prompts, opts, eo);

  eo.max_seqs = 8;
  eo.step_tokens = 120;
  auto engine = make_engine(*model, eo);
  int64_t steps = 0;
  const std::vector<Outcome> got = run_batched(*engine, prompts, opts, &steps);
  const EngineStats st = engine->stats();
  EXPECT_LT(steps, static_cast<int64_t>(n_requests) * 30) << "sequences were not batched";
  EXPECT_GT(st.step_tokens / std::max<int64_t>(1, st.steps), 4) << "steps carried too few tokens";
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(got[i].done_calls, 1) << "request " << i;
    ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
    EXPECT_EQ(got[i].result->tokens, alone[i].tokens) << what << ": request " << i << " differs from its lone run";
  }
  std::printf("engine (%s): %zu requests in %lld steps, %.1f tokens per step, all identical to their lone runs\n",
              what, prompts.size(), static_cast<long long>(st.steps),
              static_cast<double>(st.step_tokens) / static_cast<double>(st.steps));
}

TEST(EngineBatching, ConcurrentGreedyEqualsAloneDefaultKernels) {
  SAKER_REQUIRE_MINI();
  concurrent_equals_alone(OpsOptions{}, "default kernels", 12);
}

TEST(EngineBatching, ConcurrentGreedyEqualsAloneReferenceOps) {
  SAKER_REQUIRE_MINI();
  OpsOptions ops;
  ops.fast_matmul = false;
  ops.fast_attention = false;
  concurrent_equals_alone(ops, "reference ops", 5);
}

// Random arrivals, cancels (queued and running), lengths, sampled and greedy requests, stop strings off, and a
// pool of one context for up to six sequences (preemption by recompute). BLAS is off so that a recomputed
// sequence's K/V equal what its decode steps wrote: every finished request must then equal its lone run.
TEST(EngineBatching, SchedulerFuzzValidatesEveryStepAndLosesNothing) {
  SAKER_REQUIRE_MINI();
  OpsOptions ops;
  ops.matmul.blas = false;
  auto model = load_mini(ops);
  ASSERT_TRUE(model);
  const auto pool_prompts = heldout_prompts();
  int64_t total_preemptions = 0;
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    const int n_req = 18;
    std::vector<std::vector<int32_t>> prompts;
    std::vector<GenerateOptions> opts;
    for (int i = 0; i < n_req; ++i) {
      auto p = pool_prompts[rng() % pool_prompts.size()];
      p.resize(std::max<size_t>(1, std::min<size_t>(p.size(), 1 + rng() % 160)));
      prompts.push_back(p);
      GenerateOptions o = greedy_options(1 + static_cast<int32_t>(rng() % 48));
      if (rng() % 3 == 0) {  // sampled: the sequence's own seeded RNG must make it reproducible
        o.sampling.temperature = 0.9f;
        o.sampling.top_p = 0.9f;
        o.sampling.seed = rng();
      }
      if (rng() % 5 == 0) o.top_logprobs = 2;
      if (rng() % 9 == 0) o.max_tokens = 0;
      opts.push_back(o);
    }
    EngineOptions eo;
    eo.n_ctx = 256;
    eo.prefill_chunk = 32;
    const auto alone = run_alone(*model, prompts, opts, eo);

    eo.max_seqs = 6;
    eo.kv_tokens = eo.n_ctx;
    eo.kv_block = 8;
    eo.step_tokens = 64;
    auto engine = make_engine(*model, eo);
    std::vector<Outcome> got(n_req);
    std::vector<std::unique_ptr<std::atomic<bool>>> cancel(n_req);
    std::vector<bool> cancel_at_some_point(n_req);
    int next = 0;
    int64_t steps = 0;
    while (true) {
      // Arrivals: zero to three new requests before each step.
      for (int k = static_cast<int>(rng() % 4); k > 0 && next < n_req; --k, ++next) {
        cancel[next] = std::make_unique<std::atomic<bool>>(false);
        GenerateOptions o = opts[next];
        o.cancel = cancel[next].get();
        cancel_at_some_point[next] = rng() % 6 == 0;
        engine->submit(prompts[next], o, nullptr, [&got, i = next](Result<GenerateResult> r) {
          ++got[i].done_calls;
          got[i].result = std::move(r);
        });
      }
      for (int i = 0; i < next; ++i) {
        if (cancel_at_some_point[i] && got[i].done_calls == 0 && rng() % 8 == 0) cancel[i]->store(true);
      }
      auto r = engine->step();
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      const Status v = engine->validate();
      ASSERT_TRUE(v.ok()) << "seed " << seed << " step " << steps << ": " << v.to_string();
      ++steps;
      if (!*r && next == n_req) break;
      ASSERT_LT(steps, 20000) << "the engine does not finish";
    }
    int n_cancelled = 0;
    for (int i = 0; i < n_req; ++i) {
      ASSERT_EQ(got[i].done_calls, 1) << "seed " << seed << " request " << i;
      ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
      const GenerateResult& g = *got[i].result;
      if (g.finish == FinishReason::kCancelled) {
        ++n_cancelled;
        EXPECT_TRUE(cancel[i]->load());
        // What it had produced before the cancel is a prefix of its lone run.
        ASSERT_LE(g.tokens.size(), alone[i].tokens.size());
        EXPECT_TRUE(std::equal(g.tokens.begin(), g.tokens.end(), alone[i].tokens.begin()));
        continue;
      }
      EXPECT_EQ(g.tokens, alone[i].tokens) << "seed " << seed << " request " << i;
      EXPECT_EQ(g.finish, alone[i].finish);
    }
    const EngineStats st = engine->stats();
    EXPECT_EQ(st.running, 0);
    EXPECT_EQ(st.waiting, 0);
    EXPECT_EQ(st.pool.pages_free + st.pool.pages_cached, st.pool.pages_total) << "pages leaked";
    total_preemptions += st.preemptions;
    std::printf("fuzz seed %llu: %d requests, %d cancelled, %lld preemptions, %lld steps\n",
                static_cast<unsigned long long>(seed), n_req, n_cancelled, static_cast<long long>(st.preemptions),
                static_cast<long long>(st.steps));
  }
  EXPECT_GT(total_preemptions, 0) << "the fuzz was meant to run the pool out of pages";
}

// Long requests in a pool that holds barely one context: decode tokens run out of pages, the newest sequence
// is preempted and recomputed later; every request still completes in full.
TEST(EngineBatching, PreemptionUnderPageExhaustionLosesNothing) {
  SAKER_REQUIRE_MINI();
  OpsOptions ops;
  ops.matmul.blas = false;
  auto model = load_mini(ops);
  ASSERT_TRUE(model);
  auto prompts = heldout_prompts();
  prompts.resize(4);
  std::vector<GenerateOptions> opts(prompts.size(), greedy_options(96));
  EngineOptions eo;
  eo.n_ctx = 320;
  eo.prefill_chunk = 64;
  const auto alone = run_alone(*model, prompts, opts, eo);
  eo.max_seqs = 4;
  eo.kv_tokens = eo.n_ctx;
  eo.prefix_cache = false;  // recompute from scratch: the hardest case
  auto engine = make_engine(*model, eo);
  const std::vector<Outcome> got = run_batched(*engine, prompts, opts);
  EXPECT_GT(engine->stats().preemptions, 0) << "the pool was meant to run out";
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(got[i].done_calls, 1);
    ASSERT_TRUE(got[i].result.ok());
    EXPECT_EQ(got[i].result->tokens.size(), 96u);
    EXPECT_EQ(got[i].result->tokens, alone[i].tokens) << "request " << i;
  }
  std::printf("preemption: %lld preemptions, every request complete and identical to its lone run\n",
              static_cast<long long>(engine->stats().preemptions));
}

// A second request sharing a long prefix with the first reuses its pages and sees the same logits (every
// token's logprob and top-5 alternatives, bit for bit) as a cold engine. Default kernels.
TEST(EngineBatching, PrefixCacheHitEqualsColdRun) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  auto prompts = heldout_prompts();
  std::vector<int32_t> shared;
  for (const auto& p : prompts) {
    shared.insert(shared.end(), p.begin(), p.end());
    if (shared.size() > 600) break;
  }
  shared.resize(600);
  std::vector<int32_t> first = shared, second = shared;
  first.insert(first.end(), prompts[0].begin(), prompts[0].begin() + 20);
  second.insert(second.end(), prompts[1].begin(), prompts[1].begin() + 30);
  GenerateOptions o = greedy_options(16);
  o.top_logprobs = 5;
  std::vector<GeneratedToken> warm_tokens, cold_tokens;
  EngineOptions eo;
  eo.n_ctx = 1024;
  eo.prefill_chunk = 256;

  auto engine = make_engine(*model, eo);
  ASSERT_TRUE(engine->generate(first, o).ok());
  GenerateOptions ow = o;
  ow.on_token = [&](const GeneratedToken& t) { warm_tokens.push_back(t); return true; };
  auto warm = engine->generate(second, ow);
  ASSERT_TRUE(warm.ok());
  const KvPoolStats st = engine->stats().pool;
  EXPECT_GE(st.hit_tokens, 592) << "the shared 600-token prefix should come from the cache (whole pages)";

  auto cold_engine = make_engine(*model, eo);
  GenerateOptions oc = o;
  oc.on_token = [&](const GeneratedToken& t) { cold_tokens.push_back(t); return true; };
  auto cold = cold_engine->generate(second, oc);
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(cold_engine->stats().pool.hit_tokens, 0);
  ASSERT_EQ(warm->tokens, cold->tokens);
  ASSERT_EQ(warm_tokens.size(), cold_tokens.size());
  for (size_t i = 0; i < warm_tokens.size(); ++i) {
    EXPECT_EQ(warm_tokens[i].logprob, cold_tokens[i].logprob) << "token " << i;
    ASSERT_EQ(warm_tokens[i].top.size(), cold_tokens[i].top.size());
    for (size_t k = 0; k < warm_tokens[i].top.size(); ++k) {
      EXPECT_EQ(warm_tokens[i].top[k].id, cold_tokens[i].top[k].id);
      EXPECT_EQ(warm_tokens[i].top[k].logprob, cold_tokens[i].top[k].logprob);
    }
  }
  std::printf("prefix cache: %lld of %lld looked-up tokens served from cached pages; warm == cold logprobs\n",
              static_cast<long long>(st.hit_tokens), static_cast<long long>(st.lookup_tokens));
}

TEST(EngineBatching, BadRequestsFailCleanly) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  EngineOptions eo;
  eo.n_ctx = 64;
  auto engine = make_engine(*model, eo);
  std::vector<int32_t> too_long(64, 5);
  auto r = engine->generate(too_long, greedy_options(4));
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  auto bad = engine->generate(std::vector<int32_t>{1, -3}, greedy_options(4));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  auto empty = engine->generate(std::vector<int32_t>{}, greedy_options(4));
  EXPECT_FALSE(empty.ok());
  EngineOptions tiny = eo;
  tiny.kv_tokens = 16;
  EXPECT_FALSE(Engine::create(*model, nullptr, tiny).ok()) << "a pool smaller than one context must be refused";
  auto ok = engine->generate(std::vector<int32_t>{1, 2, 3}, greedy_options(4));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->tokens.size(), 4u);
}

}  // namespace
}  // namespace saker

namespace saker {
namespace {

// Speculative decoding inside the engine step: 8 sequences drafting with saker-mini's DFlash drafter (chain and
// tree), batched together, each equal to plain greedy decoding alone; with sampling too (same seeds).
TEST(EngineBatching, SpeculativeSequencesInOneStepEqualPlainDecoding) {
  SAKER_REQUIRE_MINI();
  auto weights = testing::load_mini_weights();
  ASSERT_TRUE(weights);
  auto model = load_mini(OpsOptions{}, weights);
  ASSERT_TRUE(model);
  auto drafter = spec::DFlashWeights::load((mini_dir() / "drafter").string(), weights);
  ASSERT_TRUE(drafter.ok()) << drafter.status().to_string();
  std::shared_ptr<const spec::DFlashWeights> dw = std::move(drafter).value();
  auto prompts = heldout_prompts();
  prompts.resize(8);
  std::vector<GenerateOptions> opts;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions o = greedy_options(48);
    if (i % 4 == 3) {
      o.sampling.temperature = 0.8f;
      o.sampling.top_k = 40;
      o.sampling.seed = 100 + i;
    }
    opts.push_back(o);
  }
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 64;
  const auto plain = run_alone(*model, prompts, opts, eo);
  for (int32_t tree : {0, 12}) {
    EngineOptions so = eo;
    so.max_seqs = 8;
    so.step_tokens = 8 * 32;
    so.proposer = [dw, tree]() -> Result<std::unique_ptr<Proposer>> {
      SAKER_ASSIGN_OR_RETURN(auto p, spec::DFlashProposer::create(dw, 512, tree, OpsOptions{}));
      return std::unique_ptr<Proposer>(std::move(p));
    };
    auto engine = make_engine(*model, so);
    const std::vector<Outcome> got = run_batched(*engine, prompts, opts);
    DraftStats total;
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_EQ(got[i].done_calls, 1);
      ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
      EXPECT_EQ(got[i].result->tokens, plain[i].tokens) << "tree " << tree << " request " << i;
      ASSERT_TRUE(got[i].result->draft);
      total.verify_steps += got[i].result->draft->verify_steps;
      total.committed_tokens += got[i].result->draft->committed_tokens;
    }
    EXPECT_GT(total.mean_accepted_length(), 1.5) << "the drafter's tokens were not accepted";
    std::printf("engine speculative (%s): 8 batched sequences identical to plain decoding; %.3f tokens per verify "
                "step over %lld steps, %lld engine steps\n",
                tree ? "tree of 12" : "chain", total.mean_accepted_length(),
                static_cast<long long>(total.verify_steps), static_cast<long long>(engine->stats().steps));
  }
}

}  // namespace
}  // namespace saker

namespace saker {
namespace {

ProposerFactory ngram_factory() {
  return []() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(auto p, spec::NgramProposer::create(spec::NgramOptions{}));
    return std::unique_ptr<Proposer>(std::move(p));
  };
}

// Prompt-lookup speculation (n-gram) inside the engine step: 8 sequences batched, greedy and sampled, each
// equal to plain decoding alone, and some drafts accepted.
TEST(EngineBatching, NgramSpeculationEqualsPlainDecoding) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  auto prompts = heldout_prompts();
  prompts.resize(8);
  std::vector<GenerateOptions> opts;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions o = greedy_options(64);
    if (i % 4 == 3) {
      o.sampling.temperature = 0.8f;
      o.sampling.top_k = 40;
      o.sampling.seed = 200 + i;
    }
    opts.push_back(o);
  }
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 64;
  const auto plain = run_alone(*model, prompts, opts, eo);
  EngineOptions so = eo;
  so.max_seqs = 8;
  so.step_tokens = 8 * 16;
  so.proposer = ngram_factory();
  auto engine = make_engine(*model, so);
  const std::vector<Outcome> got = run_batched(*engine, prompts, opts);
  DraftStats total;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(got[i].done_calls, 1);
    ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
    EXPECT_EQ(got[i].result->tokens, plain[i].tokens) << "request " << i;
    ASSERT_TRUE(got[i].result->draft);
    total.verify_steps += got[i].result->draft->verify_steps;
    total.committed_tokens += got[i].result->draft->committed_tokens;
  }
  EXPECT_GT(total.verify_steps, 0) << "no n-gram draft was proposed";
  EXPECT_GT(total.committed_tokens, total.verify_steps) << "no n-gram draft token was accepted";
  std::printf("engine n-gram speculation: 8 batched sequences identical to plain decoding; %.3f tokens per verify "
              "step over %lld verify steps, %lld engine steps\n",
              total.mean_accepted_length(), static_cast<long long>(total.verify_steps),
              static_cast<long long>(engine->stats().steps));
}

// The n-gram proposer reads no hidden states, so a speculating request still takes its shared prefix from the
// cache, and its output stays plain decoding's with the same cache state. (The reference is plain decoding
// after the same earlier request: with BLAS prefill, a prompt prefilled in other chunks may part at a near-tie,
// docs/internals.md; that is the prefix cache's property, tested in PrefixCacheHitEqualsColdRun.)
TEST(EngineBatching, NgramSpeculationUsesThePrefixCache) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  auto prompts = heldout_prompts();
  std::vector<int32_t> shared;
  for (const auto& p : prompts) {
    shared.insert(shared.end(), p.begin(), p.end());
    if (shared.size() > 400) break;
  }
  shared.resize(400);
  std::vector<int32_t> first = shared, second = shared;
  first.insert(first.end(), prompts[0].begin(), prompts[0].begin() + 20);
  second.insert(second.end(), prompts[1].begin(), prompts[1].begin() + 30);
  const GenerateOptions o = greedy_options(48);
  EngineOptions eo;
  eo.n_ctx = 1024;
  eo.prefill_chunk = 128;
  auto run_pair = [&](const EngineOptions& opts, int64_t* hits) {
    auto engine = make_engine(*model, opts);
    EXPECT_TRUE(engine->generate(first, o).ok());
    auto r = engine->generate(second, o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    *hits = engine->stats().pool.hit_tokens;
    return r.ok() ? *r : GenerateResult{};
  };
  int64_t plain_hits = 0, spec_hits = 0;
  const GenerateResult plain = run_pair(eo, &plain_hits);
  EngineOptions so = eo;
  so.proposer = ngram_factory();
  const GenerateResult spec = run_pair(so, &spec_hits);
  EXPECT_GE(spec_hits, 384) << "the shared 400-token prefix should come from the cache";
  EXPECT_EQ(spec_hits, plain_hits);
  EXPECT_EQ(spec.tokens, plain.tokens);
  ASSERT_TRUE(spec.draft);
  EXPECT_GT(spec.draft->verify_steps, 0);
}

}  // namespace
}  // namespace saker

namespace saker {
namespace {

// A draft model inside the engine step: saker-mini drafts for itself (a second instance of the model with its
// own KV cache per sequence). Greedy requests accept every draft; sampled ones reject often, so the draft
// cache's rollback runs; every request equals plain decoding alone.
TEST(EngineBatching, DraftModelSpeculationEqualsPlainDecoding) {
  SAKER_REQUIRE_MINI();
  auto model = load_mini(OpsOptions{});
  auto draft = load_mini(OpsOptions{});
  ASSERT_TRUE(model && draft);
  auto prompts = heldout_prompts();
  prompts.resize(6);
  std::vector<GenerateOptions> opts;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions o = greedy_options(40);
    if (i % 2 == 1) {
      o.sampling.temperature = 1.0f;
      o.sampling.seed = 300 + i;
    }
    opts.push_back(o);
  }
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 64;
  const auto plain = run_alone(*model, prompts, opts, eo);
  EngineOptions so = eo;
  so.max_seqs = 6;
  so.step_tokens = 6 * 16;
  Model* dm = draft.get();
  so.proposer = [dm]() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(auto p, spec::DraftModelProposer::create(*dm, 512, 6));
    return std::unique_ptr<Proposer>(std::move(p));
  };
  auto engine = make_engine(*model, so);
  const std::vector<Outcome> got = run_batched(*engine, prompts, opts);
  DraftStats greedy, sampled;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(got[i].done_calls, 1);
    ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
    EXPECT_EQ(got[i].result->tokens, plain[i].tokens) << "request " << i;
    ASSERT_TRUE(got[i].result->draft);
    DraftStats& d = i % 2 == 1 ? sampled : greedy;
    d.verify_steps += got[i].result->draft->verify_steps;
    d.committed_tokens += got[i].result->draft->committed_tokens;
  }
  // Greedy: the draft is the target, so each step commits its 6 drafts and the target's next token (the last
  // step of a request may have less room).
  EXPECT_GT(greedy.mean_accepted_length(), 6.0);
  EXPECT_LT(sampled.mean_accepted_length(), greedy.mean_accepted_length());
  std::printf("engine draft-model speculation: 6 batched sequences identical to plain decoding; greedy %.3f, "
              "sampled %.3f tokens per verify step\n",
              greedy.mean_accepted_length(), sampled.mean_accepted_length());
}

}  // namespace
}  // namespace saker

namespace saker {
namespace {

// Prompt lookup chained to the DFlash drafter (the drafter reads taps; the chain forwards them, and the
// drafter keeps its context on steps where the n-gram drafted): batched, greedy and sampled, equal to plain.
TEST(EngineBatching, ChainedNgramAndDrafterEqualPlainDecoding) {
  SAKER_REQUIRE_MINI();
  auto weights = testing::load_mini_weights();
  ASSERT_TRUE(weights);
  auto model = load_mini(OpsOptions{}, weights);
  ASSERT_TRUE(model);
  auto drafter = spec::DFlashWeights::load((mini_dir() / "drafter").string(), weights);
  ASSERT_TRUE(drafter.ok()) << drafter.status().to_string();
  std::shared_ptr<const spec::DFlashWeights> dw = std::move(drafter).value();
  auto prompts = heldout_prompts();
  prompts.resize(6);
  std::vector<GenerateOptions> opts;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions o = greedy_options(48);
    if (i % 3 == 2) {
      o.sampling.temperature = 0.8f;
      o.sampling.seed = 400 + i;
    }
    opts.push_back(o);
  }
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 64;
  const auto plain = run_alone(*model, prompts, opts, eo);
  EngineOptions so = eo;
  so.max_seqs = 6;
  so.step_tokens = 6 * 20;
  so.proposer = [dw]() -> Result<std::unique_ptr<Proposer>> {
    std::vector<std::unique_ptr<Proposer>> chain;
    SAKER_ASSIGN_OR_RETURN(auto ngram, spec::NgramProposer::create(spec::NgramOptions{}));
    SAKER_ASSIGN_OR_RETURN(auto dflash, spec::DFlashProposer::create(dw, 512, 0, OpsOptions{}));
    chain.push_back(std::move(ngram));
    chain.push_back(std::move(dflash));
    SAKER_ASSIGN_OR_RETURN(auto p, spec::ChainedProposer::create(std::move(chain)));
    return std::unique_ptr<Proposer>(std::move(p));
  };
  auto engine = make_engine(*model, so);
  const std::vector<Outcome> got = run_batched(*engine, prompts, opts);
  DraftStats total;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(got[i].done_calls, 1);
    ASSERT_TRUE(got[i].result.ok()) << got[i].result.status().to_string();
    EXPECT_EQ(got[i].result->tokens, plain[i].tokens) << "request " << i;
    total.verify_steps += got[i].result->draft->verify_steps;
    total.committed_tokens += got[i].result->draft->committed_tokens;
  }
  EXPECT_GT(total.mean_accepted_length(), 1.5);
  std::printf("engine n-gram then drafter: 6 batched sequences identical to plain decoding; %.3f tokens per verify "
              "step over %lld verify steps\n",
              total.mean_accepted_length(), static_cast<long long>(total.verify_steps));
}

TEST(ChainedProposer, RefusesTwoTapReadersAndAnEmptyChain) {
  SAKER_REQUIRE_MINI();
  auto weights = testing::load_mini_weights();
  ASSERT_TRUE(weights);
  auto drafter = spec::DFlashWeights::load((mini_dir() / "drafter").string(), weights);
  ASSERT_TRUE(drafter.ok());
  std::shared_ptr<const spec::DFlashWeights> dw = std::move(drafter).value();
  std::vector<std::unique_ptr<Proposer>> two;
  two.push_back(std::move(spec::DFlashProposer::create(dw, 64, 0, OpsOptions{})).value());
  two.push_back(std::move(spec::DFlashProposer::create(dw, 64, 0, OpsOptions{})).value());
  auto r = spec::ChainedProposer::create(std::move(two));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hidden states"), std::string::npos);
  EXPECT_FALSE(spec::ChainedProposer::create({}).ok());
}

}  // namespace
}  // namespace saker
