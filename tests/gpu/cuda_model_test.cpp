// The CUDA backend as a whole: transformers' golden logits and greedy continuations (tests/data/golden),
// agreement with the CPU backend on converted GGUFs (f16, q8_0, q4_k, ...), graphs on/off, chunked batches,
// and several sequences in one batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/generator.h"
#include "models/kv_cache.h"
#include "formats/safetensors.h"
#include "golden/logit_metrics.h"
#include "golden/reference_tensors.h"
#include "models/convert.h"
#include "models/model.h"
#include "ops/cuda_test_util.h"
#include "test_paths.h"

namespace saker {
namespace {

using testing::max_rel_error;
using testing::mean_kl;
using testing::read_tensor;
using testing::top1_agreement;

struct Loaded {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Model> model;
  std::unique_ptr<Generator> gen;
};

Loaded load(const std::string& path, Device device, int64_t batch_tokens = 2048, bool graphs = true) {
  Loaded l;
  auto w = ModelWeights::open(path);
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  l.weights = std::move(w).value();
  OpsOptions ops;
  ops.device = device;
  ops.max_batch_tokens = batch_tokens;
  ops.cuda_graphs = graphs;
  auto m = create_model(l.weights, ops);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  if (!m.ok()) return l;
  l.model = std::move(m).value();
  auto g = Generator::create(*l.model, nullptr, 256);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  l.gen = std::move(g).value();
  return l;
}

std::vector<int32_t> greedy(Generator& g, const std::vector<int32_t>& prompt, int n) {
  GenerateOptions opt;
  opt.max_tokens = n;
  opt.sampling.temperature = 0;
  opt.ignore_eos = true;
  auto r = g.generate(prompt, opt);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->tokens : std::vector<int32_t>{};
}

// qwen2-tied has no q/k norm: its attention logits are large and sharp, so any rounding (the f16 KV cache, a
// different matmul path) moves its logits several times as far as the Qwen3 models' (measured on an H200: HF
// folder max rel err 6.0e-3, KL 1.1e-5; one-shot vs chunked prefill KL 4.1e-6). f16-rounded weights move it as
// far in transformers itself (tests/golden/qwen3_hf_golden_test.cpp).
bool sharp_attention(const std::string& model) { return model.rfind("qwen2", 0) == 0; }

class CudaGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    SAKER_REQUIRE_GPU();
    folder_ = testing::project_data_dir() / "golden" / GetParam();
    auto f = SafetensorsFile::open((folder_ / "reference.safetensors").string());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    input_ids_ = read_tensor<int32_t>(*f, "input_ids");
    logits_ = read_tensor<float>(*f, "logits");
    logits_f32_ = read_tensor<float>(*f, "logits_f32");
    greedy_prompt_ = read_tensor<int32_t>(*f, "greedy_prompt");
    greedy_tokens_ = read_tensor<int32_t>(*f, "greedy_tokens");
  }
  std::filesystem::path folder_;
  std::vector<int32_t> input_ids_, greedy_prompt_, greedy_tokens_;
  std::vector<float> logits_, logits_f32_;
};

TEST_P(CudaGolden, HfFolderLogitsMatchTransformers) {
  Loaded l = load(folder_.string(), Device::kCuda);
  ASSERT_TRUE(l.gen);
  const int64_t n_vocab = l.model->hparams().n_vocab;
  auto logits = l.gen->prompt_logits(input_ids_);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  const double err = max_rel_error(*logits, logits_, n_vocab);
  const double kl = mean_kl(*logits, logits_, n_vocab);
  const double torch_err = max_rel_error(logits_f32_, logits_, n_vocab);
  std::printf("%s cuda: max rel err %.3g (torch fp32 %.3g), mean KL %.3g\n", GetParam().c_str(), err, torch_err, kl);
  // f32 weights and activations; the KV cache is f16 on the GPU, which bounds the error near f16 rounding.
  EXPECT_LT(err, sharp_attention(GetParam()) ? 1e-2 : 5e-3);
  EXPECT_LT(kl, sharp_attention(GetParam()) ? 3e-5 : 1e-5);
  EXPECT_EQ(top1_agreement(*logits, logits_, n_vocab), 1.0);
}

TEST_P(CudaGolden, GreedyMatchesTransformersAndTheCpu) {
  Loaded gpu = load(folder_.string(), Device::kCuda);
  Loaded cpu = load(folder_.string(), Device::kCpu);
  ASSERT_TRUE(gpu.gen && cpu.gen);
  const auto g = greedy(*gpu.gen, greedy_prompt_, 32);
  EXPECT_EQ(g, greedy_tokens_);
  EXPECT_EQ(g, greedy(*cpu.gen, greedy_prompt_, 32));
}

