#pragma once
// SequenceBatch: the attention metadata of a forward over one sequence whose n new tokens sit at consecutive
// slots first..first+n-1 of its block table, position == slot, seeing key slots [0, first + n). It owns the
// per-token arrays the AttentionBatch spans point into, so it must not be copied or moved. A speculative tree
// starts from it and sets the mask, tree_start, positions and parents.
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "ops/attention_batch.h"

namespace saker {

struct SequenceBatch {
  std::vector<int32_t> seq, slot;  // [n] all 0; first..first+n-1
  AttentionSequence sequence;
  AttentionBatch attn;

  SequenceBatch(std::span<const int32_t> block_table, int64_t first, int64_t n, AttentionMask mask)
      : seq(n, 0), slot(n) {
    std::iota(slot.begin(), slot.end(), static_cast<int32_t>(first));
    sequence.block_table = block_table;
    sequence.n_ctx = static_cast<int32_t>(first + n);
    sequence.mask = mask;
    attn.sequences = std::span<const AttentionSequence>(&sequence, 1);
    attn.token_seq = seq;
    attn.token_slot = slot;
    attn.token_pos = slot;  // a chain: position == slot
  }
  SequenceBatch(const SequenceBatch&) = delete;
  SequenceBatch& operator=(const SequenceBatch&) = delete;
};

// SequencesBatch: the same for a forward over several sequences, each a run of new tokens at consecutive slots
// first..first+n-1 of its own block table (position == slot), the runs back to back in the batch; each sees key
// slots [0, first + n) under its mask. The AttentionBatch it gives points into it: valid while it is neither
// changed nor moved.
class SequencesBatch {
 public:
  // Adds a sequence's run; returns the batch index of its first token.
  int64_t add(std::span<const int32_t> block_table, int64_t first, int64_t n, AttentionMask mask) {
    const int64_t at = n_tokens();
    AttentionSequence s;
    s.block_table = block_table;
    s.n_ctx = static_cast<int32_t>(first + n);
    s.mask = mask;
    for (int64_t i = 0; i < n; ++i) {
      seq_.push_back(static_cast<int32_t>(seqs_.size()));
      slot_.push_back(static_cast<int32_t>(first + i));
    }
    seqs_.push_back(s);
    return at;
  }
  int64_t n_tokens() const { return static_cast<int64_t>(seq_.size()); }
  int64_t n_sequences() const { return static_cast<int64_t>(seqs_.size()); }
  void clear() {
    seqs_.clear();
    seq_.clear();
    slot_.clear();
  }
  AttentionBatch attn() const {
    AttentionBatch a;
    a.sequences = seqs_;
    a.token_seq = seq_;
    a.token_slot = slot_;
    a.token_pos = slot_;  // chains: position == slot
    return a;
  }

 private:
  std::vector<AttentionSequence> seqs_;
  std::vector<int32_t> seq_, slot_;
};

}  // namespace saker
