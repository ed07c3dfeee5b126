// Speculative decoding on the CUDA backend equals plain greedy decoding token for token, on models whose
// every matmul is width-invariant (synthesized Q4_K_M files: Q4_K and Q6_K weights, rows of whole 256-element
// super-blocks; F16 and BF16 files: the float tensor-core kernel of OpsOptions::batch_invariant; Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1, IQ4_NL and IQ4_XS files: the int8 kernel, also under batch_invariant) and with the automatic attention
// (fixed key slices). Nothing here allows a near-tie: a verify row must give the bits of the one-row decode of the same
// position.
//   - alone: n-gram prompt lookup and a draft model (the target itself, so every draft must be accepted: a
//     single differing bit in a verify row's logits could reject one);
//   - batched: eight sequences, plain and speculating, in steps of up to 64 rows, against each alone;
//   - the DFlash drafter on the GPU (a random one of the target's shape, block 8), one drafter for eight
//     sequences: its drafts are mostly wrong, so most verify steps reject, and the tokens must not change.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <random>

#include "engine/engine.h"
#include "golden/engine_test_util.h"
#include "models/model.h"
#include "models/synth.h"
#include "ops/cuda_test_util.h"
#include "spec/dflash_proposer.h"
#include "spec/draft_model_proposer.h"
#include "spec/ngram_proposer.h"
#include "test_paths.h"

namespace saker {
namespace {

namespace fs = std::filesystem;
using testing::greedy_options;
using testing::make_engine;
using testing::Outcome;
using testing::run_alone;
using testing::run_batched;

// Sequences x (pending token + drafts) stays within the 64 rows whose matmuls are width-invariant.
constexpr int32_t kSeqs = 8;
constexpr int32_t kMaxDraft = 7;
constexpr int32_t kTokens = 48;

// A synthesized tiny model of one weight type on the GPU, made once per type for the whole suite.
struct Loaded {
  fs::path path;
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Model> model;
};

class CudaSpeculation : public ::testing::TestWithParam<const char*> {
 protected:
  static void TearDownTestSuite() {
    for (auto& [type, l] : loaded_) {
      l.model.reset();
      l.weights.reset();
      fs::remove(l.path);
    }
    loaded_.clear();
  }
  void SetUp() override {
    SAKER_REQUIRE_GPU();
    const std::string type = GetParam();
    auto it = loaded_.find(type);
    if (it == loaded_.end()) {
      Loaded l;
      l.path = testing::temp_dir() / ("cuda-speculation-tiny-" + type + ".gguf");
      SynthOptions so;
      so.preset = "tiny";
      so.type = type;
      so.seed = 7;
      ASSERT_TRUE(write_synthetic_model(so, l.path.string()).ok());
      auto w = ModelWeights::open(l.path.string());
      ASSERT_TRUE(w.ok()) << w.status().to_string();
      l.weights = std::move(w).value();
      OpsOptions ops;
      ops.device = Device::kCuda;
      ops.batch_invariant = true;  // F16 / BF16 and 32-element-format matmuls on the width-invariant kernels
      auto m = create_model(l.weights, ops);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      l.model = std::move(m).value();
      it = loaded_.emplace(type, std::move(l)).first;
    }
    model_ = it->second.model.get();
    weights_ = &it->second.weights;
  }

  // Random prompts of 20-60 tokens over the model's vocabulary (ids 2 and up).
  static std::vector<std::vector<int32_t>> prompts(size_t n) {
    std::mt19937 rng(11);
    std::vector<std::vector<int32_t>> out(n);
    for (auto& p : out) {
      p.resize(20 + rng() % 41);
      for (int32_t& t : p) t = 2 + static_cast<int32_t>(rng() % 1000);
    }
    return out;
  }

  // Steps of at most 64 rows: every row of every step (prefill chunks included) takes the width-invariant
  // kernels, so a run's tokens depend neither on the batch nor on how prompts were cut into chunks.
  static EngineOptions engine_options() {
    EngineOptions eo;
    eo.n_ctx = 256;
    eo.prefill_chunk = 64;
    eo.step_tokens = 64;
    return eo;
  }

