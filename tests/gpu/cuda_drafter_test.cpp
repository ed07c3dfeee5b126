// saker-mini's DFlash drafter on the CUDA backend against the same drafter on the CPU backend: one forward
// written on OpBackend, so the context step (kept input rows, k|v-only layers) and the block step (kFull
// attention, the target's head) must give the CPU's drafts, up to the GPU's rounding (f16 KV cache, other
// summation orders). The context is also fed one position at a time, so the 1-row context step runs eagerly,
// is captured and is replayed with new input rows; the block step is repeated to check a replay against the
// eager run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "forward_with_taps.h"
#include "models/kv_cache.h"
#include "models/model.h"
#include "ops/cuda_test_util.h"
#include "spec/dflash_drafter.h"
#include "spec/dflash_weights.h"
#include "test_paths.h"

namespace saker {
namespace {

namespace fs = std::filesystem;

fs::path mini() { return testing::source_dir() / "models" / "saker-mini"; }

// saker-mini and its drafter's weights (the test skips without a GPU or without them).
class CudaDrafter : public ::testing::Test {
 protected:
  void SetUp() override {
    SAKER_REQUIRE_GPU();
    if (!fs::exists(mini() / "saker-mini-q8_0.gguf") || !fs::exists(mini() / "drafter")) {
      GTEST_SKIP() << "saker-mini or its drafter not found under " << mini();
    }
    auto w = ModelWeights::open((mini() / "saker-mini-q8_0.gguf").string());
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    weights = std::move(w).value();
    auto d = spec::DFlashWeights::load((mini() / "drafter").string(), weights);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    dw = std::move(d).value();
  }
  std::shared_ptr<const ModelWeights> weights;
  std::shared_ptr<const spec::DFlashWeights> dw;
};

TEST_F(CudaDrafter, DraftsMatchTheCpuBackendWholeAndOnePositionAtATime) {
  const spec::DFlashConfig& c = dw->config;

  // The target's taps of a prompt, from the CPU backend.
  auto target = create_model(weights, OpsOptions{});
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  auto kv = (*target)->allocate_kv(kv_cache_config_for(**target, 256));
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  const int32_t n = 40;
  std::vector<int32_t> tokens(n);
  for (int32_t i = 0; i < n; ++i) tokens[i] = 2 + (i * 37 + 5) % static_cast<int32_t>(c.n_vocab - 2);
  const int64_t stride = static_cast<int64_t>(c.target_layers.size()) * c.n_embd;
  std::vector<float> taps(static_cast<size_t>(n * stride));
  int32_t last_id = -1;
  ASSERT_TRUE(testing::forward_with_taps(**target, **kv, tokens, 0, c.target_layers, taps.data(), &last_id).ok());

  OpsOptions gpu;
  gpu.device = Device::kCuda;
  auto on_cpu = spec::DFlashDrafter::create(dw, 256, OpsOptions{});
  auto on_gpu = spec::DFlashDrafter::create(dw, 256, gpu);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status().to_string();
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status().to_string();
  ASSERT_TRUE((*on_cpu)->add_context(0, 0, n, taps.data()).ok());
  const int32_t one_by_one = 6;  // the last positions one forward each: eager, captured, replayed
  ASSERT_TRUE((*on_gpu)->add_context(0, 0, n - one_by_one, taps.data()).ok());
  for (int32_t p = n - one_by_one; p < n; ++p) {
    ASSERT_TRUE((*on_gpu)->run().ok());  // fuses what is queued
    ASSERT_TRUE((*on_gpu)->add_context(0, p, 1, taps.data() + p * stride).ok());
  }

  const int32_t pending = last_id;
  std::vector<spec::DFlashDrafter::TopTokens> want, got;
  ASSERT_TRUE((*on_cpu)->propose_top(0, pending, 1, &want).ok());
  ASSERT_TRUE((*on_gpu)->propose_top(0, pending, 1, &got).ok());
  ASSERT_EQ(want.size(), got.size());
  int same = 0;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    same += want[i].ids[0] == got[i].ids[0];
    worst = std::max(worst, std::abs(static_cast<double>(want[i].logprobs[0]) - got[i].logprobs[0]));
  }
  std::printf("drafter on CUDA vs CPU: %d of %zu block rows draft the same token; worst top-1 log-probability "
              "difference %.4f\n", same, want.size(), worst);
  // A row may part where its top two tokens are within the rounding; most must not.
  EXPECT_GE(same, static_cast<int>(want.size()) - 2);
  EXPECT_LT(worst, 0.05);

  // The ids-only block step (a graph key of its own: eager, then captured, then replayed) gives the logits
  // step's argmax every time.
  std::vector<int32_t> first, again;
  ASSERT_TRUE((*on_gpu)->propose(0, pending, &first).ok());
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE((*on_gpu)->propose(0, pending, &again).ok());
    EXPECT_EQ(first, again) << "replay " << k;
  }
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i], got[i].ids[0]) << "row " << i;
}

