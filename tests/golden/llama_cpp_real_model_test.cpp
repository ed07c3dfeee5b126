// saker against llama.cpp on the real small models `saker pull` fetches (SmolLM2-135M-Instruct Q4_1, Gemma 3
// 270M Q4_K_M, Qwen2.5-Coder-0.5B-Instruct Q4_K_M). tests/data/llama_cpp/NAME.json holds what llama.cpp
// computed on the same file (made by tools/llama_cpp_compare/compare.py): greedy continuations of ten chat
// prompts and its top-k log-probabilities at every position of a 2,000-token text. The model file comes from the pull cache; without it the test skips.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "core/env.h"
#include "engine/generator.h"
#include "models/model.h"
#include "test_paths.h"

namespace saker {
namespace {

struct Loaded {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Model> model;
};

class LlamaCppRealModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::ifstream in(testing::project_data_dir() / "llama_cpp" / (GetParam() + ".json"));
    ASSERT_TRUE(in) << "missing reference data for " << GetParam();
    ref_ = nlohmann::json::parse(in);
    const auto file = std::filesystem::path(model_cache_dir()) / "models" / ref_["model"].get<std::string>();
    if (!std::filesystem::exists(file)) {
      GTEST_SKIP() << file.string() << " is absent: run `saker pull " << GetParam() << "` to run this comparison";
    }
    auto w = ModelWeights::open(file.string());
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    m_.weights = std::move(w).value();
    // SAKER_TEST_DEVICE=cuda runs the same comparison on the GPU backend (on a GPU machine).
    OpsOptions ops;
    if (const char* d = std::getenv("SAKER_TEST_DEVICE"); d && std::string(d) == "cuda") ops.device = Device::kCuda;
    auto m = create_model(m_.weights, ops);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    m_.model = std::move(m).value();
  }

  nlohmann::json ref_;
  Loaded m_;
};

std::vector<int32_t> ids_of(const nlohmann::json& a) { return a.get<std::vector<int32_t>>(); }

// Greedy continuations equal llama.cpp's, or part from them only at a near-tie: where they differ, llama.cpp's
// token is within kNearTie (logit units) of saker's choice on saker's own logits. These small quantized models
// are chaotic: a last-bit difference in an activation (llama.cpp's SIMD exp in SiLU, its f16-table GELU)
// flips an int8 code of the quantized activations and moves logits by ~0.1 (docs/models.md). Measured
// largest gap at a parting point: SmolLM2 0.21, Gemma 3 0.38.
constexpr float kNearTie = 0.5f;
TEST_P(LlamaCppRealModel, GreedyContinuationsMatch) {
  const int n_predict = ref_["n_predict"].get<int>();
  int identical = 0, near_ties = 0;
  for (const auto& p : ref_["prompts"]) {
    const std::vector<int32_t> prompt = ids_of(p["prompt_ids"]);
    const std::vector<int32_t> want = ids_of(p["llama_cpp_ids"]);
    auto gen = Generator::create(*m_.model, nullptr, static_cast<int64_t>(prompt.size()) + n_predict + 8);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    GenerateOptions opt;
    opt.max_tokens = static_cast<int32_t>(want.size());  // llama.cpp's length: it stopped at end-of-generation
    opt.sampling.temperature = 0;
    auto r = (*gen)->generate(prompt, opt);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const std::vector<int32_t>& got = r->tokens;
    if (got == want) {
      ++identical;
      continue;
    }
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    ASSERT_LT(i, want.size()) << p["question"] << ": saker stopped early";
    std::vector<int32_t> ctx = prompt;
    ctx.insert(ctx.end(), want.begin(), want.begin() + static_cast<std::ptrdiff_t>(i));
    auto g2 = Generator::create(*m_.model, nullptr, static_cast<int64_t>(ctx.size()) + 8);
    ASSERT_TRUE(g2.ok());
    auto l = (*g2)->prompt_logits(ctx);
    ASSERT_TRUE(l.ok());
    const int64_t V = m_.model->hparams().n_vocab;
    const float* last = l->data() + (ctx.size() - 1) * V;
    const float gap = *std::max_element(last, last + V) - last[want[i]];
    std::printf("near-tie at token %zu of '%s': llama.cpp's choice is %.4f below saker's\n", i,
                p["question"].get<std::string>().c_str(), gap);
    EXPECT_LT(gap, kNearTie) << p["question"] << ": continuations part at token " << i << " without a near-tie";
    ++near_ties;
  }
  std::printf("%s: %d of %zu greedy continuations identical, %d part at a near-tie\n", GetParam().c_str(), identical,
              ref_["prompts"].size(), near_ties);
}

// On a 2,000-token text: KL(llama.cpp || saker) over llama.cpp's top-k tokens plus one bucket for the rest
// (a lower bound of the full KL, close to it when the top-k hold most of the mass), and top-1 agreement.
TEST_P(LlamaCppRealModel, NextTokenDistributionsAgree) {
  const auto& kt = ref_["kl_text"];
  const std::vector<int32_t> ids = ids_of(kt["ids"]);
  auto gen = Generator::create(*m_.model, nullptr, static_cast<int64_t>(ids.size()) + 8);
  ASSERT_TRUE(gen.ok());
  const int64_t V = m_.model->hparams().n_vocab;
  double kl_sum = 0;
  int64_t top1_same = 0;
  const Status st = (*gen)->prompt_logits(ids, 256, [&](int64_t first, std::span<const float> rows) {
    for (int64_t r = 0; r * V < static_cast<int64_t>(rows.size()); ++r) {
      const float* x = rows.data() + r * V;
      const double mx = *std::max_element(x, x + V);
      double z = 0;
      for (int64_t v = 0; v < V; ++v) z += std::exp(x[v] - mx);
      const auto& top = kt["top_k"][first + r];
      const std::vector<int32_t> tid = ids_of(top["ids"]);
      const std::vector<double> tlp = top["logprobs"].get<std::vector<double>>();
      double p_rest = 1, q_rest = 1, kl = 0;
      for (size_t k = 0; k < tid.size(); ++k) {
        const double p = std::exp(tlp[k]);
        const double lq = x[tid[k]] - mx - std::log(z);
        kl += p * (tlp[k] - lq);
        p_rest -= p;
        q_rest -= std::exp(lq);
      }
      if (p_rest > 1e-9 && q_rest > 1e-12) kl += p_rest * std::log(p_rest / q_rest);
      kl_sum += kl;
      top1_same += std::max_element(x, x + V) - x == tid[0];
    }
  });
  ASSERT_TRUE(st.ok()) << st.to_string();
  const double n = static_cast<double>(ids.size());
  const double kl = kl_sum / n, top1 = top1_same / n;
  std::printf("%s: %zu tokens, top-%zu KL(llama.cpp || saker) %.5f nats, top-1 agreement %.4f\n", GetParam().c_str(),
              ids.size(), kt["top_k"][0]["ids"].size(), kl, top1);
  // Measured (docs/models.md): SmolLM2 0.0021 / 0.968, Gemma 3 0.0033 / 0.956. saker's own
  // f32-vs-quantized-activation KL on SmolLM2 is 0.005: llama.cpp and saker differ by less than that.
  EXPECT_LT(kl, 0.005);
  EXPECT_GT(top1, 0.95);
}

INSTANTIATE_TEST_SUITE_P(Models, LlamaCppRealModel,
                         ::testing::Values("smollm2-135m-instruct", "gemma3-270m", "qwen2.5-coder-0.5b-instruct"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return s;
                         });

}  // namespace
}  // namespace saker
