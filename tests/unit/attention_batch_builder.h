#pragma once
// Builds random multi-sequence attention batches for the packing unit test and the CUDA attention tests:
// shuffled physical blocks (block tables out of order, spare entries past the used ones), chain sequences
// whose new tokens are the last slots, and speculative trees with random branching whose nodes occupy
// shuffled slots after the committed prefix. Tokens of different sequences can be interleaved.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/attention_batch.h"

namespace saker::testing {

struct SeqSpec {
  int32_t prefix = 0;  // cached slots before this step
  int32_t n_new = 1;   // tokens of this step (tree nodes for kTree)
  AttentionMask mask = AttentionMask::kCausal;
};

struct BuiltBatch {
  int32_t block_size = 16, n_blocks = 0;
  std::vector<std::vector<int32_t>> tables;
  std::vector<AttentionSequence> seqs;
  std::vector<int32_t> token_seq, token_slot, token_pos, token_parent;
  bool has_tree = false;

  AttentionBatch batch() const {
    return AttentionBatch{seqs, token_seq, token_slot, token_pos,
                          has_tree ? std::span<const int32_t>(token_parent) : std::span<const int32_t>()};
  }
};

inline BuiltBatch build_batch(const std::vector<SeqSpec>& specs, int32_t block_size, uint32_t seed,
                              bool interleave) {
  std::mt19937 rng(seed);
  auto below = [&rng](int32_t n) { return static_cast<int32_t>(rng() % static_cast<uint32_t>(n)); };
  BuiltBatch b;
  b.block_size = block_size;
  int32_t needed = 0;
  for (const SeqSpec& s : specs) needed += (s.prefix + s.n_new + block_size - 1) / block_size;
  b.n_blocks = needed + 3;
  std::vector<int32_t> perm(static_cast<size_t>(b.n_blocks));
  for (int32_t i = 0; i < b.n_blocks; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  size_t next = 0;
  b.tables.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const int32_t n_ctx = specs[i].prefix + specs[i].n_new;
    for (int32_t k = 0; k < (n_ctx + block_size - 1) / block_size; ++k) b.tables[i].push_back(perm[next++]);
    b.tables[i].push_back(below(b.n_blocks));  // a spare entry past n_ctx (capacity-sized tables)
  }
  // Per sequence: its tokens in batch order (slot, pos, parent as an index into the sequence's own list).
  struct Tok {
    int32_t slot, pos, parent;
  };
  std::vector<std::vector<Tok>> toks(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const SeqSpec& s = specs[i];
    const int32_t n_ctx = s.prefix + s.n_new;
    b.seqs.push_back({b.tables[i], n_ctx, s.mask, s.mask == AttentionMask::kTree ? s.prefix : 0});
    if (s.mask != AttentionMask::kTree) {
      for (int32_t k = 0; k < s.n_new; ++k) toks[i].push_back({s.prefix + k, s.prefix + k, -1});
      continue;
    }
    b.has_tree = true;
    std::vector<int32_t> slots(static_cast<size_t>(s.n_new));
    for (int32_t k = 0; k < s.n_new; ++k) slots[k] = s.prefix + k;
    std::shuffle(slots.begin(), slots.end(), rng);
    std::vector<int32_t> depth(static_cast<size_t>(s.n_new), 0);
    for (int32_t k = 0; k < s.n_new; ++k) {
      // Parents among the last few nodes make deep and wide trees alike.
      const int32_t parent = k == 0 ? -1 : std::max(0, k - 1 - below(std::min(k, 4)));
      depth[k] = parent < 0 ? 0 : depth[parent] + 1;
      toks[i].push_back({slots[k], s.prefix + depth[k], parent});
    }
  }
  std::vector<size_t> taken(specs.size(), 0);
  std::vector<std::vector<int32_t>> batch_index(specs.size());
  auto emit = [&](size_t i) {
    const Tok& t = toks[i][taken[i]++];
    batch_index[i].push_back(static_cast<int32_t>(b.token_seq.size()));
    b.token_seq.push_back(static_cast<int32_t>(i));
    b.token_slot.push_back(t.slot);
    b.token_pos.push_back(t.pos);
    b.token_parent.push_back(t.parent < 0 ? -1 : batch_index[i][t.parent]);
  };
  if (interleave) {
    for (bool any = true; any;) {
      any = false;
      for (size_t i = 0; i < specs.size(); ++i) {
        if (taken[i] < toks[i].size()) {
          emit(i);
          any = true;
        }
      }
    }
  } else {
    for (size_t i = 0; i < specs.size(); ++i) {
      while (taken[i] < toks[i].size()) emit(i);
    }
  }
  return b;
}

}  // namespace saker::testing
