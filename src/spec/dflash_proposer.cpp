#include "spec/dflash_proposer.h"

#include <algorithm>

#include "spec/draft_tree.h"

namespace saker::spec {

Result<std::unique_ptr<DFlashProposer>> DFlashProposer::create(std::shared_ptr<const DFlashWeights> weights,
                                                               int64_t n_ctx, int32_t tree_budget,
                                                               const OpsOptions& ops) {
  if (!weights) return make_error(StatusCode::kInvalidArgument, "speculative decoding needs a drafter");
  if (tree_budget < 0) return make_error(StatusCode::kInvalidArgument, "draft tree budget must be >= 0");
  const int64_t drafter_ctx = n_ctx + weights->config.block_size;  // the context plus one block
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<DFlashDrafter> d, DFlashDrafter::create(std::move(weights), drafter_ctx, ops));
  return std::unique_ptr<DFlashProposer>(new DFlashProposer(std::move(d), tree_budget));
}

int64_t DFlashProposer::max_nodes() const {
  return tree_budget_ > 0 ? tree_budget_ : drafter_->config().block_size - 1;
}

Status DFlashProposer::propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) {
  out->clear();
  if (tokens.empty()) return make_error(StatusCode::kInvalidArgument, "propose: no pending token");
  const int32_t pending = tokens.back();
  const int64_t depth = std::min<int64_t>(drafter_->config().block_size - 1, max_depth);
  if (depth <= 0) return {};
  if (tree_budget_ > 0) {
    SAKER_RETURN_IF_ERROR(drafter_->propose_top(pending, std::min(tree_budget_, 16), &top_));
    std::vector<DepthCandidates> depths;
    for (int64_t d = 0; d < depth; ++d) depths.push_back({top_[d].ids, top_[d].logprobs});
    const DraftTree tree = build_draft_tree(depths, tree_budget_);
    out->tokens = tree.tokens;
    out->parent = tree.parent;
    out->depth = tree.depth;
    return {};
  }
  SAKER_RETURN_IF_ERROR(drafter_->propose(pending, &chain_));
  for (int64_t d = 0; d < depth; ++d) {
    out->tokens.push_back(chain_[d]);
    out->parent.push_back(static_cast<int32_t>(d - 1));
    out->depth.push_back(static_cast<int32_t>(d + 1));
  }
  return {};
}

}  // namespace saker::spec
