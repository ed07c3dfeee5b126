// Tensor parallelism on the CUDA backend (models/TensorParallelModel with CudaBackend ranks). On one GPU two
// ranks share the device, their all-reduces staged through host memory (no NCCL: it refuses two ranks on one
// GPU), which checks everything but the transport: the sharded weights on CUDA, each rank's KV pages, the
// all-reduce op, the assembled logits and argmax, and the engine over a sharded KV storage. With two GPUs or
// more the same checks run over NCCL, one rank per GPU, with graphs. The reference is the one-GPU model of the
// same file: prompt logits within a tolerance (the ranks' partial sums change the summation order) and the
// engine's greedy tokens identical.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/engine.h"
#include "engine/generator.h"
#include "models/model.h"
#include "models/synth.h"
#include "ops/cuda/cuda_devices.h"
#include "ops/cuda_test_util.h"
#include "test_paths.h"

namespace saker {
namespace {

std::shared_ptr<const ModelWeights> synth(const std::string& arch, const std::string& type) {
  SynthOptions o;
  o.arch = arch;
  o.preset = "tiny-gqa";  // heads and FFN split over 2 and 4 ranks
  o.type = type;
  o.seed = 7;
  const std::string path =
      (testing::temp_dir() / ("cuda-tp-" + arch + "-" + type + "-" + std::to_string(::getpid()) + ".gguf")).string();
  const Status st = write_synthetic_model(o, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto w = ModelWeights::open(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  return w.ok() ? std::shared_ptr<const ModelWeights>(std::move(w).value()) : nullptr;
}

std::unique_ptr<Model> cuda_model(std::shared_ptr<const ModelWeights> w, int ranks, std::vector<int> devices) {
  OpsOptions o;
  o.device = Device::kCuda;
  o.tensor_parallel = ranks;
  o.tensor_parallel_devices = std::move(devices);
  auto m = create_model(std::move(w), o);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<int32_t> prompt(int64_t n, int64_t n_vocab) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 131 + 17) % n_vocab);
  return t;
}

// Largest |difference| of the teacher-forced logits, and the largest |logit| of the one-GPU model.
float max_logit_diff(Model& one, Model& tp, const std::vector<int32_t>& tokens, float* max_abs) {
  auto g1 = Generator::create(one, nullptr, 128);
  auto gn = Generator::create(tp, nullptr, 128);
  EXPECT_TRUE(g1.ok() && gn.ok());
  if (!g1.ok() || !gn.ok()) return INFINITY;
  auto l1 = (*g1)->prompt_logits(tokens);
  auto ln = (*gn)->prompt_logits(tokens);
  EXPECT_TRUE(l1.ok()) << l1.status().to_string();
  EXPECT_TRUE(ln.ok()) << ln.status().to_string();
  if (!l1.ok() || !ln.ok() || l1->size() != ln->size()) return INFINITY;
  float d = 0.0f;
  *max_abs = 0.0f;
  for (size_t i = 0; i < l1->size(); ++i) {
    d = std::max(d, std::fabs((*l1)[i] - (*ln)[i]));
    *max_abs = std::max(*max_abs, std::fabs((*l1)[i]));
  }
  return d;
}

// Two requests batched on the engine, greedy, 16 tokens each.
std::vector<std::vector<int32_t>> engine_greedy(Model& model, const std::vector<std::vector<int32_t>>& prompts) {
  EngineOptions eo;
  eo.max_seqs = static_cast<int32_t>(prompts.size());
  eo.n_ctx = 128;
  eo.prefill_chunk = 16;
  auto engine = Engine::create(model, nullptr, eo);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  std::vector<std::vector<int32_t>> out(prompts.size());
  if (!engine.ok()) return out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions go;
    go.max_tokens = 16;
    go.ignore_eos = true;
    go.sampling.temperature = 0.0f;
    (*engine)->submit(prompts[i], go, nullptr, [&out, i](Result<GenerateResult> r) {
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      if (r.ok()) out[i] = r->tokens;
    });
  }
  for (;;) {
    auto r = (*engine)->step();
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok() || !*r) break;
  }
  return out;
}

void expect_sharded_equals_one(const std::string& arch, const std::string& type, int ranks, std::vector<int> devices,
                               float tolerance) {
  auto w = synth(arch, type);
  ASSERT_TRUE(w);
  OpsOptions one_gpu;
  one_gpu.device = Device::kCuda;
  auto one = create_model(w, one_gpu);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  auto tp = cuda_model(w, ranks, devices);
  ASSERT_TRUE(tp);
  EXPECT_EQ(tp->device(), Device::kCuda);
  const int64_t V = w->hparams().n_vocab;
  float max_abs = 0.0f;
  const float d = max_logit_diff(**one, *tp, prompt(40, V), &max_abs);
  std::printf("%s %s, %d ranks on devices %d..%d: max |logit difference| %.3g (largest logit %.3g)\n", arch.c_str(),
              type.c_str(), ranks, devices.front(), devices.back(), d, max_abs);
  EXPECT_LE(d, tolerance);
  const std::vector<std::vector<int32_t>> prompts = {prompt(24, V), prompt(37, V)};
  const auto want = engine_greedy(**one, prompts);
  const auto got = engine_greedy(*tp, prompts);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], want[i]) << "request " << i;
}

TEST(CudaTensorParallel, TwoRanksSharingOneGpuEqualTheOneGpuModel) {
  SAKER_REQUIRE_GPU();
  for (const char* arch : {"qwen3", "llama", "gemma3"}) {
    expect_sharded_equals_one(arch, "q8_0", 2, {0, 0}, 2e-2f);
    expect_sharded_equals_one(arch, "q4_k", 2, {0, 0}, 2e-2f);
  }
  expect_sharded_equals_one("qwen3", "f16", 4, {0, 0, 0, 0}, 2e-2f);
}

TEST(CudaTensorParallel, OneRankPerGpuOverNccl) {
  SAKER_REQUIRE_GPU();
  std::string why;
  const size_t n = cuda::list_devices(&why).size();
  if (n < 2) GTEST_SKIP() << "one GPU here: NCCL tensor parallelism needs two";
  expect_sharded_equals_one("qwen3", "q4_k", 2, {0, 1}, 2e-2f);
  expect_sharded_equals_one("llama", "q8_0", 2, {0, 1}, 2e-2f);
}

TEST(CudaTensorParallel, MissingDevicesAndNonDividingModelsAreRefused) {
  SAKER_REQUIRE_GPU();
  auto w = synth("qwen3", "q8_0");
  ASSERT_TRUE(w);
  OpsOptions o;
  o.device = Device::kCuda;
  o.tensor_parallel = 2;
  o.tensor_parallel_devices = {0, 99};
  auto m = create_model(w, o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("device 99 does not exist"), std::string::npos) << m.status().to_string();
  o.tensor_parallel = 3;  // 8 heads, 4 kv heads: not over 3
  o.tensor_parallel_devices = {0, 0, 0};
  m = create_model(w, o);
  EXPECT_FALSE(m.ok());
}

}  // namespace
}  // namespace saker
