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
  Status add_context(int64_t first, int64_t n, const float* taps) override;
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  int64_t max_nodes() const override;
  bool drafts_trees() const override;

 private:
  explicit ChainedProposer(std::vector<std::unique_ptr<Proposer>> proposers) : proposers_(std::move(proposers)) {}
  std::vector<std::unique_ptr<Proposer>> proposers_;
};

}  // namespace saker::spec
