#pragma once
// What the engine tests on saker-mini share: its held-out prompts, request options, and running requests alone
// (one sequence at a time) or all at once on one engine, stepped on the test's thread with validate() after
// every step.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "saker_mini.h"

namespace saker::testing {

inline std::vector<std::vector<int32_t>> heldout_prompts() {
  std::vector<std::vector<int32_t>> out;
  for (const auto& p : read_json(mini_dir() / "heldout_prompts.json")) out.push_back(p.at("ids"));
  return out;
}

inline GenerateOptions greedy_options(int32_t n) {
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

inline std::unique_ptr<Engine> make_engine(Model& model, EngineOptions o) {
  auto e = Engine::create(model, nullptr, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// Each request alone: an engine that runs one sequence at a time.
inline std::vector<GenerateResult> run_alone(Model& model, const std::vector<std::vector<int32_t>>& prompts,
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
inline std::vector<Outcome> run_batched(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
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

// Two prompts that share their first n_shared tokens (held-out prompts run together) and then go on with 20
// and 30 tokens of two different prompts: for the prefix cache.
struct SharedPrefixPair {
  std::vector<int32_t> first, second;
};
inline SharedPrefixPair shared_prefix_pair(size_t n_shared) {
  auto prompts = heldout_prompts();
  std::vector<int32_t> shared;
  for (const auto& p : prompts) {
    shared.insert(shared.end(), p.begin(), p.end());
    if (shared.size() > n_shared) break;
  }
  shared.resize(n_shared);
  SharedPrefixPair pair{shared, shared};
  pair.first.insert(pair.first.end(), prompts[0].begin(), prompts[0].begin() + 20);
  pair.second.insert(pair.second.end(), prompts[1].begin(), prompts[1].begin() + 30);
  return pair;
}

}  // namespace saker::testing
