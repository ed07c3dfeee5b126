#pragma once
// SpeculativeGenerator: decoding of one sequence with a DFlash drafter, verified as a chain or a tree.
//
// Each step: the drafter proposes tokens after the pending token t (position s): a chain (its argmax at each
// depth) or a tree (draft_tree.h). The target runs once over [t, nodes...] with its hidden states tapped; the
// nodes sit in slots s+1.. and a node sees the committed prefix, its ancestors and itself (a chain is the tree
// whose node i is the parent of node i+1). The walk starts at the root: the row of the current node goes
// through the same Sampler plain decoding uses (bias, penalties over the history through that node, then
// greedy argmax or a draw); if the token is one of the node's children the walk descends, otherwise that
// token becomes the next pending token. For deterministic drafts this is the lossless rule of the
// speculative-decoding notes (sections 1 and 3: draw y ~ p_u, descend iff y is a child), and it makes exactly
// one sampler call per generated token, in order, as plain decoding does: with the same seed the output is
// plain decoding's, token for token, whenever verify rows' logits equal one-row decode logits (the CPU
// backend's integer and float matmul paths guarantee it for batches under BLAS's threshold). The accepted
// nodes' K/V rows move to consecutive slots; rejected ones are overwritten by the next step.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/generator.h"
#include "engine/kv_cache.h"
#include "models/model.h"
#include "sample/sampling_params.h"
#include "spec/dflash_drafter.h"

namespace saker::spec {

struct SpeculativeStats {
  int64_t verify_steps = 0;
  int64_t committed_tokens = 0;              // over all verify steps (accepted drafts + the target's token)
  std::vector<int64_t> tokens_per_step;      // [block_size]: [k - 1] = verify steps that committed k tokens
  // Mean tokens committed per verify step: the drafter's mean accepted length (block, temperature 0).
  double mean_accepted_length() const {
    return verify_steps ? static_cast<double>(committed_tokens) / static_cast<double>(verify_steps) : 0.0;
  }
};

struct SpeculativeResult {
  std::vector<int32_t> tokens;  // generated ids, at most max_tokens
  FinishReason finish = FinishReason::kLength;
  SpeculativeStats stats;
  double prompt_ms = 0;
  double generate_ms = 0;
};

struct SpeculativeOptions {
  int32_t max_tokens = 128;
  // 0: verify the drafter's chain (its argmax at every depth). N > 0: verify a tree of up to N draft nodes
  // grown best-first from the drafter's top tokens per depth (draft_tree.h); at most kMaxTreeNodes.
  int32_t tree_budget = 0;
  // As for plain decoding; the default here is greedy (temperature 0).
  SamplingParams sampling = [] {
    SamplingParams p;
    p.temperature = 0.0f;
    return p;
  }();
  int32_t prefill_chunk = 512;
  // Ends generation at an end-of-generation token (not emitted); null: never (benchmarks).
  std::function<bool(int32_t)> is_end;
  // Receives each generated token in order; return false to stop (FinishReason::kCancelled).
  std::function<bool(int32_t)> on_token;
};

class SpeculativeGenerator {
 public:
  // A verify forward carries the root plus the tree's nodes; on the CPU it must stay under the 32 rows from
  // which quantized matmuls switch to BLAS, whose rounding differs from one-row decode.
  static constexpr int32_t kMaxTreeNodes = 30;

  // n_ctx: the longest prompt + generation held. The drafter must have been loaded for this target, which
  // must run on the CPU backend (the only one that taps hidden states so far).
  static Result<std::unique_ptr<SpeculativeGenerator>> create(Model& target, DFlashDrafter& drafter, int64_t n_ctx);

  Result<SpeculativeResult> generate(std::span<const int32_t> prompt, const SpeculativeOptions& options);

 private:
  SpeculativeGenerator(Model& target, DFlashDrafter& drafter, int64_t n_ctx, KvCache kv);
  // Target forward over tokens at slots first.. with hidden-state taps of every row. parents empty: a causal
  // chain (positions = slots), logits of the last row only. Otherwise a tree rooted at slot `first`
  // (parents[i]: batch index of token i's parent, -1 for the root; positions[i] = first + depth), logits of
  // every row.
  Status forward(std::span<const int32_t> tokens, int64_t first, std::span<const int32_t> parents,
                 std::span<const int32_t> positions, std::vector<float>* logits, std::vector<float>* taps);

  Model& target_;
  DFlashDrafter& drafter_;
  int64_t n_ctx_;
  KvCache kv_;
  std::vector<int32_t> block_table_;
};

}  // namespace saker::spec
