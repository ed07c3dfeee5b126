#include "ops/attention_batch.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace saker {

Status AttentionBatch::validate(int64_t n_blocks, int64_t block_size) const {
  constexpr const char* kWhat = "attention batch";
  const int64_t n = n_tokens();
  if (block_size <= 0) return make_error(StatusCode::kInvalidArgument, "{}: block_size {} must be > 0", kWhat, block_size);
  if (static_cast<int64_t>(token_slot.size()) != n || static_cast<int64_t>(token_pos.size()) != n) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} token_seq, {} token_slot and {} token_pos entries differ",
                      kWhat, n, token_slot.size(), token_pos.size());
  }
  if (!token_parent.empty() && static_cast<int64_t>(token_parent.size()) != n) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} token_parent entries for {} tokens", kWhat,
                      token_parent.size(), n);
  }
  for (size_t i = 0; i < sequences.size(); ++i) {
    const AttentionSequence& seq = sequences[i];
    if (seq.n_ctx < 0) return make_error(StatusCode::kInvalidArgument, "{}: sequence {} has n_ctx {}", kWhat, i, seq.n_ctx);
    const int64_t n_logical = (seq.n_ctx + block_size - 1) / block_size;
    if (static_cast<int64_t>(seq.block_table.size()) < n_logical) {
      return make_error(StatusCode::kInvalidArgument, "{}: sequence {} has {} cached slots but a block table of {} "
                        "blocks of {}", kWhat, i, seq.n_ctx, seq.block_table.size(), block_size);
    }
    for (int64_t b = 0; b < n_logical; ++b) {
      if (seq.block_table[b] < 0 || seq.block_table[b] >= n_blocks) {
        return make_error(StatusCode::kOutOfRange, "{}: sequence {} block table entry {} is {}, outside the cache's "
                          "{} blocks", kWhat, i, b, seq.block_table[b], n_blocks);
      }
    }
    if (seq.mask == AttentionMask::kTree && (seq.tree_start < 0 || seq.tree_start > seq.n_ctx)) {
      return make_error(StatusCode::kInvalidArgument, "{}: sequence {} has tree_start {} outside [0, n_ctx {}]", kWhat,
                        i, seq.tree_start, seq.n_ctx);
    }
  }
  std::vector<std::pair<int32_t, int32_t>> seq_slots;  // to find two tokens writing one slot
  seq_slots.reserve(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const int32_t si = token_seq[t];
    if (si < 0 || static_cast<size_t>(si) >= sequences.size()) {
      return make_error(StatusCode::kOutOfRange, "{}: token {} names sequence {} of {}", kWhat, t, si, sequences.size());
    }
    const AttentionSequence& seq = sequences[si];
    const int32_t slot = token_slot[t], pos = token_pos[t];
    if (slot < 0 || slot >= seq.n_ctx) {
      return make_error(StatusCode::kOutOfRange, "{}: token {} has slot {} outside sequence {}'s {} cached slots",
                        kWhat, t, slot, si, seq.n_ctx);
    }
    seq_slots.emplace_back(si, slot);
    if (seq.mask != AttentionMask::kTree) {
      if (pos != slot) {
        return make_error(StatusCode::kInvalidArgument, "{}: token {} of chain sequence {} has position {} but slot {}",
                          kWhat, t, si, pos, slot);
      }
      continue;
    }
    if (token_parent.empty()) {
      return make_error(StatusCode::kInvalidArgument, "{}: sequence {} is a tree but token_parent is empty", kWhat, si);
    }
    if (slot < seq.tree_start) {
      return make_error(StatusCode::kInvalidArgument, "{}: tree token {} has slot {} inside the committed prefix "
                        "[0, {})", kWhat, t, slot, seq.tree_start);
    }
    const int32_t parent = token_parent[t];
    if (parent == -1) {
      if (pos != seq.tree_start) {
        return make_error(StatusCode::kInvalidArgument, "{}: tree root {} has position {}, expected tree_start {}",
                          kWhat, t, pos, seq.tree_start);
      }
      continue;
    }
    if (parent < 0 || parent >= t || token_seq[parent] != si) {
      return make_error(StatusCode::kInvalidArgument, "{}: tree token {} has parent {}, expected -1 or an earlier "
                        "token of sequence {}", kWhat, t, parent, si);
    }
    if (pos != token_pos[parent] + 1) {
      return make_error(StatusCode::kInvalidArgument, "{}: tree token {} has position {} but its parent {} has {}",
                        kWhat, t, pos, parent, token_pos[parent]);
    }
  }
  std::sort(seq_slots.begin(), seq_slots.end());
  const auto dup = std::adjacent_find(seq_slots.begin(), seq_slots.end());
  if (dup != seq_slots.end()) {
    return make_error(StatusCode::kInvalidArgument, "{}: two tokens of sequence {} share slot {}", kWhat, dup->first,
                      dup->second);
  }
  return {};
}

void AttentionBatch::visible_slots(int64_t token, int32_t sliding_window, std::vector<int32_t>* slots) const {
  const AttentionSequence& seq = sequences[token_seq[token]];
  const int32_t q_slot = token_slot[token], q_pos = token_pos[token];
  slots->clear();
  switch (seq.mask) {
    case AttentionMask::kCausal:
      for (int32_t s = 0; s <= q_slot; ++s) slots->push_back(s);
      break;
    case AttentionMask::kFull:
      for (int32_t s = 0; s < seq.n_ctx; ++s) slots->push_back(s);
      break;
    case AttentionMask::kTree:
      for (int32_t s = 0; s < seq.tree_start; ++s) slots->push_back(s);
      for (int64_t a = token; a >= 0; a = token_parent[a]) slots->push_back(token_slot[a]);
      std::sort(slots->begin() + seq.tree_start, slots->end());
      break;
  }
  if (sliding_window > 0) {
    std::erase_if(*slots, [&](int32_t s) {
      return static_cast<int64_t>(key_position(token, s)) <= static_cast<int64_t>(q_pos) - sliding_window;
    });
  }
}

int32_t AttentionBatch::key_position(int64_t token, int32_t s) const {
  const AttentionSequence& seq = sequences[token_seq[token]];
  if (seq.mask != AttentionMask::kTree || s < seq.tree_start) return s;
  for (int64_t a = token; a >= 0; a = token_parent[a]) {
    if (token_slot[a] == s) return token_pos[a];
  }
  return s;  // not visible to this query; callers only ask about visible slots
}

}  // namespace saker
