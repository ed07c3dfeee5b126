// saker-mini (models/saker-mini, trained by tools/train/recipe.py) on the CPU backend against transformers:
// greedy continuations of the held-out reference prompts (reference.json, computed by the recipe in float32
// with every matrix passed through Q8_0 exactly as `saker convert --type q8_0` stores it).
//
//   * float activations (the portable matmul path): the first 64 tokens of every prompt are identical;
//   * the default integer path, which also rounds the activations to 8-bit blocks: identical on every prompt
//     whose smallest top-2 margin in the reference is at least kNearTie; where a near-tie prompt diverges,
//     saker's own logits at that step must be a near-tie between its token and transformers' token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/generator.h"
#include "models/model.h"
#include "test_paths.h"

namespace saker {
namespace {

constexpr double kNearTie = 0.01;     // reference margins (logits) below this may flip under 8-bit activations
constexpr double kFlipMargin = 0.05;  // a divergence is accepted only where saker's own top-2 gap is this small

struct RefPrompt {
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy_q8_0;
  double min_margin_q8_0 = 0;
};

std::filesystem::path mini_dir() { return testing::source_dir() / "models" / "saker-mini"; }

std::vector<RefPrompt> load_reference(int32_t* n_tokens) {
  std::ifstream f(mini_dir() / "reference.json");
  std::stringstream ss;
  ss << f.rdbuf();
  const auto j = nlohmann::json::parse(ss.str());
  *n_tokens = std::min(64, j.at("new_tokens").get<int32_t>());
  std::vector<RefPrompt> out;
  for (const auto& p : j.at("prompts")) {
    RefPrompt r;
    r.prompt = p.at("prompt_ids").get<std::vector<int32_t>>();
    r.greedy_q8_0 = p.at("greedy_q8_0").get<std::vector<int32_t>>();
    r.greedy_q8_0.resize(std::min<size_t>(r.greedy_q8_0.size(), *n_tokens));
    r.min_margin_q8_0 = p.at("greedy_q8_0_min_margin").get<double>();
    out.push_back(std::move(r));
  }
  return out;
}

std::unique_ptr<Model> load_mini(const OpsOptions& ops) {
  auto w = ModelWeights::open((mini_dir() / "saker-mini-q8_0.gguf").string());
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  if (!w.ok()) return nullptr;
  std::shared_ptr<const ModelWeights> weights = std::move(w).value();
  auto m = create_model(weights, ops);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<int32_t> greedy(Generator& g, const std::vector<int32_t>& prompt, int32_t n) {
  GenerateOptions opt;
  opt.max_tokens = n;
  opt.ignore_eos = true;
  opt.sampling.temperature = 0.0f;
  auto r = g.generate(prompt, opt);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->tokens : std::vector<int32_t>{};
}

int first_divergence(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<int>(i);
  return a.size() == b.size() ? -1 : static_cast<int>(n);
}

#define SAKER_REQUIRE_MINI()                                                                           \
  if (!std::filesystem::exists(mini_dir() / "saker-mini-q8_0.gguf") ||                                 \
      !std::filesystem::exists(mini_dir() / "reference.json"))                                         \
  GTEST_SKIP() << "models/saker-mini is absent (package it with tools/train/package.py): test skipped"

TEST(SakerMini, FloatActivationsMatchTransformersOnEveryPrompt) {
  SAKER_REQUIRE_MINI();
  int32_t n = 0;
  const auto ref = load_reference(&n);
  ASSERT_FALSE(ref.empty());
  OpsOptions ops;
  ops.matmul.simd = false;  // weights dequantised row by row into f32, f32 activations
  auto model = load_mini(ops);
  ASSERT_TRUE(model);
  auto g = Generator::create(*model, nullptr, 256);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  int same = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const auto got = greedy(**g, ref[i].prompt, n);
    const int d = first_divergence(got, ref[i].greedy_q8_0);
    EXPECT_EQ(d, -1) << "prompt " << i << ": first divergence at token " << d << " (reference min margin "
                     << ref[i].min_margin_q8_0 << ")";
    same += d == -1;
  }
  std::printf("saker-mini, f32 activations: %d/%zu prompts identical to transformers (first %d tokens)\n", same,
              ref.size(), n);
}

TEST(SakerMini, DefaultKernelsMatchTransformersBarNearTies) {
  SAKER_REQUIRE_MINI();
  int32_t n = 0;
  const auto ref = load_reference(&n);
  ASSERT_FALSE(ref.empty());
  auto model = load_mini(OpsOptions{});
  ASSERT_TRUE(model);
  auto g = Generator::create(*model, nullptr, 256);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  int same = 0, strict = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const auto& r = ref[i];
    const auto got = greedy(**g, r.prompt, n);
    const int d = first_divergence(got, r.greedy_q8_0);
    same += d == -1;
    if (r.min_margin_q8_0 >= kNearTie) {
      ++strict;
      EXPECT_EQ(d, -1) << "prompt " << i << " (reference min margin " << r.min_margin_q8_0
                       << "): first divergence at token " << d;
      continue;
    }
    if (d < 0) continue;
    ASSERT_LT(static_cast<size_t>(d), std::min(got.size(), r.greedy_q8_0.size())) << "prompt " << i;
    // Same context up to d: saker's (teacher-forced) logits there must nearly tie its token and transformers' token.
    std::vector<int32_t> ctx = r.prompt;
    ctx.insert(ctx.end(), r.greedy_q8_0.begin(), r.greedy_q8_0.begin() + d);
    auto logits = (*g)->prompt_logits(ctx);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    const size_t vocab = logits->size() / ctx.size();
    const float* last = logits->data() + (ctx.size() - 1) * vocab;
    const double gap = std::fabs(double(last[got[d]]) - double(last[r.greedy_q8_0[d]]));
    std::printf("saker-mini prompt %zu: near-tie divergence at token %d (saker %d, transformers %d, gap %.4f)\n", i,
                d, got[d], r.greedy_q8_0[d], gap);
    EXPECT_LT(gap, kFlipMargin) << "prompt " << i << ": divergence at token " << d << " is not a near-tie";
  }
  std::printf("saker-mini, default kernels: %d/%zu prompts identical to transformers (first %d tokens; %d with "
              "reference margin >= %.2f must be)\n", same, ref.size(), n, strict, kNearTie);
}

}  // namespace
}  // namespace saker