  static ProposerFactory ngram() {
    return []() -> Result<std::unique_ptr<Proposer>> {
      spec::NgramOptions o;
      o.max_draft = kMaxDraft;
      SAKER_ASSIGN_OR_RETURN(auto p, spec::NgramProposer::create(o));
      return std::unique_ptr<Proposer>(std::move(p));
    };
  }
  // The target drafting for itself: its greedy chain is what verification must accept. One draft batch for
  // every sequence, as the CLI runs it.
  ProposerFactory self_draft(int32_t n_slots = kSeqs) {
    auto f = spec::DraftModelProposer::factory(*model_, n_slots, 256, kMaxDraft);
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    return f.ok() ? *f : nullptr;
  }

  // A random DFlash drafter of the target's shape on the GPU, block kMaxDraft + 1, a slot per sequence; its
  // chain, or trees of tree_budget nodes.
  ProposerFactory dflash_on_gpu(int32_t n_slots, int32_t tree_budget = 0) {
    auto dw = spec::DFlashWeights::random(*weights_, 2, kMaxDraft + 1, 3);
    EXPECT_TRUE(dw.ok()) << dw.status().to_string();
    if (!dw.ok()) return nullptr;
    OpsOptions gpu;
    gpu.device = Device::kCuda;
    auto f = spec::DFlashProposer::factory(*dw, n_slots, engine_options().n_ctx, tree_budget, gpu);
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    return f.ok() ? *f : nullptr;
  }

  Model* model_ = nullptr;
  const std::shared_ptr<const ModelWeights>* weights_ = nullptr;
  static inline std::map<std::string, Loaded> loaded_;
};

// Expects every request's tokens to equal `plain`; returns the draft statistics summed over the requests.
// all_accepted: every verify step but a request's last (cut by max_tokens) commits all its drafts.
DraftStats expect_equal(const std::vector<Outcome>& got, const std::vector<GenerateResult>& plain,
                        const std::string& what, bool all_accepted = false) {
  DraftStats sum;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!got[i].result.ok()) {
      ADD_FAILURE() << what << " request " << i << ": " << got[i].result.status().to_string();
      continue;
    }
    EXPECT_EQ(got[i].result->tokens, plain[i].tokens) << what << " request " << i;
    if (!got[i].result->draft) {
      ADD_FAILURE() << what << " request " << i << " has no draft statistics";
      continue;
    }
    const DraftStats& d = *got[i].result->draft;
    if (all_accepted) {
      int64_t short_steps = 0;  // verify steps that committed fewer than kMaxDraft + 1 tokens
      for (size_t k = 0; k + 1 < d.tokens_per_step.size() && k < static_cast<size_t>(kMaxDraft); ++k) {
        short_steps += d.tokens_per_step[k];
      }
      EXPECT_LE(short_steps, 1) << what << " request " << i << ": a verify row rejected the target's own token";
    }
    sum.verify_steps += d.verify_steps;
    sum.committed_tokens += d.committed_tokens;
    sum.drafted_tokens += d.drafted_tokens;
  }
  std::printf("%s: %lld verify steps, %lld tokens committed, %.2f per step, %lld drafted\n", what.c_str(),
              static_cast<long long>(sum.verify_steps), static_cast<long long>(sum.committed_tokens),
              sum.mean_accepted_length(), static_cast<long long>(sum.drafted_tokens));
  return sum;
}

std::vector<Outcome> run_speculating(Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<GenerateOptions>& opts, EngineOptions eo, int32_t max_seqs,
                                     ProposerFactory proposer) {
  eo.max_seqs = max_seqs;
  eo.proposer = std::move(proposer);
  eo.adaptive_drafts = false;  // always the longest chain: the widest verify steps
  auto engine = make_engine(model, eo);
  if (!engine) return std::vector<Outcome>(prompts.size());
  if (max_seqs > 1) return run_batched(*engine, prompts, opts);
  std::vector<Outcome> got(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    got[i].result = engine->generate(prompts[i], opts[i]);
    got[i].done_calls = 1;
  }
  return got;
}

