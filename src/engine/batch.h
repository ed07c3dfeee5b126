#pragma once
// Batch: one engine step, the flat tokens of many sequences. Each scheduled sequence contributes one segment
// (a decode token, a prefill chunk) of consecutive slots; segments are laid out decode-first, so the single
// tokens sit together at the front and each prefill chunk is one contiguous run (the CPU backend multiplies
// a long run on its own, keeping every row's numbers independent of the rest of the batch).
#include <cstdint>
#include <span>
#include <vector>

#include "models/model.h"
#include "ops/attention_batch.h"

namespace saker {

struct Sequence;

struct BatchSegment {
  Sequence* seq = nullptr;
  int64_t first = 0;     // slot (= position) of the segment's first token
  int64_t n = 0;         // tokens fed
  int32_t output = -1;   // index into the batch's outputs of its (last, or first for a tree) deciding row
  int64_t batch_begin = 0;  // index of the segment's first token in the batch
  bool tree = false;     // a speculative verify: [pending, draft nodes], every row an output
};

struct Batch {
  std::vector<BatchSegment> segments;      // [n_seqs] in batch order
  std::vector<int32_t> tokens;             // [n_tokens]
  std::vector<int32_t> token_seq;          // [n_tokens] index into segments
  std::vector<int32_t> token_slot;         // [n_tokens]
  std::vector<int32_t> token_pos;          // [n_tokens] == slot outside draft trees
  std::vector<int32_t> token_parent;       // [n_tokens] draft trees: batch index of the parent, -1 elsewhere
  bool has_tree = false;                   // some segment verifies a draft (a tree, or a chain sent as kCausal)
  std::vector<AttentionSequence> attn_seqs;  // [n_seqs] views of each sequence's block table
  std::vector<int32_t> output_rows;        // [n_outputs] batch index of each deciding row

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
  bool empty() const { return tokens.empty(); }
  void clear() {
    segments.clear();
    tokens.clear();
    token_seq.clear();
    token_slot.clear();
    token_pos.clear();
    token_parent.clear();
    has_tree = false;
    attn_seqs.clear();
    output_rows.clear();
  }
  // The forward's view (spans into this batch: valid while it is neither changed nor moved).
  ForwardBatch forward_batch() const {
    ForwardBatch b;
    b.tokens = tokens;
    b.attn.sequences = attn_seqs;
    b.attn.token_seq = token_seq;
    b.attn.token_slot = token_slot;
    b.attn.token_pos = token_pos;
    if (has_tree) b.attn.token_parent = token_parent;
    b.output_rows = output_rows;
    return b;
  }
};

}  // namespace saker
