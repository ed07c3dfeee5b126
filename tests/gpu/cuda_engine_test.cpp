// The batched engine on the CUDA backend, on saker-mini: each request's greedy output with 16 sequences per
// step equals its output alone, or parts from it only where the lone run's top two tokens were a near-tie (the
// CUDA matmul kernels round differently at different widths). Every divergence is printed with its margin.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "models/model.h"
#include "ops/cuda_test_util.h"
#include "test_paths.h"

namespace saker {
namespace {

namespace fs = std::filesystem;

constexpr float kNearTie = 0.05f;  // logprob gap of the lone run's top two tokens at a divergence

fs::path mini_dir() { return testing::source_dir() / "models" / "saker-mini"; }

TEST(CudaEngine, ConcurrentGreedyEqualsAloneOrPartsAtANearTie) {
  SAKER_REQUIRE_GPU();
  if (!fs::exists(mini_dir() / "saker-mini-q8_0.gguf")) GTEST_SKIP() << "models/saker-mini is absent";
  auto w = ModelWeights::open((mini_dir() / "saker-mini-q8_0.gguf").string());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  OpsOptions ops;
  ops.device = Device::kCuda;
  auto model = create_model(std::shared_ptr<const ModelWeights>(std::move(w).value()), ops);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  std::vector<std::vector<int32_t>> prompts;
  std::ifstream f(mini_dir() / "heldout_prompts.json");
  for (const auto& p : nlohmann::json::parse(f)) prompts.push_back(p.at("ids"));
  prompts.resize(16);
  const int32_t n_new = 64;

  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 128;
  eo.max_seqs = 1;
  auto alone_engine = Engine::create(**model, nullptr, eo);
  ASSERT_TRUE(alone_engine.ok()) << alone_engine.status().to_string();
  std::vector<std::vector<GeneratedToken>> alone(prompts.size());
  std::vector<std::vector<int32_t>> alone_ids(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions o;
    o.max_tokens = n_new;
    o.ignore_eos = true;
    o.sampling.temperature = 0.0f;
    o.top_logprobs = 2;  // logits on the host: the margins of every step
    o.on_token = [&, i](const GeneratedToken& t) { alone[i].push_back(t); return true; };
    auto r = (*alone_engine)->generate(prompts[i], o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    alone_ids[i] = r->tokens;
  }

  eo.max_seqs = 16;
  auto engine = Engine::create(**model, nullptr, eo);
  ASSERT_TRUE(engine.ok());
  std::vector<Result<GenerateResult>> got(prompts.size(), make_error(StatusCode::kInternal, "not done"));
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions o;
    o.max_tokens = n_new;
    o.ignore_eos = true;
    o.sampling.temperature = 0.0f;  // plain greedy: ids from the device
    (*engine)->submit(prompts[i], o, nullptr, [&got, i](Result<GenerateResult> r) { got[i] = std::move(r); });
  }
  for (;;) {
    auto r = (*engine)->step();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_TRUE((*engine)->validate().ok());
    if (!*r) break;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int identical = 0, near_tie = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().to_string();
    const auto& g = got[i]->tokens;
    ASSERT_EQ(g.size(), alone_ids[i].size());
    size_t k = 0;
    while (k < g.size() && g[k] == alone_ids[i][k]) ++k;
    if (k == g.size()) {
      ++identical;
      continue;
    }
    const auto& top = alone[i][k].top;
    ASSERT_GE(top.size(), 2u);
    const float margin = top[0].logprob - top[1].logprob;
    std::printf("request %zu parts at token %zu: alone %d, batched %d, lone top-2 margin %.4f\n", i, k,
                alone_ids[i][k], g[k], margin);
    EXPECT_LT(margin, kNearTie) << "request " << i << " parts from its lone run at a clear choice";
    EXPECT_TRUE(g[k] == top[0].id || g[k] == top[1].id);
    ++near_tie;
  }
  std::printf("CUDA engine: %d/%zu identical to their lone runs, %d part at a near-tie; 16 x %d tokens in %.0f ms\n",
              identical, prompts.size(), near_tie, n_new, ms);
}

}  // namespace
}  // namespace saker
