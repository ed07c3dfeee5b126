#include "spec/shadowed_proposer.h"

#include "core/log.h"

namespace saker::spec {

Result<std::unique_ptr<ShadowedProposer>> ShadowedProposer::create(std::unique_ptr<Proposer> lead,
                                                                   std::unique_ptr<Proposer> shadow) {
  if (!lead || !shadow) return make_error(StatusCode::kInvalidArgument, "shadowed proposer: a null proposer");
  if (lead->needs_taps()) {
    return make_error(StatusCode::kInvalidArgument, "shadowed proposer: the lead may not read hidden states");
  }
  return std::unique_ptr<ShadowedProposer>(new ShadowedProposer(std::move(lead), std::move(shadow)));
}

ProposerFactory ShadowedProposer::factory(ProposerFactory lead, ProposerFactory shadow) {
  return [lead = std::move(lead), shadow = std::move(shadow)]() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(std::unique_ptr<Proposer> l, lead());
    SAKER_ASSIGN_OR_RETURN(std::unique_ptr<Proposer> s, shadow());
    SAKER_ASSIGN_OR_RETURN(auto p, create(std::move(l), std::move(s)));
    return std::unique_ptr<Proposer>(std::move(p));
  };
}

void ShadowedProposer::reset() {
  lead_->reset();
  shadow_->reset();
}

// Both adopt what their caches hold; the shadow, the one that may read hidden states, says how much the engine
// may take from its cache.
Result<int64_t> ShadowedProposer::match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) {
  (void)lead_->match_prefix(tokens, max_tokens);
  return shadow_->match_prefix(tokens, max_tokens);
}

void ShadowedProposer::commit_context(std::span<const int32_t> tokens) {
  lead_->commit_context(tokens);
  shadow_->commit_context(tokens);
}

Status ShadowedProposer::add_context(int64_t first, const FloatRows& taps) {
  SAKER_RETURN_IF_ERROR(lead_->add_context(first, FloatRows{.n = taps.n}));
  return shadow_->add_context(first, taps);
}

Status ShadowedProposer::request(std::span<const int32_t> tokens, int64_t max_depth) {
  SAKER_RETURN_IF_ERROR(lead_->request(tokens, max_depth));
  shadowing_ = shadow_->request(tokens, max_depth);
  if (!shadowing_.ok()) SAKER_LOG_WARN("shadow drafter: {}", shadowing_.to_string());
  return {};
}

DraftBatch* ShadowedProposer::batch() { return shadowing_.ok() ? shadow_->batch() : nullptr; }

// The lead's drafts whatever became of the shadow's: its failure costs the figures a drafter's work, never the
// drafts.
Status ShadowedProposer::take(DraftNodes* out) {
  if (shadowing_.ok()) {
    if (Status st = shadow_->take(&dropped_); !st.ok()) SAKER_LOG_WARN("shadow drafter: {}", st.to_string());
  }
  shadowing_ = Status{};
  return lead_->take(out);
}

Status ShadowedProposer::propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) {
  SAKER_RETURN_IF_ERROR(request(tokens, max_depth));
  if (DraftBatch* b = batch(); b && !(shadowing_ = b->run()).ok()) {
    SAKER_LOG_WARN("shadow drafter: {}", shadowing_.to_string());
  }
  return take(out);
}

}  // namespace saker::spec
