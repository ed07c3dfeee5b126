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

}  // namespace saker
