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
#include <string>
#include <string_view>
#include <vector>

#include "engine/generator_types.h"
#include "models/kv_cache.h"
#include "models/model.h"
#include "spec/dflash_drafter.h"
#include "text/tokenizer.h"

namespace saker::spec {

class SpeculativeGenerator : public SequenceGenerator {
 public:
  // A verify forward carries the root plus the tree's nodes; on the CPU it must stay under the 32 rows from
  // which quantized matmuls switch to BLAS, whose rounding differs from one-row decode.
  static constexpr int32_t kMaxTreeNodes = 30;

  // n_ctx: the longest prompt + generation held. The drafter (owned: it holds one sequence's context) must
  // have been loaded for this target, which must run on the CPU backend (the only one that taps hidden states
  // so far). tree_budget 0: verify the drafter's chain (its argmax at every depth); N in 1..kMaxTreeNodes: a
  // tree of up to N draft nodes grown best-first from its top tokens per depth (draft_tree.h).
  static Result<std::unique_ptr<SpeculativeGenerator>> create(Model& target, std::unique_ptr<DFlashDrafter> drafter,
                                                              const text::Tokenizer* tokenizer, int64_t n_ctx,
                                                              int32_t tree_budget = 0);

  // A generator with its own drafter over shared drafter weights (one copy for every server slot).
  static Result<std::unique_ptr<SpeculativeGenerator>> create(Model& target,
                                                              std::shared_ptr<const DFlashWeights> drafter_weights,
                                                              const text::Tokenizer* tokenizer, int64_t n_ctx,
                                                              int32_t tree_budget, const OpsOptions& ops);
  // Loads the drafter folder for `target` (whose weights it borrows) and creates the generator.
  static Result<std::unique_ptr<SpeculativeGenerator>> load(Model& target,
                                                            std::shared_ptr<const ModelWeights> target_weights,
                                                            const std::string& drafter_dir,
                                                            const text::Tokenizer* tokenizer, int64_t n_ctx,
                                                            int32_t tree_budget, const OpsOptions& ops);

  // As Generator::generate (same options, same output for the same sampling parameters and seed); the result
  // carries DraftStats.
  Result<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<bool(std::string_view)>& on_text = nullptr) override;
  int64_t n_ctx() const override { return n_ctx_; }
  const DFlashDrafter& drafter() const { return *drafter_; }
  int32_t tree_budget() const { return tree_budget_; }

 private:
  SpeculativeGenerator(Model& target, std::unique_ptr<DFlashDrafter> drafter, const text::Tokenizer* tokenizer,
                       int64_t n_ctx, int32_t tree_budget, std::unique_ptr<KvStorage> kv);
  // Target forward over tokens at slots first.. with hidden-state taps of every row. parents empty: a causal
  // chain (positions = slots), logits of the last row only. Otherwise a tree rooted at slot `first`
  // (parents[i]: batch index of token i's parent, -1 for the root; positions[i] = first + depth), logits of
  // every row.
  Status forward(std::span<const int32_t> tokens, int64_t first, std::span<const int32_t> parents,
                 std::span<const int32_t> positions, std::vector<float>* logits, std::vector<float>* taps);

  Model& target_;
  std::unique_ptr<DFlashDrafter> drafter_;
  const text::Tokenizer* tokenizer_;
  int64_t n_ctx_;
  int32_t tree_budget_;
  std::unique_ptr<KvStorage> kv_;  // the target's KV, from target.allocate_kv
  std::vector<int32_t> block_table_;
};

}  // namespace saker::spec
