#include "spec/dflash_proposer.h"

#include <algorithm>

#include "spec/draft_tree.h"

namespace saker::spec {
namespace {

// A tree is built from the top tokens of each depth: more than kMaxTopK (16) per depth never made a node of a
// budget that fits a verify step.
constexpr int32_t kMaxTopPerDepth = kMaxTopK;

Status check_tree_budget(int32_t tree_budget) {
  if (tree_budget < 0) return make_error(StatusCode::kInvalidArgument, "draft tree budget must be >= 0");
  return {};
}

}  // namespace

Result<ProposerFactory> DFlashProposer::factory(std::shared_ptr<const DFlashWeights> weights, int32_t n_slots,
                                                int64_t n_ctx, int32_t tree_budget, const OpsOptions& ops) {
  if (!weights) return make_error(StatusCode::kInvalidArgument, "speculative decoding needs a drafter");
  SAKER_RETURN_IF_ERROR(check_tree_budget(tree_budget));
  const int64_t drafter_ctx = n_ctx + weights->config.block_size;  // the context plus one block
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<DFlashDrafter> d,
                         DFlashDrafter::create(std::move(weights), drafter_ctx, ops, n_slots));
  std::shared_ptr<DFlashDrafter> drafter = std::move(d);
  return ProposerFactory([drafter, tree_budget]() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(auto p, create(drafter, tree_budget));
    return std::unique_ptr<Proposer>(std::move(p));
  });
}

Result<std::unique_ptr<DFlashProposer>> DFlashProposer::create(std::shared_ptr<const DFlashWeights> weights,
                                                               int64_t n_ctx, int32_t tree_budget,
                                                               const OpsOptions& ops) {
  if (!weights) return make_error(StatusCode::kInvalidArgument, "speculative decoding needs a drafter");
  SAKER_RETURN_IF_ERROR(check_tree_budget(tree_budget));
  const int64_t drafter_ctx = n_ctx + weights->config.block_size;
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<DFlashDrafter> d, DFlashDrafter::create(std::move(weights), drafter_ctx, ops));
  return create(std::shared_ptr<DFlashDrafter>(std::move(d)), tree_budget);
}

Result<std::unique_ptr<DFlashProposer>> DFlashProposer::create(std::shared_ptr<DFlashDrafter> drafter,
                                                               int32_t tree_budget) {
  if (!drafter) return make_error(StatusCode::kInvalidArgument, "speculative decoding needs a drafter");
  SAKER_RETURN_IF_ERROR(check_tree_budget(tree_budget));
  return std::unique_ptr<DFlashProposer>(new DFlashProposer(std::move(drafter), tree_budget));
}

int64_t DFlashProposer::max_nodes() const {
  return tree_budget_ > 0 ? tree_budget_ : drafter_->config().block_size - 1;
}

Status DFlashProposer::hold_slot() {
  if (slot_ >= 0) return {};
  SAKER_ASSIGN_OR_RETURN(slot_, drafter_->acquire());
  return {};
}

void DFlashProposer::reset() {
  drafter_->release(slot_);  // a preempted sequence waits without pages; it takes a slot again when it runs
  slot_ = -1;
  depth_ = 0;
}

Result<int64_t> DFlashProposer::match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) {
  SAKER_RETURN_IF_ERROR(hold_slot());
  return drafter_->match_prefix(slot_, tokens, max_tokens);
}

void DFlashProposer::commit_context(std::span<const int32_t> tokens) {
  if (slot_ >= 0) drafter_->commit(slot_, tokens);
}

Status DFlashProposer::add_context(int64_t first, const FloatRows& taps) {
  SAKER_RETURN_IF_ERROR(hold_slot());
  return drafter_->add_context(slot_, first, taps);
}

Status DFlashProposer::request(std::span<const int32_t> tokens, int64_t max_depth) {
  depth_ = 0;
  if (tokens.empty()) return make_error(StatusCode::kInvalidArgument, "propose: no pending token");
  const int64_t depth = std::min<int64_t>(drafter_->config().block_size - 1, max_depth);
  if (depth <= 0) return {};
  SAKER_RETURN_IF_ERROR(hold_slot());
  SAKER_RETURN_IF_ERROR(
      drafter_->request(slot_, tokens.back(), tree_budget_ > 0 ? std::min(tree_budget_, kMaxTopPerDepth) : 0));
  depth_ = depth;
  return {};
}

Status DFlashProposer::take(DraftNodes* out) {
  out->clear();
  const int64_t depth = depth_;
  depth_ = 0;
  if (depth <= 0) return {};
  if (tree_budget_ > 0) {
    const std::span<const DFlashDrafter::TopTokens> top = drafter_->top(slot_);
    if (static_cast<int64_t>(top.size()) < depth) return make_error(StatusCode::kInternal, "drafter: no block ran");
    std::vector<DepthCandidates> depths;
    for (int64_t d = 0; d < depth; ++d) depths.push_back({top[d].ids, top[d].logprobs});
    const DraftTree tree = build_draft_tree(depths, tree_budget_);
    out->tokens = tree.tokens;
    out->parent = tree.parent;
    out->depth = tree.depth;
    return {};
  }
  const std::span<const int32_t> chain = drafter_->drafts(slot_);
  if (static_cast<int64_t>(chain.size()) < depth) return make_error(StatusCode::kInternal, "drafter: no block ran");
  for (int64_t d = 0; d < depth; ++d) {
    out->tokens.push_back(chain[d]);
    out->parent.push_back(static_cast<int32_t>(d - 1));
    out->depth.push_back(static_cast<int32_t>(d + 1));
  }
  return {};
}

Status DFlashProposer::propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) {
  SAKER_RETURN_IF_ERROR(request(tokens, max_depth));
  if (depth_ > 0) SAKER_RETURN_IF_ERROR(drafter_->run());
  return take(out);
}

}  // namespace saker::spec
