// saker runs GGUFs quantized by llama.cpp (shared/data/quant: one tiny qwen3 in six types) and its logits on
// them stay close to its logits on the F16 original.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/generator.h"
#include "models/model.h"
#include "golden/logit_metrics.h"
#include "test_paths.h"

namespace saker {
namespace {

std::vector<float> logits_of(const std::filesystem::path& file, const std::vector<int32_t>& ids) {
  auto w = ModelWeights::open(file.string());
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  std::shared_ptr<const ModelWeights> weights = std::move(w).value();
  auto m = create_model(weights);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  auto g = Generator::create(**m, nullptr, 128);
  EXPECT_TRUE(g.ok());
  auto l = (*g)->prompt_logits(ids);
  EXPECT_TRUE(l.ok()) << l.status().to_string();
  return *l;
}

TEST(LlamaCppQuantizedModels, LogitsStayCloseToF16) {
  SAKER_REQUIRE_SHARED(dir, "quant");
  std::vector<int32_t> ids;
  for (int i = 0; i < 48; ++i) ids.push_back((i * 37 + 11) % 512);
  const std::vector<float> ref = logits_of(dir / "tiny-f16.gguf", ids);
  // Bounds are ~2x what was measured (Q8_0 2.8e-4, Q6_K 3.0e-3, Q5_K_M 9.9e-3, Q4_K_M 3.8e-2, IQ4_XS 4.4e-2,
  // Q4_0 6.0e-2 nats; this model's weights are heavy-tailed, so every type is well above its usual KL).
  const std::pair<const char*, double> cases[] = {{"Q8_0", 6e-4},   {"Q6_K", 6e-3},    {"Q5_K_M", 2e-2},
                                                  {"Q4_K_M", 8e-2}, {"IQ4_XS", 9e-2}, {"Q4_0", 0.12}};
  for (const auto& [type, bound] : cases) {
    const std::vector<float> q = logits_of(dir / (std::string("tiny-") + type + ".gguf"), ids);
    ASSERT_EQ(q.size(), ref.size());
    const double kl = testing::mean_kl(q, ref, 512);
    std::printf("llama.cpp %-7s mean KL vs f16 %.3g\n", type, kl);
    EXPECT_LT(kl, bound) << type;
    EXPECT_GT(kl, 0.0) << type << ": identical to f16 means the quantized weights were not used";
  }
}

}  // namespace
}  // namespace saker
