#include "spec/replay_proposer.h"

#include <algorithm>
#include <cmath>

namespace saker::spec {

Result<std::unique_ptr<ReplayProposer>> ReplayProposer::create(
    std::shared_ptr<const std::vector<std::vector<int32_t>>> references, double mean_commit, int32_t max_draft,
    int32_t n_vocab) {
  if (!references || references->empty()) {
    return make_error(StatusCode::kInvalidArgument, "replay: no reference continuations");
  }
  if (max_draft < 1) return make_error(StatusCode::kInvalidArgument, "replay: max_draft must be >= 1");
  if (!(mean_commit >= 1.0 && mean_commit <= max_draft + 1.0)) {
    return make_error(StatusCode::kInvalidArgument, "replay: L must be in [1, {}] (drafts per step + 1), got {}",
                      max_draft + 1, mean_commit);
  }
  if (n_vocab < 2) return make_error(StatusCode::kInvalidArgument, "replay: the vocabulary needs two tokens");
  return std::unique_ptr<ReplayProposer>(new ReplayProposer(std::move(references), mean_commit, max_draft, n_vocab));
}

std::shared_ptr<const ReplayProposer::References> ReplayProposer::references(const References& prompts,
                                                                            const References& continuations) {
  auto refs = std::make_shared<References>();
  for (size_t i = 0; i < prompts.size() && i < continuations.size(); ++i) {
    std::vector<int32_t> r = prompts[i];
    r.insert(r.end(), continuations[i].begin(), continuations[i].end());
    refs->push_back(std::move(r));
  }
  return refs;
}

Result<ProposerFactory> ReplayProposer::factory(std::shared_ptr<const References> references, double mean_commit,
                                                int32_t max_draft, int32_t n_vocab) {
  SAKER_RETURN_IF_ERROR(create(references, mean_commit, max_draft, n_vocab).status());
  return ProposerFactory([references, mean_commit, max_draft, n_vocab]() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(auto p, create(references, mean_commit, max_draft, n_vocab));
    return std::unique_ptr<Proposer>(std::move(p));
  });
}

int64_t ReplayProposer::accepted_at(int64_t step, double mean_commit) {
  const double a = mean_commit - 1.0;
  return static_cast<int64_t>(std::floor((step + 1) * a + 1e-9)) - static_cast<int64_t>(std::floor(step * a + 1e-9));
}

Status ReplayProposer::propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) {
  out->clear();
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (reference_ == nullptr) {
    // The reference whose prompt this sequence's tokens start with (the longest such prompt).
    size_t best = 0;
    for (const auto& r : *references_) {
      const size_t k = std::min(r.size(), tokens.size());
      if (k > best && std::equal(r.begin(), r.begin() + static_cast<int64_t>(k), tokens.begin())) {
        reference_ = &r;
        best = k;
      }
    }
    if (reference_ == nullptr) return {};
  }
  const std::vector<int32_t>& ref = *reference_;
  const int64_t room = std::min<int64_t>({max_depth, max_draft_, static_cast<int64_t>(ref.size()) - n});
  if (room <= 0 || n == 0 || n > static_cast<int64_t>(ref.size()) ||
      !std::equal(tokens.begin(), tokens.end(), ref.begin())) {
    return {};
  }
  const int64_t keep = accepted_at(steps_++, mean_commit_);
  for (int64_t i = 0; i < room; ++i) {
    int32_t t = ref[static_cast<size_t>(n + i)];
    if (i == keep) t = (t + 1) % n_vocab_;  // the first draft the target must reject
    out->tokens.push_back(t);
    out->parent.push_back(static_cast<int32_t>(i) - 1);
    out->depth.push_back(static_cast<int32_t>(i) + 1);
  }
  return {};
}

}  // namespace saker::spec
