// ForwardBatch::argmax on the CPU decoder (the golden qwen3 model of tests/data/golden): ids with no logits
// buffer equal the argmax of the logits forward() returns, and greedy generation through ids equals greedy
// generation through the sampler. Also the KV storage a model allocates, and the views forward() refuses.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "engine/generator.h"
#include "engine/sequence_batch.h"
#include "models/kv_cache.h"
#include "models/model.h"
#include "ops/ref/argmax.h"
#include "test_paths.h"

namespace saker {
namespace {

struct Cpu {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Model> model;
};

Cpu load_golden() {
  Cpu c;
  auto w = ModelWeights::open((testing::project_data_dir() / "golden" / "qwen3-tied").string());
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  if (!w.ok()) return c;
  c.weights = std::move(w).value();
  auto m = create_model(c.weights);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  if (m.ok()) c.model = std::move(m).value();
  return c;
}

std::vector<int32_t> prompt_tokens(int64_t n, int64_t n_vocab) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 37 + 11) % n_vocab);
  return t;
}

// One forward of `tokens` as a fresh sequence, every row an output.
Status run_prompt(Model& model, std::span<const int32_t> tokens, float* logits, int32_t* argmax) {
  auto kv = model.allocate_kv(kv_cache_config_for(model, static_cast<int64_t>(tokens.size())));
  if (!kv.ok()) return kv.status();
  std::vector<int32_t> table((*kv)->config().n_blocks);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  const int64_t n = static_cast<int64_t>(tokens.size());
  const SequenceBatch sb(table, 0, n, AttentionMask::kCausal);
  std::vector<int32_t> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i] = static_cast<int32_t>(i);
  ForwardBatch b;
  b.tokens = tokens;
  b.attn = sb.attn;
  b.output_rows = rows;
  b.argmax = argmax;
  return model.forward(b, (*kv)->layers(), logits);
}

TEST(ForwardArgmax, CpuModelAllocatesHostF32Storage) {
  Cpu c = load_golden();
  ASSERT_TRUE(c.model);
  const ModelHParams& h = c.model->hparams();
  EXPECT_EQ(c.model->kv_dtype(), DType::kF32);
  const KvCacheConfig kc = kv_cache_config_for(*c.model, 40);
  EXPECT_EQ(kc.n_layer, h.n_layer);
  EXPECT_EQ(kc.n_head_kv, h.n_head_kv);
  EXPECT_EQ(kc.head_dim, h.head_dim);
  EXPECT_EQ(kc.n_blocks, 3);
  auto kv = c.model->allocate_kv(kc);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ((*kv)->device(), Device::kCpu);
  EXPECT_EQ(static_cast<int64_t>((*kv)->layers().size()), h.n_layer);
  KvCacheConfig wrong = kc;
  wrong.n_head_kv += 1;
  EXPECT_EQ(c.model->allocate_kv(wrong).status().code(), StatusCode::kInvalidArgument);
}

TEST(ForwardArgmax, IdsWithoutLogitsEqualTheArgmaxOfTheLogits) {
  Cpu c = load_golden();
  ASSERT_TRUE(c.model);
  const int64_t n_vocab = c.model->hparams().n_vocab;
  const std::vector<int32_t> tokens = prompt_tokens(37, n_vocab);
  const int64_t n = static_cast<int64_t>(tokens.size());

  std::vector<float> logits(n * n_vocab);  // [n, n_vocab]
  std::vector<int32_t> with_logits(n, -2);
  ASSERT_TRUE(run_prompt(*c.model, tokens, logits.data(), with_logits.data()).ok());
  std::vector<int32_t> expected(n);
  ASSERT_TRUE(ref::argmax(TensorView::contiguous(logits.data(), DType::kF32, {n, n_vocab}), expected).ok());
  EXPECT_EQ(with_logits, expected);

  std::vector<int32_t> ids_only(n, -2);
  const Status st = run_prompt(*c.model, tokens, nullptr, ids_only.data());
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(ids_only, expected);
  // Not every row the same token: the comparison means something.
  EXPECT_GT(std::set<int32_t>(expected.begin(), expected.end()).size(), 1u);
}

TEST(ForwardArgmax, NeitherLogitsNorIdsIsRefused) {
  Cpu c = load_golden();
  ASSERT_TRUE(c.model);
  const std::vector<int32_t> tokens = prompt_tokens(5, c.model->hparams().n_vocab);
  EXPECT_EQ(run_prompt(*c.model, tokens, nullptr, nullptr).code(), StatusCode::kInvalidArgument);
}

// Views that say they live on the GPU are refused before anything is written through them.
TEST(ForwardArgmax, CpuModelRefusesDeviceViews) {
  Cpu c = load_golden();
  ASSERT_TRUE(c.model);
  auto kv = c.model->allocate_kv(kv_cache_config_for(*c.model, 16));
  ASSERT_TRUE(kv.ok());
  std::vector<LayerKv> views((*kv)->layers().begin(), (*kv)->layers().end());
  views[1].v.device = Device::kCuda;
  const std::vector<int32_t> tokens = {1, 2, 3}, table = {0}, rows = {2};
  const SequenceBatch sb(table, 0, 3, AttentionMask::kCausal);
  ForwardBatch b;
  b.tokens = tokens;
  b.attn = sb.attn;
  b.output_rows = rows;
  std::vector<float> logits(c.model->hparams().n_vocab);
  EXPECT_EQ(c.model->forward(b, views, logits.data()).code(), StatusCode::kInvalidArgument);
}

// The generator's id-only decode path (plain greedy) against the sampler's path over full logits (a zero
// logit bias or asking for logprobs sends greedy decoding through the logits, with the same picks).
TEST(ForwardArgmax, GreedyThroughIdsEqualsGreedyThroughTheSampler) {
  Cpu c = load_golden();
  ASSERT_TRUE(c.model);
  const std::vector<int32_t> prompt = prompt_tokens(9, c.model->hparams().n_vocab);
  auto run = [&](const GenerateOptions& opt) {
    auto g = Generator::create(*c.model, nullptr, 64);
    EXPECT_TRUE(g.ok()) << g.status().to_string();
    if (!g.ok()) return std::vector<int32_t>{};
    auto r = (*g)->generate(prompt, opt);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? r->tokens : std::vector<int32_t>{};
  };
  GenerateOptions ids;
  ids.max_tokens = 24;
  ids.ignore_eos = true;
  ids.sampling.temperature = 0;
  ids.prefill_chunk = 4;  // the first token comes from the last of several prefill chunks
  GenerateOptions biased = ids;
  biased.sampling.logit_bias[0] = 0.0f;
  GenerateOptions logprobs = ids;
  logprobs.top_logprobs = 0;
  const std::vector<int32_t> a = run(ids);
  EXPECT_EQ(a.size(), 24u);
  EXPECT_EQ(a, run(biased));
  EXPECT_EQ(a, run(logprobs));
}

}  // namespace
}  // namespace saker
