#include "ops/cuda/attention_pack.h"

namespace saker::cuda {

PackedAttentionLayout pack_attention_batch(const AttentionBatch& batch, std::vector<int32_t>* packed) {
  PackedAttentionLayout L;
  L.n_tokens = static_cast<int32_t>(batch.n_tokens());
  L.n_seqs = static_cast<int32_t>(batch.sequences.size());
  for (const AttentionSequence& s : batch.sequences) L.n_block_table += static_cast<int32_t>(s.block_table.size());
  int32_t at = 0;
  auto field = [&at](int32_t n) {
    const int32_t off = at;
    at += n;
    return off;
  };
  L.token_seq = field(L.n_tokens);
  L.token_slot = field(L.n_tokens);
  L.token_pos = field(L.n_tokens);
  L.token_parent = field(L.n_tokens);
  L.seq_n_ctx = field(L.n_seqs);
  L.seq_mask = field(L.n_seqs);
  L.seq_tree_start = field(L.n_seqs);
  L.seq_table = field(L.n_seqs);
  L.block_tables = field(L.n_block_table);
  L.total = at;

  std::vector<int32_t>& p = *packed;
  p.assign(static_cast<size_t>(L.total), 0);
  for (int32_t t = 0; t < L.n_tokens; ++t) {
    p[L.token_seq + t] = batch.token_seq[t];
    p[L.token_slot + t] = batch.token_slot[t];
    p[L.token_pos + t] = batch.token_pos[t];
    p[L.token_parent + t] = batch.token_parent.empty() ? -1 : batch.token_parent[t];
  }
  int32_t table_at = 0;
  for (int32_t i = 0; i < L.n_seqs; ++i) {
    const AttentionSequence& s = batch.sequences[i];
    p[L.seq_n_ctx + i] = s.n_ctx;
    p[L.seq_mask + i] = static_cast<int32_t>(s.mask);
    p[L.seq_tree_start + i] = s.mask == AttentionMask::kTree ? s.tree_start : 0;
    p[L.seq_table + i] = table_at;
    for (int32_t b : s.block_table) p[L.block_tables + table_at++] = b;
  }
  return L;
}

}  // namespace saker::cuda
