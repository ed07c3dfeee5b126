#include "spec/chained_proposer.h"

#include <algorithm>

namespace saker::spec {

Result<std::unique_ptr<ChainedProposer>> ChainedProposer::create(std::vector<std::unique_ptr<Proposer>> proposers) {
  if (proposers.empty()) return make_error(StatusCode::kInvalidArgument, "chained proposer: no proposers");
  int readers = 0;
  for (const auto& p : proposers) {
    if (!p) return make_error(StatusCode::kInvalidArgument, "chained proposer: a null proposer");
    readers += p->needs_taps();
  }
  if (readers > 1) {
    return make_error(StatusCode::kInvalidArgument, "chained proposer: at most one proposer may read hidden states");
  }
  return std::unique_ptr<ChainedProposer>(new ChainedProposer(std::move(proposers)));
}

std::span<const int32_t> ChainedProposer::tap_layers() const {
  for (const auto& p : proposers_) {
    if (p->needs_taps()) return p->tap_layers();
  }
  return {};
}

void ChainedProposer::reset() {
  for (auto& p : proposers_) p->reset();
}

// Every member adopts what its own cache holds; the one that reads hidden states says how much the engine may
// take from its cache.
Result<int64_t> ChainedProposer::match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) {
  int64_t held = 0;
  for (auto& p : proposers_) {
    Result<int64_t> r = p->match_prefix(tokens, max_tokens);
    if (p->needs_taps()) {
      SAKER_RETURN_IF_ERROR(r.status());
      held = *r;
    }
  }
  return held;
}

void ChainedProposer::commit_context(std::span<const int32_t> tokens) {
  for (auto& p : proposers_) p->commit_context(tokens);
}

Status ChainedProposer::add_context(int64_t first, const FloatRows& taps) {
  for (auto& p : proposers_)
    SAKER_RETURN_IF_ERROR(p->add_context(first, p->needs_taps() ? taps : FloatRows{.n = taps.n}));
  return {};
}

bool ChainedProposer::reads_device_taps() const {
  bool any = false;
  for (const auto& p : proposers_) {
    if (!p->needs_taps()) continue;
    if (!p->reads_device_taps()) return false;
    any = true;
  }
  return any;
}

Status ChainedProposer::settle_context() {
  for (auto& p : proposers_) SAKER_RETURN_IF_ERROR(p->settle_context());
  return {};
}

Status ChainedProposer::request(std::span<const int32_t> tokens, int64_t max_depth) {
  deferred_ = nullptr;
  found_.clear();
  for (auto& p : proposers_) {
    SAKER_RETURN_IF_ERROR(p->request(tokens, max_depth));
    if (p->batch()) {
      deferred_ = p.get();
      return {};
    }
    SAKER_RETURN_IF_ERROR(p->take(&found_));
    if (found_.size() > 0) return {};
  }
  return {};
}

Status ChainedProposer::take(DraftNodes* out) {
  Proposer* deferred = deferred_;
  deferred_ = nullptr;
  if (deferred) return deferred->take(out);
  std::swap(*out, found_);
  found_.clear();
  return {};
}

Status ChainedProposer::propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) {
  SAKER_RETURN_IF_ERROR(request(tokens, max_depth));
  if (DraftBatch* b = batch()) SAKER_RETURN_IF_ERROR(b->run());
  return take(out);
}

int64_t ChainedProposer::max_nodes() const {
  int64_t n = 0;
  for (const auto& p : proposers_) n = std::max(n, p->max_nodes());
  return n;
}

bool ChainedProposer::drafts_trees() const {
  return std::any_of(proposers_.begin(), proposers_.end(), [](const auto& p) { return p->drafts_trees(); });
}

}  // namespace saker::spec
