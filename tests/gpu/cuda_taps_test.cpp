// Hidden-state taps (ForwardBatch::taps) on the CUDA backend: a prompt's taps, in one forward and split into
// chunks, against the CPU backend's; decode steps replayed from a captured graph fill each call's own buffer,
// and a graph captured without taps, or with other tapped layers, is never replayed for a step with these.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>

#include "models/kv_cache.h"
#include "models/model.h"
#include "ops/cuda_test_util.h"
#include "forward_with_taps.h"
#include "test_paths.h"

namespace saker {
namespace {

using testing::forward_with_taps;

// The worst, over [n_embd] rows, of max |a - ref| / max |ref| in the row; NaN anywhere gives +inf.
double worst_row_error(const std::vector<float>& a, const std::vector<float>& ref, int64_t n_embd) {
  if (a.size() != ref.size()) return INFINITY;
  double worst = 0;
  for (size_t r = 0; r < ref.size(); r += n_embd) {
    double diff = 0, scale = 0;
    for (size_t i = r; i < r + n_embd; ++i) {
      if (std::isnan(a[i]) || std::isnan(ref[i])) return INFINITY;
      diff = std::max<double>(diff, std::abs(a[i] - ref[i]));
      scale = std::max<double>(scale, std::abs(ref[i]));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-6));
  }
  return worst;
}

// Columns [j n_embd, (j + 1) n_embd) of every row of taps [n, n_taps, n_embd]: tap j.
std::vector<float> tap(const std::vector<float>& taps, int64_t n_taps, int64_t j, int64_t n_embd) {
  std::vector<float> out;
  for (size_t r = 0; r < taps.size(); r += n_taps * n_embd) {
    out.insert(out.end(), taps.begin() + r + j * n_embd, taps.begin() + r + (j + 1) * n_embd);
  }
  return out;
}

class CudaTaps : public ::testing::Test {
 protected:
  void SetUp() override {
    SAKER_REQUIRE_GPU();
    auto w = ModelWeights::open((testing::source_dir() / "models" / "saker-mini" / "saker-mini-q8_0.gguf").string());
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    weights_ = std::move(w).value();
    n_embd_ = weights_->hparams().n_embd;
    last_ = static_cast<int32_t>(weights_->hparams().n_layer - 1);
    ASSERT_GE(last_, 2);
  }
  // A model with an f16 KV cache of 256 slots (the GPU's KV dtype on both backends, so that they differ only in
  // their kernels).
  bool make(Device device, int64_t batch_tokens, bool graphs, std::unique_ptr<Model>* model,
            std::unique_ptr<KvStorage>* kv) {
    OpsOptions ops;
    ops.device = device;
    ops.max_batch_tokens = batch_tokens;
    ops.cuda_graphs = graphs;
    auto m = create_model(weights_, ops);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) return false;
    KvCacheConfig c = kv_cache_config_for(**m, 256);
    c.dtype = DType::kF16;
    auto s = (*m)->allocate_kv(c);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return false;
    *model = std::move(m).value();
    *kv = std::move(s).value();
    return true;
  }
  std::vector<int32_t> prompt(int n) const {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i) t[i] = 2 + (i * 37 + 5) % static_cast<int>(weights_->hparams().n_vocab - 2);
    return t;
  }
  std::shared_ptr<const ModelWeights> weights_;
  int64_t n_embd_ = 0;
  int32_t last_ = 0;
};

// f32 activations on both sides, but the GPU's matmuls (q8_0 weights) and attention round differently.
constexpr double kTolerance = 2e-2;

