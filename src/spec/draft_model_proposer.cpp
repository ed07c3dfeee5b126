#include "spec/draft_model_proposer.h"

#include <algorithm>

namespace saker::spec {

Result<std::unique_ptr<DraftModelProposer>> DraftModelProposer::create(Model& draft, int64_t n_ctx,
                                                                       int32_t max_draft) {
  if (max_draft < 1) return make_error(StatusCode::kInvalidArgument, "draft model: max_draft must be >= 1");
  if (n_ctx < 1) return make_error(StatusCode::kInvalidArgument, "draft model: n_ctx must be >= 1");
  return std::unique_ptr<DraftModelProposer>(new DraftModelProposer(draft, n_ctx, max_draft));
}

Status DraftModelProposer::propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) {
  out->clear();
  const int64_t len = static_cast<int64_t>(tokens.size());
  // The last drafted token is never fed, so the cache needs len + k - 1 positions.
  const int64_t k = std::min<int64_t>({max_draft_, max_depth, n_ctx_ - len + 1});
  if (len == 0 || k <= 0) return {};
  if (!gen_) {
    SAKER_ASSIGN_OR_RETURN(gen_, Generator::create(draft_, nullptr, n_ctx_));
  }
  // Keep the cached prefix the sequence still has (at least the pending token is fed again).
  const auto mismatch = std::mismatch(cached_.begin(), cached_.end(), tokens.begin(), tokens.end());
  const int64_t keep = std::min<int64_t>(mismatch.first - cached_.begin(), len - 1);
  cached_.resize(keep);  // what the draft cache still holds; the sequence's newer tokens follow
  cached_.insert(cached_.end(), tokens.begin() + keep, tokens.end());
  int64_t begin = keep;
  for (int64_t d = 0; d < k; ++d) {
    SAKER_ASSIGN_OR_RETURN(const int32_t next, gen_->extend_argmax(cached_, begin));
    out->tokens.push_back(next);
    out->parent.push_back(static_cast<int32_t>(d) - 1);
    out->depth.push_back(static_cast<int32_t>(d) + 1);
    if (d + 1 == k) break;
    begin = static_cast<int64_t>(cached_.size());
    cached_.push_back(next);
  }
  return {};
}

Status check_draft_vocab(const Model& target, const text::Tokenizer* target_tok, const Model& draft,
                         const text::Tokenizer* draft_tok) {
  const int64_t nt = target.hparams().n_vocab, nd = draft.hparams().n_vocab;
  if (nd > nt) {
    return make_error(StatusCode::kInvalidArgument,
                      "--draft-model: its vocabulary has {} tokens, more than the target's {}: they must share a "
                      "tokenizer", nd, nt);
  }
  if (target_tok == nullptr || draft_tok == nullptr) return {};
  const text::Vocab& a = target_tok->vocab();
  const text::Vocab& b = draft_tok->vocab();
  const int32_t n = std::min(a.n_tokens(), b.n_tokens());
  if (a.n_tokens() != b.n_tokens()) {
    return make_error(StatusCode::kInvalidArgument, "--draft-model: its tokenizer has {} tokens, the target's {}",
                      b.n_tokens(), a.n_tokens());
  }
  for (int32_t id = 0; id < n; ++id) {
    if (a.text(id) != b.text(id)) {
      return make_error(StatusCode::kInvalidArgument,
                        "--draft-model: token {} is '{}' in the draft model and '{}' in the target: they must share a "
                        "tokenizer", id, b.text(id), a.text(id));
    }
  }
  return {};
}

}  // namespace saker::spec
