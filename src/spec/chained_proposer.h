#pragma once
// ChainedProposer: several proposers tried in order each step; the first that drafts anything wins (n-gram
// prompt lookup first, which costs nothing and is often right in repetitive text, then a drafter or a draft
// model for the rest). Every proposer sees every context update, so each stays in step with the sequence
// whether or not it drafted. At most one of them may read hidden states (their tap layers are the chain's).
#include <memory>
#include <vector>

#include "engine/proposer.h"

namespace saker::spec {

class ChainedProposer : public Proposer {
 public:
  // Refuses an empty list and two proposers that both read hidden states.
  static Result<std::unique_ptr<ChainedProposer>> create(std::vector<std::unique_ptr<Proposer>> proposers);

  std::span<const int32_t> tap_layers() const override;
  void reset() override;
  Result<int64_t> match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) override;
  void commit_context(std::span<const int32_t> tokens) override;
  Status add_context(int64_t first, const FloatRows& taps) override;
  // Every proposer that reads taps reads them on the device.
  bool reads_device_taps() const override;
  Status settle_context() override;
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  // In order: a proposer that drafts at once and finds something wins; one that batches (a shared drafter)
  // is asked and wins whatever it finds, so later ones are never asked after it.
  Status request(std::span<const int32_t> tokens, int64_t max_depth) override;
  DraftBatch* batch() override { return deferred_ ? deferred_->batch() : nullptr; }
  Status take(DraftNodes* out) override;
  int64_t max_nodes() const override;
  bool drafts_trees() const override;

 private:
  explicit ChainedProposer(std::vector<std::unique_ptr<Proposer>> proposers) : proposers_(std::move(proposers)) {}
  std::vector<std::unique_ptr<Proposer>> proposers_;
  Proposer* deferred_ = nullptr;  // the batching proposer this step's request went to
  DraftNodes found_;              // else what an at-once proposer found
};

}  // namespace saker::spec
