// Sampled speculative decoding on the CUDA backend against plain sampling, by chi-square: saker-mini (Q8_0,
// whose CUDA matmuls round a row differently at different batch widths, so a near-tie can fall either way)
// with its DFlash drafter on the GPU, one drafter for 16 sequences, 400 seeds of one prompt at temperature 1.
// Each generated position's token distribution must agree with plain sampling's (p > 0.001 at every one of
// the six positions); how many seeds give identical tokens is printed.
#include <gtest/gtest.h>

#include "golden/saker_mini.h"
#include "golden/spec_sampling_check.h"
#include "ops/cuda_test_util.h"
#include "spec/dflash_proposer.h"

namespace saker {
namespace {

TEST(CudaSpecSampling, DrafterOnTheGpuSamplesAsPlainSamplingDoes) {
  SAKER_REQUIRE_GPU();
  SAKER_REQUIRE_MINI();
  auto weights = testing::load_mini_weights();
  ASSERT_TRUE(weights);
  OpsOptions gpu;
  gpu.device = Device::kCuda;
  auto model = create_model(weights, gpu);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto dw = spec::DFlashWeights::load((testing::mini_dir() / "drafter").string(), weights);
  ASSERT_TRUE(dw.ok()) << dw.status().to_string();
  EngineOptions eo;
  eo.n_ctx = 512;
  eo.prefill_chunk = 64;
  eo.max_seqs = 16;
  eo.step_tokens = 16 * 16;
  eo.prefix_cache = false;  // one prompt for every seed: both engines prefill it whole
  auto factory = spec::DFlashProposer::factory(*dw, eo.max_seqs, eo.n_ctx, 0, gpu);
  ASSERT_TRUE(factory.ok()) << factory.status().to_string();
  SamplingParams sp;
  sp.temperature = 1.0f;
  sp.top_k = 10;
  const auto c = testing::compare_sampling(**model, testing::heldout_prompts()[3], 400, 6, sp, eo, *factory);
  ASSERT_EQ(c.positions.size(), 6u);
  for (size_t p = 0; p < c.positions.size(); ++p) EXPECT_GT(c.positions[p].p_value, 1e-3) << "position " << p;
  EXPECT_GT(c.drafts.verify_steps, 100);
  EXPECT_GT(c.drafts.mean_accepted_length(), 1.1) << "the drafter on the GPU drafted nothing the target kept";
}

}  // namespace
}  // namespace saker
