#pragma once
// ReplayProposer (`saker bench --spec replay:L`): drafts the target's own greedy continuation, recorded by a
// plain run beforehand, with one token corrupted so that each verify step commits L tokens on average
// (L - 1 accepted drafts and the target's own token). It measures what the speculation machinery costs at a
// chosen acceptance (verify width, acceptance walk, K/V commits) with no drafter quality in the way; its
// drafts are free, so a real drafter's time comes on top.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/proposer.h"

namespace saker::spec {

class ReplayProposer : public Proposer {
 public:
  using References = std::vector<std::vector<int32_t>>;

  // Each request's reference: its prompt followed by the continuation plain decoding gave it.
  static std::shared_ptr<const References> references(const References& prompts, const References& continuations);
  // The engine's per-sequence factory (EngineOptions::proposer) over shared references; the arguments are
  // checked here, once.
  static Result<ProposerFactory> factory(std::shared_ptr<const References> references, double mean_commit,
                                         int32_t max_draft, int32_t n_vocab);

  // references: each request's prompt followed by its greedy continuation (a sequence drafts from the one
  // whose prompt its tokens start with); mean_commit L in [1, max_draft + 1]; max_draft: drafts per step;
  // n_vocab: the id range a corrupted token stays in (>= 2).
  static Result<std::unique_ptr<ReplayProposer>> create(
      std::shared_ptr<const std::vector<std::vector<int32_t>>> references, double mean_commit, int32_t max_draft,
      int32_t n_vocab);

  std::span<const int32_t> tap_layers() const override { return {}; }
  void reset() override { steps_ = 0; }
  Status add_context(int64_t, const FloatRows&) override { return {}; }
  // A chain of up to min(max_depth, max_draft) tokens: the reference's next tokens, the first
  // accepted_this_step() of them intact and the one after changed. Nothing when the sequence has left its
  // reference (a target whose numbers depend on the batch width can part at a near-tie) or the reference ends.
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  int64_t max_nodes() const override { return max_draft_; }

  // Drafts to leave intact at draft step `step`: floor((step + 1)(L - 1)) - floor(step (L - 1)), so that any
  // run of steps accepts L - 1 on average (exactly L - 1 each for a whole L).
  static int64_t accepted_at(int64_t step, double mean_commit);

 private:
  ReplayProposer(std::shared_ptr<const std::vector<std::vector<int32_t>>> references, double mean_commit,
                 int32_t max_draft, int32_t n_vocab)
      : references_(std::move(references)), mean_commit_(mean_commit), max_draft_(max_draft), n_vocab_(n_vocab) {}

  std::shared_ptr<const std::vector<std::vector<int32_t>>> references_;
  double mean_commit_;
  int32_t max_draft_, n_vocab_;
  const std::vector<int32_t>* reference_ = nullptr;  // found at the first propose()
  int64_t steps_ = 0;
};

}  // namespace saker::spec
