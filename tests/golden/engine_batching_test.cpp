// The batched engine on saker-mini (a real trained model), CPU backend (speculation: engine_speculation_test.cpp):
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
#include "engine_test_util.h"
#include "saker_mini.h"

namespace saker {
namespace {

using testing::greedy_options;
using testing::heldout_prompts;
using testing::load_mini;
using testing::make_engine;
using testing::Outcome;
using testing::run_alone;
using testing::run_batched;

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
  const auto [first, second] = testing::shared_prefix_pair(600);
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
