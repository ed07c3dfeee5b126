#pragma once
// DraftModelProposer: a smaller model of the same tokenizer drafts a chain of its greedy tokens after the
// pending one (--draft-model FILE), as a slot of a DraftModelBatch that every speculating sequence of an engine
// shares: one set of weights, one forward per drafted position for all of them (spec/draft_model_batch.h). It
// reads no hidden states of the target. The slot is taken at admission (match_prefix) or the first draft and
// given back at reset(), so a queued request holds no draft cache.
#include <cstdint>
#include <memory>
#include <span>

#include "engine/proposer.h"
#include "models/model.h"
#include "spec/draft_model_batch.h"
#include "text/tokenizer.h"

namespace saker::spec {

class DraftModelProposer : public Proposer {
 public:
  // Proposers over one DraftModelBatch of n_slots sequences of up to n_ctx positions (the engine's max_seqs and
  // n_ctx); max_draft: tokens drafted per step (>= 1).
  static Result<ProposerFactory> factory(Model& draft, int32_t n_slots, int64_t n_ctx, int32_t max_draft);
  // One proposer over a batch of its own (one slot).
  static Result<std::unique_ptr<DraftModelProposer>> create(Model& draft, int64_t n_ctx, int32_t max_draft);
  static Result<std::unique_ptr<DraftModelProposer>> create(std::shared_ptr<DraftModelBatch> batch, int32_t max_draft);
  ~DraftModelProposer() override { batch_->release(slot_); }

  std::span<const int32_t> tap_layers() const override { return {}; }
  // The sequence restarts (preempted): its slot is given back, refilled from the first position when it drafts
  // again.
  void reset() override;
  // Whether this proposer holds a slot of the draft cache (from its first draft on).
  bool allocated() const { return slot_ >= 0; }
  Status add_context(int64_t, const FloatRows&) override { return {}; }
  // The draft cache's pages of the prompt's prefix (DraftModelBatch::adopt); the engine's own match does not
  // depend on it (the draft model feeds what it lacks itself).
  Result<int64_t> match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) override;
  void commit_context(std::span<const int32_t> tokens) override;
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  Status request(std::span<const int32_t> tokens, int64_t max_depth) override;
  DraftBatch* batch() override { return asked_ ? batch_.get() : nullptr; }
  Status take(DraftNodes* out) override;
  int64_t max_nodes() const override { return max_draft_; }

 private:
  DraftModelProposer(std::shared_ptr<DraftModelBatch> batch, int32_t max_draft)
      : batch_(std::move(batch)), max_draft_(max_draft) {}
  Status hold_slot();  // takes a slot of the batch unless it holds one

  std::shared_ptr<DraftModelBatch> batch_;
  int32_t max_draft_;
  int32_t slot_ = -1;
  bool asked_ = false;  // a request waits for the batch's run()
};

// A draft model can serve a target only when both read and write the same token ids: no more embedding rows
// than the target's (models of one family pad them differently: Qwen2.5-0.5B has 151,936, 7B 152,064) and,
// where both carry a tokenizer, as many tokens with the same text for every id. The error names the first id
// that differs.
Status check_draft_vocab(const Model& target, const text::Tokenizer* target_tok, const Model& draft,
                         const text::Tokenizer* draft_tok);

}  // namespace saker::spec
