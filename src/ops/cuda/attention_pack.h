#pragma once
// The packed form of an AttentionBatch that the CUDA attention kernels read, and the visibility rules as
// __host__ __device__ functions over it. Kept free of CUDA headers so the packing and the index math are
// compiled by the host compiler too and unit tested on the CPU against AttentionBatch::visible_slots.
#include <cstdint>
#include <vector>

#include "ops/attention_batch.h"

#if defined(__CUDACC__)
#define SAKER_HD __host__ __device__ __forceinline__
#else
#define SAKER_HD inline
#endif

namespace saker::cuda {

// Offsets (in int32 elements) of each field inside the packed array; sizes follow from n_tokens/n_seqs.
struct PackedAttentionLayout {
  int32_t n_tokens = 0, n_seqs = 0, n_block_table = 0;
  int32_t token_seq = 0, token_slot = 0, token_pos = 0, token_parent = 0;  // [n_tokens] each
  int32_t seq_n_ctx = 0, seq_mask = 0, seq_tree_start = 0, seq_table = 0;   // [n_seqs] each
  int32_t block_tables = 0;                                                // [n_block_table]
  int32_t total = 0;
};

// Packs `batch` (validated by the caller) into `packed`, returning its layout. token_parent is filled
// with -1 when the batch has no tree. seq_table[i] is the offset of sequence i's block table inside the
// block_tables field; every sequence's whole block_table span is copied (a runner may pass tables sized for
// its capacity so that the layout stays the same from one step to the next).
PackedAttentionLayout pack_attention_batch(const AttentionBatch& batch, std::vector<int32_t>* packed);

// Key slot range [lo, hi) of the sequence that holds every key visible to the query at batch index t (a
// superset: the exact rule is attn_key_visible). Empty (lo >= hi) when the query sees nothing.
SAKER_HD void attn_key_range(const int32_t* p, const PackedAttentionLayout& L, int32_t t, int32_t window,
                             int32_t* lo, int32_t* hi) {
  const int32_t seq = p[L.token_seq + t];
  const int32_t n_ctx = p[L.seq_n_ctx + seq], mask = p[L.seq_mask + seq];
  const int32_t slot = p[L.token_slot + t], pos = p[L.token_pos + t];
  int32_t h = n_ctx;
  if (mask == static_cast<int32_t>(AttentionMask::kCausal)) h = slot + 1 < n_ctx ? slot + 1 : n_ctx;
  int64_t l = 0;
  if (window > 0) {
    // Outside a tree the key position is the slot, so key_position > pos - window means slot >= pos - window + 1.
    l = static_cast<int64_t>(pos) - window + 1;
    if (l < 0) l = 0;
    // Tree nodes sit at slots >= tree_start whatever their positions; keep them inside the range.
    if (mask == static_cast<int32_t>(AttentionMask::kTree)) {
      const int32_t ts = p[L.seq_tree_start + seq];
      if (l > ts) l = ts;
    }
  }
  *lo = static_cast<int32_t>(l);
  *hi = h;
}

// Whether key slot s of the query's sequence is visible to the query at batch index t (attention_batch.h).
SAKER_HD bool attn_key_visible(const int32_t* p, const PackedAttentionLayout& L, int32_t t, int32_t s,
                               int32_t window) {
  const int32_t seq = p[L.token_seq + t];
  const int32_t n_ctx = p[L.seq_n_ctx + seq], mask = p[L.seq_mask + seq];
  const int32_t pos = p[L.token_pos + t];
  if (s < 0 || s >= n_ctx) return false;
  int32_t key_pos = s;
  if (mask == static_cast<int32_t>(AttentionMask::kCausal)) {
    if (s > p[L.token_slot + t]) return false;
  } else if (mask == static_cast<int32_t>(AttentionMask::kTree) && s >= p[L.seq_tree_start + seq]) {
    // A tree key is visible only on the query's ancestor chain (itself included); its position is the node's.
    bool found = false;
    for (int32_t a = t; a >= 0; a = p[L.token_parent + a]) {
      if (p[L.token_slot + a] == s) {
        key_pos = p[L.token_pos + a];
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return window <= 0 || static_cast<int64_t>(key_pos) > static_cast<int64_t>(pos) - window;
}

// Exact trees (attention_tiles.cuh PassTail): the slots of tree token t's chain by depth, slots[d] for the node
// at position tree_start + d, d = 0 .. depth (the root and every ancestor, then t itself: one node per depth).
// Read through this logical view, plain decoding's slots tree_start .. position, the keys the token sees are
// its visible slots. Returns depth + 1, or -1 when the chain is longer than max (or t is not a tree node).
SAKER_HD int32_t attn_tree_chain(const int32_t* p, const PackedAttentionLayout& L, int32_t t, int32_t tree_start,
                                 int32_t* slots, int32_t max) {
  const int32_t n = p[L.token_pos + t] - tree_start + 1;
  if (n < 1 || n > max) return -1;
  for (int32_t a = t; a >= 0; a = p[L.token_parent + a]) {
    const int32_t depth = p[L.token_pos + a] - tree_start;
    if (depth < 0 || depth >= n) return -1;
    slots[depth] = p[L.token_slot + a];
  }
  return n;
}

// Row index of key slot s of sequence `seq` in a cache viewed as [n_blocks * block_size, n_head_kv, head_dim].
SAKER_HD int64_t attn_cache_row(const int32_t* p, const PackedAttentionLayout& L, int32_t seq, int32_t s,
                                int32_t block_size) {
  const int32_t block = p[L.block_tables + p[L.seq_table + seq] + s / block_size];
  return static_cast<int64_t>(block) * block_size + s % block_size;
}

// Keys [kb, ke) that split `split` of n_splits covers of the range [lo, hi): the range cut into n_splits
// equal slices rounded up to whole tiles of `tile` keys, in order, so the slices partition [lo, hi) (the
// last ones may be empty, and every non-empty slice but the last is a whole number of tiles).
SAKER_HD void attn_split_slice(int32_t lo, int32_t hi, int32_t n_splits, int32_t tile, int32_t split, int32_t* kb,
                               int32_t* ke) {
  const int32_t n_keys = hi > lo ? hi - lo : 0;
  int64_t chunk = (static_cast<int64_t>(n_keys) + n_splits - 1) / n_splits;
  chunk = (chunk + tile - 1) / tile * tile;
  const int64_t b = static_cast<int64_t>(split) * chunk < n_keys ? static_cast<int64_t>(split) * chunk : n_keys;
  const int64_t e = b + chunk < n_keys ? b + chunk : n_keys;
  *kb = static_cast<int32_t>(lo + b);
  *ke = static_cast<int32_t>(lo + e);
}

// Keys [kb, ke) of slice `split` when every sequence's keys are cut at fixed absolute slots (slice i covers
// [i * split_keys, (i + 1) * split_keys)), within the pass's range [lo, hi): kb rounds lo down to a multiple
// of `tile` (a divisor of split_keys) so that tiles start at absolute positions whatever rows share the pass;
// the keys of that first tile below lo are the caller's to load as zeros. Empty (kb >= ke) outside the range.
SAKER_HD void attn_fixed_slice(int32_t lo, int32_t hi, int32_t split_keys, int32_t tile, int32_t split, int32_t* kb,
                               int32_t* ke) {
  const int32_t s0 = split * split_keys, first_tile = lo / tile * tile;
  *kb = s0 > first_tile ? s0 : first_tile;
  *ke = hi < s0 + split_keys ? hi : s0 + split_keys;
}

}  // namespace saker::cuda
