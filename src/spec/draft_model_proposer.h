#pragma once
// DraftModelProposer: a smaller model of the same tokenizer drafts a chain of its greedy tokens after the
// pending one (--draft-model FILE). Each sequence has its own draft-model KV cache; the model's weights and
// forward are shared. Before drafting it rolls its cache back to what it has in common with the sequence
// (drafts the target rejected are overwritten), feeds what is new (the accepted tokens and the pending
// one), then runs one row per drafted token. It reads no hidden states of the target. The draft KV cache
// (n_ctx positions of the draft model) is allocated at the first draft, so a queued request holds none.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/generator.h"
#include "engine/proposer.h"
#include "models/model.h"
#include "text/tokenizer.h"

namespace saker::spec {

class DraftModelProposer : public Proposer {
 public:
  // n_ctx: the most positions the sequence reaches; max_draft: tokens drafted per step (>= 1).
  static Result<std::unique_ptr<DraftModelProposer>> create(Model& draft, int64_t n_ctx, int32_t max_draft);

  std::span<const int32_t> tap_layers() const override { return {}; }
  // The sequence restarts (preempted): the draft cache is freed, refilled from the first position when it
  // drafts again.
  void reset() override {
    cached_.clear();
    gen_.reset();
  }
  // Whether the draft KV cache is allocated (after the first propose()).
  bool allocated() const { return gen_ != nullptr; }
  Status add_context(int64_t, int64_t, const float*) override { return {}; }
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  int64_t max_nodes() const override { return max_draft_; }

 private:
  DraftModelProposer(Model& draft, int64_t n_ctx, int32_t max_draft)
      : draft_(draft), n_ctx_(n_ctx), max_draft_(max_draft) {}

  Model& draft_;
  int64_t n_ctx_;
  std::unique_ptr<Generator> gen_;  // null until the first draft
  int32_t max_draft_;
  std::vector<int32_t> cached_;  // the tokens whose K/V the draft cache holds, by position
};

// A draft model can serve a target only when both read and write the same token ids: no more embedding rows
// than the target's (models of one family pad them differently: Qwen2.5-0.5B has 151,936, 7B 152,064) and,
// where both carry a tokenizer, as many tokens with the same text for every id. The error names the first id
// that differs.
Status check_draft_vocab(const Model& target, const text::Tokenizer* target_tok, const Model& draft,
                         const text::Tokenizer* draft_tok);

}  // namespace saker::spec