// The engine's path on one GPU: the drafter keeps the target's taps straight from device memory (a prompt's
// rows as they come, a verify step's accepted rows picked out of order, rows that a later call replaces) and
// drafts exactly what the same drafter fed the same rows from the host drafts.
TEST_F(CudaDrafter, TapsReadOnTheDeviceDraftWhatHostTapsDraft) {
  const spec::DFlashConfig& c = dw->config;
  const int64_t stride = static_cast<int64_t>(c.target_layers.size()) * c.n_embd;
  // The last `tail` positions come as a verify step's picked rows; the prompt's 95 rows come in two calls, the
  // second growing the kept buffer (64 rows at first) while the first one's copies still wait.
  const int32_t n = 100, tail = 5, first_part = 40;
  std::vector<float> taps(static_cast<size_t>(n * stride));
  for (size_t i = 0; i < taps.size(); ++i) taps[i] = std::sin(0.37f * static_cast<float>(i % 9973)) * 3.0f;
  // On the device: the prompt rows, then a "verify step" whose rows hold the tail positions out of order, with
  // a row that is never accepted between them.
  const std::vector<int32_t> order = {3, 0, 4, -1, 1, 2};  // row k holds tail position order[k] (-1: junk)
  std::vector<float> step(order.size() * stride, 100.0f);
  std::vector<int32_t> pick(tail);
  for (size_t k = 0; k < order.size(); ++k) {
    if (order[k] < 0) continue;
    std::copy_n(taps.begin() + (n - tail + order[k]) * stride, stride, step.begin() + k * stride);
    pick[order[k]] = static_cast<int32_t>(k);
  }
  float *prompt_dev = nullptr, *step_dev = nullptr;
  ASSERT_EQ(cudaMalloc(&prompt_dev, taps.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&step_dev, step.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(prompt_dev, taps.data(), taps.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(step_dev, step.data(), step.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // landed before the drafters' non-blocking streams read them

  OpsOptions gpu;
  gpu.device = Device::kCuda;
  auto from_host = spec::DFlashDrafter::create(dw, 256, gpu);
  auto from_device = spec::DFlashDrafter::create(dw, 256, gpu);
  ASSERT_TRUE(from_host.ok()) << from_host.status().to_string();
  ASSERT_TRUE(from_device.ok()) << from_device.status().to_string();
  ASSERT_EQ((*from_device)->device(), Device::kCuda);
  ASSERT_TRUE((*from_host)->add_context(0, 0, n, taps.data()).ok());
  // Both fuse the same rows in the same forwards (n - tail, then tail + 2), so their numbers must agree exactly.
  spec::DFlashDrafter& h = **from_host;
  ASSERT_TRUE(h.add_context(0, 0, n - tail, taps.data()).ok());
  ASSERT_TRUE(h.run().ok());
  ASSERT_TRUE(h.add_context(0, n - tail - 2, tail + 2, taps.data() + (n - tail - 2) * stride).ok());
  spec::DFlashDrafter& d = **from_device;
  ASSERT_TRUE(
      d.add_context(0, 0, FloatRows{.data = prompt_dev, .stride = stride, .n = first_part, .on_device = true}).ok());
  ASSERT_TRUE(d.add_context(0, first_part,
                            FloatRows{.data = prompt_dev + first_part * stride,
                                      .stride = stride,
                                      .n = n - tail - first_part,
                                      .on_device = true})
                  .ok());
  ASSERT_TRUE(d.run().ok());
  // A rejected draft's row, then the last two fused positions again (fused rows replaced), then the verify
  // step's accepted rows picked in position order.
  ASSERT_TRUE(
      d.add_context(0, n - tail, FloatRows{.data = step_dev + 3 * stride, .stride = stride, .n = 1, .on_device = true})
          .ok());
  ASSERT_TRUE(d.add_context(
                   0, n - tail - 2,
                   FloatRows{.data = prompt_dev + (n - tail - 2) * stride, .stride = stride, .n = 2, .on_device = true})
                  .ok());
  ASSERT_TRUE(d.add_context(0, n - tail,
                            FloatRows{.data = step_dev, .stride = stride, .n = tail, .pick = pick, .on_device = true})
                  .ok());
  EXPECT_EQ(d.n_context(0), n);
  EXPECT_FALSE(d.add_context(0, n + 1, FloatRows{.data = step_dev, .stride = stride, .n = 1, .on_device = true}).ok())
      << "a gap after the context";
  EXPECT_FALSE(d.add_context(0, n, FloatRows{.data = step_dev, .stride = stride - 1, .n = 1, .on_device = true}).ok())
      << "rows narrower than the taps";
  ASSERT_TRUE(d.settle().ok());
  // Settled: the drafter holds its own copies, so the target may write its taps again (here: NaN everywhere).
  ASSERT_EQ(cudaMemset(prompt_dev, 0xFF, taps.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(step_dev, 0xFF, step.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const int32_t pending = 11;
  std::vector<spec::DFlashDrafter::TopTokens> want, got;
  ASSERT_TRUE(h.propose_top(0, pending, 4, &want).ok());
  ASSERT_TRUE(d.propose_top(0, pending, 4, &got).ok());
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].ids, got[i].ids) << "block row " << i;
    EXPECT_EQ(want[i].logprobs, got[i].logprobs) << "block row " << i;
  }
  cudaFree(prompt_dev);
  cudaFree(step_dev);
}

}  // namespace
}  // namespace saker
