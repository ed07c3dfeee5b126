#pragma once
// ShadowedProposer: drafts what its lead proposer drafts, while a shadow proposer (a real drafter) is fed and
// asked exactly as if it were drafting, and its drafts are dropped. The lead must draft at once (a replay
// proposer does). A failing shadow is logged and never costs the lead's drafts. `saker bench --spec replay:L` pairs the
// replay proposer (chosen acceptance, free drafts) with a drafter of real size, so the replay's figures carry
// a drafter's cost: its taps, its context fusing and its block forwards, batched over the sequences as in a
// real run.
#include <memory>

#include "engine/proposer.h"

namespace saker::spec {

class ShadowedProposer : public Proposer {
 public:
  // Refuses a null lead or shadow, and a lead that reads hidden states (the taps are the shadow's).
  static Result<std::unique_ptr<ShadowedProposer>> create(std::unique_ptr<Proposer> lead,
                                                          std::unique_ptr<Proposer> shadow);
  // The engine's factory: each sequence's lead and shadow from their own factories.
  static ProposerFactory factory(ProposerFactory lead, ProposerFactory shadow);

  std::span<const int32_t> tap_layers() const override { return shadow_->tap_layers(); }
  void reset() override;
  Result<int64_t> match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) override;
  void commit_context(std::span<const int32_t> tokens) override;
  Status add_context(int64_t first, const FloatRows& taps) override;
  bool reads_device_taps() const override { return shadow_->reads_device_taps(); }
  Status settle_context() override { return shadow_->settle_context(); }
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  Status request(std::span<const int32_t> tokens, int64_t max_depth) override;
  // The shadow's batch: the lead drafts at once (a replay), so the shadow is what the step waits for.
  DraftBatch* batch() override;
  Status take(DraftNodes* out) override;
  int64_t max_nodes() const override { return lead_->max_nodes(); }
  bool drafts_trees() const override { return lead_->drafts_trees(); }

 private:
  ShadowedProposer(std::unique_ptr<Proposer> lead, std::unique_ptr<Proposer> shadow)
      : lead_(std::move(lead)), shadow_(std::move(shadow)) {}

  std::unique_ptr<Proposer> lead_, shadow_;
  DraftNodes dropped_;
  Status shadowing_;  // the shadow's request this step (a failed one is skipped, and logged)
};

}  // namespace saker::spec