TEST_F(CudaTaps, PromptTapsMatchTheCpuInOneForwardAndInChunks) {
  const std::vector<int32_t> layers = {0, 2, last_};
  const auto n_taps = static_cast<int64_t>(layers.size());
  const std::vector<int32_t> tokens = prompt(100);
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<float> want(n * n_taps * n_embd_);
  int32_t want_id = -1;
  {
    std::unique_ptr<Model> cpu;
    std::unique_ptr<KvStorage> kv;
    ASSERT_TRUE(make(Device::kCpu, 2048, false, &cpu, &kv));
    const Status st = forward_with_taps(*cpu, *kv, tokens, 0, layers, want.data(), &want_id);
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  // One forward of 100 tokens; then chunks of 64 and 36, whose rows must land at their tokens' offsets (NaN
  // left anywhere, or a row shifted, fails).
  for (const int64_t batch_tokens : {2048, 64}) {
    std::unique_ptr<Model> gpu;
    std::unique_ptr<KvStorage> kv;
    ASSERT_TRUE(make(Device::kCuda, batch_tokens, true, &gpu, &kv));
    std::vector<float> got(want.size(), std::numeric_limits<float>::quiet_NaN());
    int32_t id = -1;  // near-ties may pick another id than the CPU's: not compared
    const Status st = forward_with_taps(*gpu, *kv, tokens, 0, layers, got.data(), &id);
    ASSERT_TRUE(st.ok()) << st.to_string();
    for (int64_t j = 0; j < n_taps; ++j) {
      const double err = worst_row_error(tap(got, n_taps, j, n_embd_), tap(want, n_taps, j, n_embd_), n_embd_);
      std::printf("batches of %lld: layer %d taps, worst row max abs diff / row max abs %.3g\n",
                  static_cast<long long>(batch_tokens), layers[j], err);
      EXPECT_LT(err, kTolerance) << "layer " << layers[j] << ", batches of " << batch_tokens;
    }
  }
}

// The same decode step (same token at the same position, so the same K/V rewritten) run again and again: the
// first run of a shape is eager, the second captured, later ones replayed. Every call's own buffer gets the
// taps, bit for bit those of the eager run, and near the CPU's.
TEST_F(CudaTaps, DecodeStepsReplayedFromAGraphFillEachCallsBuffer) {
  const std::vector<int32_t> tokens = prompt(40);
  const std::vector<int32_t> next = {7};
  const auto pos = static_cast<int32_t>(tokens.size());
  std::vector<int32_t> all(last_ + 1);
  std::iota(all.begin(), all.end(), 0);
  std::vector<float> cpu_taps(all.size() * n_embd_);  // [1, every layer, n_embd]
  {
    std::unique_ptr<Model> cpu;
    std::unique_ptr<KvStorage> kv;
    ASSERT_TRUE(make(Device::kCpu, 2048, false, &cpu, &kv));
    int32_t id = -1;
    ASSERT_TRUE(forward_with_taps(*cpu, *kv, tokens, 0, {}, nullptr, &id).ok());
    const Status st = forward_with_taps(*cpu, *kv, next, pos, all, cpu_taps.data(), &id);
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  std::unique_ptr<Model> gpu;
  std::unique_ptr<KvStorage> kv;
  ASSERT_TRUE(make(Device::kCuda, 2048, true, &gpu, &kv));
  int32_t id = -1, step_id = -1;  // the step's argmax id on the GPU, the same in every run
  ASSERT_TRUE(forward_with_taps(*gpu, *kv, tokens, 0, {}, nullptr, &id).ok());
  // The step's shape without taps first: eager, captured, replayed. Its graph makes no tap copies.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(forward_with_taps(*gpu, *kv, next, pos, {}, nullptr, &id).ok());
    if (i == 0) step_id = id;
    EXPECT_EQ(id, step_id);
  }
  // Two sets of tapped layers of the same width: each keys graphs of its own.
  const std::vector<std::vector<int32_t>> sets = {{0, 2, last_}, {1, 2, last_}};
  std::vector<std::vector<float>> first(sets.size());
  std::vector<std::vector<float>> buffers;  // every call's, alive to the end: each at its own address
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  for (int round = 0; round < 2; ++round) {
    for (size_t k = 0; k < sets.size(); ++k) {
      const std::vector<int32_t>& layers = sets[k];
      for (int i = 0; i < 4; ++i) {
        std::vector<float>& got = buffers.emplace_back(layers.size() * n_embd_, kNaN);
        const Status st = forward_with_taps(*gpu, *kv, next, pos, layers, got.data(), &id);
        ASSERT_TRUE(st.ok()) << st.to_string();
        EXPECT_EQ(id, step_id);
        if (first[k].empty()) {
          first[k] = got;
          for (size_t j = 0; j < layers.size(); ++j) {
            const std::vector<float> want(cpu_taps.begin() + layers[j] * n_embd_,
                                          cpu_taps.begin() + (layers[j] + 1) * n_embd_);
            const double err = worst_row_error(tap(got, 3, static_cast<int64_t>(j), n_embd_), want, n_embd_);
            std::printf("decode: layer %d tap, max abs diff / max abs %.3g\n", layers[j], err);
            EXPECT_LT(err, kTolerance) << "layer " << layers[j];
          }
        } else {
          EXPECT_EQ(std::memcmp(got.data(), first[k].data(), got.size() * sizeof(float)), 0)
              << "round " << round << ", call " << i << " of layers " << layers[0] << ", " << layers[1] << ", "
              << layers[2] << ": not the eager run's taps";
        }
        std::fill(got.begin(), got.end(), kNaN);  // stays so unless a later call writes to this one's address
      }
    }
  }
  // Columns 1 and 2 hold layers 2 and last in both sets; column 0 layer 0 in one, layer 1 in the other.
  EXPECT_EQ(tap(first[0], 3, 1, n_embd_), tap(first[1], 3, 1, n_embd_));
  EXPECT_EQ(tap(first[0], 3, 2, n_embd_), tap(first[1], 3, 2, n_embd_));
  EXPECT_NE(tap(first[0], 3, 0, n_embd_), tap(first[1], 3, 0, n_embd_));
  // And the graph without taps still replays.
  ASSERT_TRUE(forward_with_taps(*gpu, *kv, next, pos, {}, nullptr, &id).ok());
  EXPECT_EQ(id, step_id);
  for (size_t b = 0; b < buffers.size(); ++b) {
    EXPECT_TRUE(std::all_of(buffers[b].begin(), buffers[b].end(), [](float v) { return std::isnan(v); }))
        << "call " << b << "'s buffer written after its call";
  }
}

// Taps kept on the device (for a drafter on the same GPU) are the rows the host copy gets, bit for bit: a
// prompt in one forward and in chunks of 64 (each chunk's rows at its tokens' offset: equal chunks at different
// offsets must not share a captured graph), two prompts alternating so that rows a run fails to write keep the
// other prompt's values; and a decode step run eagerly, captured and replayed.
TEST_F(CudaTaps, TapsKeptOnTheDeviceAreTheHostCopysBits) {
  const std::vector<int32_t> layers = {0, 2, last_};
  const auto n_taps = static_cast<int64_t>(layers.size());
  const std::vector<int32_t> next = {7};
  std::vector<std::vector<int32_t>> prompts = {prompt(200), prompt(200)};
  for (int32_t& t : prompts[1]) t = 2 + (t * 13 + 1) % static_cast<int32_t>(weights_->hparams().n_vocab - 2);
  const auto n = static_cast<int64_t>(prompts[0].size());
  const auto pos = static_cast<int32_t>(n);
  auto device_rows = [&](const Model& m, int64_t rows) {
    const FloatRows d = m.device_taps();
    EXPECT_TRUE(d.on_device);
    EXPECT_EQ(d.n, rows);
    EXPECT_EQ(d.stride, n_taps * n_embd_);
    std::vector<float> got(static_cast<size_t>(rows * n_taps * n_embd_), std::numeric_limits<float>::quiet_NaN());
    if (d.on_device && d.n == rows && d.stride == n_taps * n_embd_) {
      EXPECT_EQ(cudaMemcpy(got.data(), d.data, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return got;
  };
  for (const int64_t batch_tokens : {2048, 64}) {
    std::unique_ptr<Model> gpu;
    std::unique_ptr<KvStorage> kv;
    ASSERT_TRUE(make(Device::kCuda, batch_tokens, true, &gpu, &kv));
    ASSERT_TRUE(gpu->keeps_taps_on_device());
    std::vector<std::vector<float>> want(prompts.size(), std::vector<float>(n * n_taps * n_embd_));
    int32_t id = -1;
    for (size_t p = 0; p < prompts.size(); ++p) {  // each prompt rewrites the same K/V
      ASSERT_TRUE(forward_with_taps(*gpu, *kv, prompts[p], 0, layers, want[p].data(), &id).ok());
      EXPECT_EQ(gpu->device_taps().n, 0) << "a step with host taps leaves none on the device";
    }
    for (int run = 0; run < 6; ++run) {  // eager, captured, replayed, for each chunk shape
      const size_t p = static_cast<size_t>(run % 2);
      ASSERT_TRUE(forward_with_taps(*gpu, *kv, prompts[p], 0, layers, nullptr, &id, true).ok());
      const std::vector<float> got = device_rows(*gpu, n);
      EXPECT_EQ(std::memcmp(got.data(), want[p].data(), got.size() * sizeof(float)), 0)
          << "prompt " << p << " in batches of " << batch_tokens << ", run " << run;
    }

    std::vector<float> step(n_taps * n_embd_);
    ASSERT_TRUE(forward_with_taps(*gpu, *kv, next, pos, layers, step.data(), &id).ok());
    for (int i = 0; i < 4; ++i) {  // eager, captured, replayed, replayed
      ASSERT_TRUE(forward_with_taps(*gpu, *kv, next, pos, layers, nullptr, &id, true).ok());
      const std::vector<float> d = device_rows(*gpu, 1);
      EXPECT_EQ(std::memcmp(d.data(), step.data(), d.size() * sizeof(float)), 0) << "decode step, run " << i;
    }
  }
}

}  // namespace
}  // namespace saker
