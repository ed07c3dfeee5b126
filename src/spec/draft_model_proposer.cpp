#include "spec/draft_model_proposer.h"

#include <algorithm>

namespace saker::spec {

namespace {

Status check_max_draft(int32_t max_draft) {
  if (max_draft < 1) return make_error(StatusCode::kInvalidArgument, "draft model: max_draft must be >= 1");
  return {};
}

}  // namespace

Result<ProposerFactory> DraftModelProposer::factory(Model& draft, int32_t n_slots, int64_t n_ctx,
                                                    int32_t max_draft) {
  SAKER_RETURN_IF_ERROR(check_max_draft(max_draft));
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<DraftModelBatch> batch, DraftModelBatch::create(draft, n_slots, n_ctx));
  return ProposerFactory([batch, max_draft]() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(auto p, create(batch, max_draft));
    return std::unique_ptr<Proposer>(std::move(p));
  });
}

Result<std::unique_ptr<DraftModelProposer>> DraftModelProposer::create(Model& draft, int64_t n_ctx,
                                                                       int32_t max_draft) {
  SAKER_RETURN_IF_ERROR(check_max_draft(max_draft));
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<DraftModelBatch> batch, DraftModelBatch::create(draft, 1, n_ctx));
  return create(std::move(batch), max_draft);
}

Result<std::unique_ptr<DraftModelProposer>> DraftModelProposer::create(std::shared_ptr<DraftModelBatch> batch,
                                                                       int32_t max_draft) {
  if (!batch) return make_error(StatusCode::kInvalidArgument, "draft model: no batch");
  SAKER_RETURN_IF_ERROR(check_max_draft(max_draft));
  return std::unique_ptr<DraftModelProposer>(new DraftModelProposer(std::move(batch), max_draft));
}

Status DraftModelProposer::hold_slot() {
  if (slot_ >= 0) return {};
  SAKER_ASSIGN_OR_RETURN(slot_, batch_->acquire());
  return {};
}

Result<int64_t> DraftModelProposer::match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) {
  SAKER_RETURN_IF_ERROR(hold_slot());
  return batch_->adopt(slot_, tokens, max_tokens);
}

void DraftModelProposer::commit_context(std::span<const int32_t> tokens) {
  if (slot_ >= 0) batch_->commit(slot_, tokens);
}

void DraftModelProposer::reset() {
  batch_->release(slot_);
  slot_ = -1;
  asked_ = false;
}

Status DraftModelProposer::request(std::span<const int32_t> tokens, int64_t max_depth) {
  asked_ = false;
  const int64_t k = std::min<int64_t>(max_draft_, max_depth);
  if (tokens.empty() || k <= 0) return {};
  SAKER_RETURN_IF_ERROR(hold_slot());
  SAKER_RETURN_IF_ERROR(batch_->request(slot_, tokens, k));
  asked_ = true;
  return {};
}

Status DraftModelProposer::take(DraftNodes* out) {
  out->clear();
  if (!asked_) return {};
  asked_ = false;
  const std::span<const int32_t> drafts = batch_->drafts(slot_);
  for (size_t d = 0; d < drafts.size(); ++d) {
    out->tokens.push_back(drafts[d]);
    out->parent.push_back(static_cast<int32_t>(d) - 1);
    out->depth.push_back(static_cast<int32_t>(d) + 1);
  }
  return {};
}

Status DraftModelProposer::propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) {
  SAKER_RETURN_IF_ERROR(request(tokens, max_depth));
  if (asked_) SAKER_RETURN_IF_ERROR(batch_->run());
  return take(out);
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