TEST_P(CudaGolden, ConvertedGgufsAgreeWithTheCpu) {
  auto w = ModelWeights::open(folder_.string());
  ASSERT_TRUE(w.ok());
  const int64_t n_vocab = (*w)->hparams().n_vocab;
  for (const char* type : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "iq4_xs"}) {
    const auto path = testing::temp_dir() / (GetParam() + "-cuda-" + type + ".gguf");
    ConvertOptions o;
    o.type = type;
    const Status s = convert_to_gguf(**w, o, path.string());
    if (!s.ok()) {
      ADD_FAILURE() << type << ": " << s.to_string();
      continue;
    }
    Loaded gpu = load(path.string(), Device::kCuda);
    Loaded cpu = load(path.string(), Device::kCpu);
    ASSERT_TRUE(gpu.gen && cpu.gen) << type;
    auto lg = gpu.gen->prompt_logits(input_ids_);
    auto lc = cpu.gen->prompt_logits(input_ids_);
    ASSERT_TRUE(lg.ok() && lc.ok()) << type;
    const double kl = mean_kl(*lg, *lc, n_vocab);
    const double agree = top1_agreement(*lg, *lc, n_vocab);
    const double kl_ref = mean_kl(*lg, logits_, n_vocab);
    std::printf("%s %s: cuda vs cpu mean KL %.3g, top-1 %.3f; cuda vs transformers KL %.3g\n", GetParam().c_str(),
                type, kl, agree, kl_ref);
    // K-quant rows of 64 tokens or fewer quantise the activations to int8 on both backends, one scale per 256
    // values (ggml's q8_K grain), each with its own rounding (the CPU a signed scale and ties to even, the GPU
    // ties away) of activations that already differ in their last bits, so codes part at rounding edges and
    // near-ties of these random-weight models' logits can part: measured cuda vs cpu KL 1.6e-3 - 2.24e-3 and top-1
    // 0.9375 - 0.984 on the golden models (H100), while each one's KL against transformers stayed where the per-32
    // shifts had it (q4_k 0.225 / 0.206 / 0.64, q6_k 0.0094 / 0.0105 / 0.022). Every other type keeps KL < 2e-3 and
    // top-1 >= 0.95.
    const bool int8_both = std::strcmp(type, "q4_k") == 0 || std::strcmp(type, "q5_k") == 0 ||
                           std::strcmp(type, "q6_k") == 0;
    EXPECT_LT(kl, int8_both ? 3e-3 : 2e-3) << type;
    EXPECT_GE(agree, int8_both ? 0.93 : 0.95) << type;
    std::filesystem::remove(path);
  }
}

TEST_P(CudaGolden, GraphsChunksAndEagerAgree) {
  Loaded graphs = load(folder_.string(), Device::kCuda, 2048, true);
  Loaded eager = load(folder_.string(), Device::kCuda, 2048, false);
  Loaded chunked = load(folder_.string(), Device::kCuda, 64, true);  // a 128-token prompt in two chunks
  ASSERT_TRUE(graphs.gen && eager.gen && chunked.gen);
  // Decode steps replayed from graphs equal eager launches of the same kernels exactly.
  EXPECT_EQ(greedy(*graphs.gen, greedy_prompt_, 24), greedy(*eager.gen, greedy_prompt_, 24));
  std::vector<int32_t> twice = input_ids_;
  twice.insert(twice.end(), input_ids_.begin(), input_ids_.end());
  auto a = graphs.gen->prompt_logits(twice);
  auto b = chunked.gen->prompt_logits(twice);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(mean_kl(*a, *b, graphs.model->hparams().n_vocab), sharp_attention(GetParam()) ? 1e-5 : 1e-6);
}

// Two sequences of different lengths, interleaved in one batch with scattered blocks, against the CPU.
TEST_P(CudaGolden, TwoSequencesInOneBatchMatchTheCpu) {
  auto w = ModelWeights::open(folder_.string());
  ASSERT_TRUE(w.ok());
  std::shared_ptr<const ModelWeights> weights = std::move(w).value();
  const ModelHParams& h = weights->hparams();
  std::vector<float> out[2];
  for (int d = 0; d < 2; ++d) {
    OpsOptions ops;
    ops.device = d == 0 ? Device::kCpu : Device::kCuda;
    auto m = create_model(weights, ops);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    KvCacheConfig kc = kv_cache_config_for(**m, 16 * 16);
    kc.dtype = DType::kF16;  // the GPU's KV dtype on both backends, so the two differ only in their kernels
    auto kv = (*m)->allocate_kv(kc);
    ASSERT_TRUE(kv.ok()) << kv.status().to_string();
    const std::vector<int32_t> table_a = {7, 2, 9, 0}, table_b = {5, 11, 3};
    const int32_t len_a = 40, len_b = 23;
    std::vector<int32_t> tokens, seq, slot;
    for (int32_t i = 0; i < std::max(len_a, len_b); ++i) {
      if (i < len_a) {
        tokens.push_back(input_ids_[i % input_ids_.size()]);
        seq.push_back(0);
        slot.push_back(i);
      }
      if (i < len_b) {
        tokens.push_back(input_ids_[(i * 7 + 3) % input_ids_.size()]);
        seq.push_back(1);
        slot.push_back(i);
      }
    }
    AttentionSequence s[2];
    s[0].block_table = table_a;
    s[0].n_ctx = len_a;
    s[1].block_table = table_b;
    s[1].n_ctx = len_b;
    std::vector<int32_t> rows(tokens.size());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
    ForwardBatch b;
    b.tokens = tokens;
    b.attn.sequences = s;
    b.attn.token_seq = seq;
    b.attn.token_slot = slot;
    b.attn.token_pos = slot;
    b.output_rows = rows;
    out[d].resize(rows.size() * h.n_vocab);
    const Status st = (*m)->forward(b, (*kv)->layers(), out[d].data());
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  EXPECT_LT(mean_kl(out[1], out[0], h.n_vocab), 1e-5);
  EXPECT_EQ(top1_agreement(out[1], out[0], h.n_vocab), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Models, CudaGolden, ::testing::Values("qwen3-tied", "qwen3-untied", "qwen2-tied"));

}  // namespace
}  // namespace saker