TEST_P(CudaSpeculation, AloneEqualsPlainGreedyDecoding) {
  const auto ps = prompts(kSeqs);
  const std::vector<GenerateOptions> opts(ps.size(), greedy_options(kTokens));
  const auto plain = run_alone(*model_, ps, opts, engine_options());
  expect_equal(run_speculating(*model_, ps, opts, engine_options(), 1, ngram()), plain, "n-gram alone");
  const DraftStats self = expect_equal(run_speculating(*model_, ps, opts, engine_options(), 1, self_draft()), plain,
                                       "self-draft alone", /*all_accepted=*/true);
  EXPECT_GT(self.mean_accepted_length(), kMaxDraft);
}

TEST_P(CudaSpeculation, BatchedEqualsPlainDecodingAlone) {
  const auto ps = prompts(kSeqs);
  const std::vector<GenerateOptions> opts(ps.size(), greedy_options(kTokens));
  const auto plain = run_alone(*model_, ps, opts, engine_options());
  // Plain batched decoding first: the same tokens as alone (rows of 1-64, prefill chunks and decode tokens of
  // eight sequences, give each row the bits it gets alone).
  EngineOptions eo = engine_options();
  eo.max_seqs = kSeqs;
  auto plain_engine = make_engine(*model_, eo);
  ASSERT_NE(plain_engine, nullptr);
  const std::vector<Outcome> batched = run_batched(*plain_engine, ps, opts);
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_TRUE(batched[i].result.ok()) << batched[i].result.status().to_string();
    EXPECT_EQ(batched[i].result->tokens, plain[i].tokens) << "plain batched request " << i;
  }
  expect_equal(run_speculating(*model_, ps, opts, engine_options(), kSeqs, ngram()), plain, "n-gram batched");
  const DraftStats self = expect_equal(run_speculating(*model_, ps, opts, engine_options(), kSeqs, self_draft()),
                                       plain, "self-draft batched", /*all_accepted=*/true);
  EXPECT_GT(self.mean_accepted_length(), kMaxDraft);
}

TEST_P(CudaSpeculation, DFlashDrafterOnTheGpuKeepsPlainDecodingsTokens) {
  const auto ps = prompts(kSeqs);
  const std::vector<GenerateOptions> opts(ps.size(), greedy_options(kTokens));
  const auto plain = run_alone(*model_, ps, opts, engine_options());
  const ProposerFactory alone = dflash_on_gpu(1);
  ASSERT_TRUE(alone);
  const DraftStats one = expect_equal(run_speculating(*model_, ps, opts, engine_options(), 1, alone), plain,
                                      "DFlash (random) on the GPU, alone");
  EXPECT_GT(one.verify_steps, 0);
  const ProposerFactory shared = dflash_on_gpu(kSeqs);
  ASSERT_TRUE(shared);
  const DraftStats all = expect_equal(run_speculating(*model_, ps, opts, engine_options(), kSeqs, shared), plain,
                                      "DFlash (random) on the GPU, batched");
  EXPECT_GT(all.verify_steps, 0);
}

// Draft trees verified on the GPU: a node reads its ancestors through plain decoding's view of them (the
// attention's exact trees), so the committed tokens equal plain decoding's. Trees of kMaxDraft nodes keep a
// step of eight sequences within 64 rows.
TEST_P(CudaSpeculation, DFlashTreesOnTheGpuKeepPlainDecodingsTokens) {
  const auto ps = prompts(kSeqs);
  const std::vector<GenerateOptions> opts(ps.size(), greedy_options(kTokens));
  const auto plain = run_alone(*model_, ps, opts, engine_options());
  const ProposerFactory alone = dflash_on_gpu(1, kMaxDraft);
  ASSERT_TRUE(alone);
  const DraftStats one = expect_equal(run_speculating(*model_, ps, opts, engine_options(), 1, alone), plain,
                                      "DFlash trees (random) on the GPU, alone");
  EXPECT_GT(one.verify_steps, 0);
  const ProposerFactory shared = dflash_on_gpu(kSeqs, kMaxDraft);
  ASSERT_TRUE(shared);
  const DraftStats all = expect_equal(run_speculating(*model_, ps, opts, engine_options(), kSeqs, shared), plain,
                                      "DFlash trees (random) on the GPU, batched");
  EXPECT_GT(all.verify_steps, 0);
}

INSTANTIATE_TEST_SUITE_P(Types, CudaSpeculation, ::testing::Values("q4_k_m", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl",
                                           "iq4_xs"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace saker
