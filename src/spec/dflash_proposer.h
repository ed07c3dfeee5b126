#pragma once
// DFlashProposer: the DFlash block drafter as the engine's Proposer, for one sequence: its drafter state (the
// fused context and its own KV cache) over weights shared by every sequence. Proposes the drafter's argmax
// chain, or a best-first tree of up to tree_budget nodes from its top tokens per depth (draft_tree.h).
#include <memory>

#include "engine/proposer.h"
#include "spec/dflash_drafter.h"

namespace saker::spec {

class DFlashProposer : public Proposer {
 public:
  // n_ctx: the most positions the sequence reaches. tree_budget 0: the chain; 1..: a tree of that many nodes.
  static Result<std::unique_ptr<DFlashProposer>> create(std::shared_ptr<const DFlashWeights> weights, int64_t n_ctx,
                                                        int32_t tree_budget, const OpsOptions& ops);

  std::span<const int32_t> target_layers() const { return drafter_->target_layers(); }
  std::span<const int32_t> tap_layers() const override { return drafter_->target_layers(); }
  void reset() override { drafter_->reset(); }
  Status add_context(int64_t first, int64_t n, const float* taps) override {
    return drafter_->add_context(first, n, taps);
  }
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  int64_t max_nodes() const override;
  bool drafts_trees() const override { return tree_budget_ > 0; }

 private:
  DFlashProposer(std::unique_ptr<DFlashDrafter> drafter, int32_t tree_budget)
      : drafter_(std::move(drafter)), tree_budget_(tree_budget) {}

  std::unique_ptr<DFlashDrafter> drafter_;
  int32_t tree_budget_;
  std::vector<int32_t> chain_;
  std::vector<DFlashDrafter::TopTokens> top_;
};

}  // namespace saker::spec
