#pragma once
// DFlashProposer: the DFlash block drafter as the engine's Proposer, for one sequence: a slot of a drafter
// (its fused context and KV pages) that every speculating sequence of the engine shares, so the weights are
// prepared once and one forward drafts for all of them (Proposer::request / DraftBatch). Proposes the
// drafter's argmax chain, or a best-first tree of up to tree_budget nodes from its top tokens per depth
// (draft_tree.h). The slot is taken at admission (match_prefix), the first context or the first request, and
// given back at reset().
#include <memory>

#include "engine/proposer.h"
#include "spec/dflash_drafter.h"

namespace saker::spec {

class DFlashProposer : public Proposer {
 public:
  // Proposers over one shared drafter: n_slots sequences of up to n_ctx positions draft at once (the engine's
  // max_seqs and n_ctx). tree_budget 0: the chain; 1..: a tree of that many nodes. The drafter's weights are
  // prepared here, once; an error names what failed.
  static Result<ProposerFactory> factory(std::shared_ptr<const DFlashWeights> weights, int32_t n_slots,
                                         int64_t n_ctx, int32_t tree_budget, const OpsOptions& ops);
  // One proposer over a drafter of its own (one slot).
  static Result<std::unique_ptr<DFlashProposer>> create(std::shared_ptr<const DFlashWeights> weights, int64_t n_ctx,
                                                        int32_t tree_budget, const OpsOptions& ops);
  // One proposer over a slot of `drafter`.
  static Result<std::unique_ptr<DFlashProposer>> create(std::shared_ptr<DFlashDrafter> drafter, int32_t tree_budget);
  ~DFlashProposer() override { drafter_->release(slot_); }

  std::span<const int32_t> target_layers() const { return drafter_->target_layers(); }
  std::span<const int32_t> tap_layers() const override { return drafter_->target_layers(); }
  void reset() override;
  // The drafter's cached context pages for the prompt's prefix (DFlashDrafter::match_prefix).
  Result<int64_t> match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) override;
  // Keys the slot's fused context pages under the sequence's tokens (DFlashDrafter::commit).
  void commit_context(std::span<const int32_t> tokens) override;
  Status add_context(int64_t first, const FloatRows& taps) override;
  // A drafter on a GPU reads the target's taps there.
  bool reads_device_taps() const override { return drafter_->device() == Device::kCuda; }
  Status settle_context() override { return drafter_->settle(); }
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  Status request(std::span<const int32_t> tokens, int64_t max_depth) override;
  DraftBatch* batch() override { return depth_ > 0 ? drafter_.get() : nullptr; }
  Status take(DraftNodes* out) override;
  int64_t max_nodes() const override;
  bool drafts_trees() const override { return tree_budget_ > 0; }

 private:
  DFlashProposer(std::shared_ptr<DFlashDrafter> drafter, int32_t tree_budget)
      : drafter_(std::move(drafter)), tree_budget_(tree_budget) {}
  Status hold_slot();

  std::shared_ptr<DFlashDrafter> drafter_;
  int32_t tree_budget_;
  int32_t slot_ = -1;   // -1: none held
  int64_t depth_ = 0;   // the requested draft's depth (0: nothing requested)
};

}  // namespace saker::spec
