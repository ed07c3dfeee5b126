// The packed attention batch the CUDA kernels read, checked on the CPU: field contents, and the
// __host__ __device__ visibility helpers against AttentionBatch::visible_slots / key_position for every
// (query, slot) of random chain, full and tree batches, with and without a sliding window; and the exact-tree
// chain view (attn_tree_chain) against the same.
#include <gtest/gtest.h>

#include <algorithm>

#include "saker/version.h"
#include "unit/attention_batch_builder.h"

#if SAKER_CUDA_ENABLED
#include "ops/cuda/attention_pack.h"

namespace saker {
namespace {

using testing::BuiltBatch;
using testing::SeqSpec;

void check_against_batch(const BuiltBatch& b, int32_t window) {
  const AttentionBatch batch = b.batch();
  ASSERT_TRUE(batch.validate(b.n_blocks, b.block_size).ok());
  std::vector<int32_t> packed;
  const cuda::PackedAttentionLayout L = cuda::pack_attention_batch(batch, &packed);
  ASSERT_EQ(static_cast<int32_t>(packed.size()), L.total);
  ASSERT_EQ(L.n_tokens, batch.n_tokens());
  ASSERT_EQ(L.n_seqs, static_cast<int32_t>(b.seqs.size()));
  const int32_t* p = packed.data();
  for (int32_t i = 0; i < L.n_seqs; ++i) {
    EXPECT_EQ(p[L.seq_n_ctx + i], b.seqs[i].n_ctx);
    EXPECT_EQ(p[L.seq_mask + i], static_cast<int32_t>(b.seqs[i].mask));
    // Every slot's cache row goes through the sequence's block table.
    for (int32_t s = 0; s < b.seqs[i].n_ctx; ++s) {
      EXPECT_EQ(cuda::attn_cache_row(p, L, i, s, b.block_size),
                static_cast<int64_t>(b.tables[i][s / b.block_size]) * b.block_size + s % b.block_size);
    }
  }
  std::vector<int32_t> want;
  for (int32_t t = 0; t < L.n_tokens; ++t) {
    EXPECT_EQ(p[L.token_parent + t], b.has_tree ? b.token_parent[t] : -1);
    batch.visible_slots(t, window, &want);
    const int32_t n_ctx = b.seqs[b.token_seq[t]].n_ctx;
    int32_t lo = 0, hi = 0;
    cuda::attn_key_range(p, L, t, window, &lo, &hi);
    std::vector<int32_t> got;
    for (int32_t s = -2; s < n_ctx + 3; ++s) {
      if (cuda::attn_key_visible(p, L, t, s, window)) got.push_back(s);
    }
    EXPECT_EQ(got, want) << "token " << t << " window " << window;
    for (int32_t s : want) {
      EXPECT_GE(s, lo) << "token " << t;
      EXPECT_LT(s, hi) << "token " << t;
    }
    // A tree node read through plain decoding's view (the exact-tree kernels): logical slots [0, position]
    // causal, slot tree_start + d the chain's node at depth d, the window on logical slots, see exactly the
    // node's visible slots, each at its key position.
    const AttentionSequence& seq = b.seqs[b.token_seq[t]];
    if (seq.mask != AttentionMask::kTree) continue;
    int32_t chain[64];
    const int32_t n = cuda::attn_tree_chain(p, L, t, seq.tree_start, chain, 64);
    ASSERT_EQ(n, b.token_pos[t] - seq.tree_start + 1) << "token " << t;
    std::vector<int32_t> logical;
    for (int32_t s = window > 0 ? std::max(0, b.token_pos[t] - window + 1) : 0; s <= b.token_pos[t]; ++s) {
      const int32_t phys = s < seq.tree_start ? s : chain[s - seq.tree_start];
      EXPECT_EQ(batch.key_position(t, phys), s) << "token " << t << " logical slot " << s;
      logical.push_back(phys);
    }
    std::sort(logical.begin(), logical.end());
    EXPECT_EQ(logical, want) << "tree token " << t << " window " << window;
    EXPECT_EQ(cuda::attn_tree_chain(p, L, t, seq.tree_start, chain, n - 1), -1) << "a chain longer than max";
  }
}

TEST(AttentionPack, ChainsFullAndTreesMatchVisibleSlots) {
  const std::vector<std::vector<SeqSpec>> cases = {
      {{0, 1, AttentionMask::kCausal}},
      {{40, 1, AttentionMask::kCausal}, {3, 1, AttentionMask::kCausal}, {100, 1, AttentionMask::kCausal}},
      {{0, 37, AttentionMask::kCausal}, {20, 16, AttentionMask::kCausal}},
      {{30, 12, AttentionMask::kFull}, {5, 1, AttentionMask::kCausal}},
      {{50, 20, AttentionMask::kTree}, {17, 3, AttentionMask::kCausal}},
      {{0, 9, AttentionMask::kTree}},
      {{64, 64, AttentionMask::kTree}, {10, 8, AttentionMask::kFull}, {33, 5, AttentionMask::kTree}},
  };
  uint32_t seed = 1;
  for (const auto& specs : cases) {
    for (bool interleave : {false, true}) {
      for (int32_t block_size : {1, 16, 7}) {
        const BuiltBatch b = testing::build_batch(specs, block_size, seed++, interleave);
        for (int32_t window : {0, 1, 4, 25, 1000}) check_against_batch(b, window);
      }
    }
  }
}

TEST(AttentionPack, SplitSlicesPartitionTheKeyRange) {
  for (int32_t lo : {0, 5, 1000}) {
    for (int32_t n_keys : {-3, 0, 1, 127, 128, 129, 4096, 5000, 32768}) {
      const int32_t hi = lo + n_keys;
      for (int32_t n_splits : {1, 2, 3, 32, 66, 132, 512}) {
        for (int32_t tile : {32, 64, 128, 160, 192, 256}) {
          int32_t next = lo;
          for (int32_t s = 0; s < n_splits; ++s) {
            int32_t kb = 0, ke = 0;
            cuda::attn_split_slice(lo, hi, n_splits, tile, s, &kb, &ke);
            ASSERT_EQ(kb, next) << lo << " " << n_keys << " " << n_splits << " " << tile << " " << s;
            ASSERT_LE(kb, ke);
            if (ke < std::max(lo, hi)) {
              ASSERT_EQ((ke - kb) % tile, 0);  // whole tiles until the end
            }
            // A slice never holds more than its fair share rounded up to a tile.
            ASSERT_LE(ke - kb, ((std::max(n_keys, 0) + n_splits - 1) / n_splits + tile - 1) / tile * tile);
            next = ke;
          }
          ASSERT_EQ(next, std::max(lo, hi));
        }
      }
    }
  }
}

TEST(AttentionPack, FixedSlicesCoverTheRangeInAbsoluteTiles) {
  for (int32_t lo : {0, 5, 64, 1000}) {
    for (int32_t n_keys : {0, 1, 127, 128, 129, 4096, 5000}) {
      const int32_t hi = lo + n_keys;
      for (int32_t tile : {32, 64, 128}) {
        constexpr int32_t kSplitKeys = 128;
        int32_t covered = 0, next = lo / tile * tile;  // slices in order tile the range from lo's tile up
        for (int32_t s = 0; s * kSplitKeys < std::max(hi, 1); ++s) {
          int32_t kb = 0, ke = 0;
          cuda::attn_fixed_slice(lo, hi, kSplitKeys, tile, s, &kb, &ke);
          if (kb >= ke) continue;  // a slice below the range (or the range is empty)
          ASSERT_EQ(kb % tile, 0) << lo << " " << n_keys << " " << tile << " " << s;
          ASSERT_GE(kb, s * kSplitKeys);
          ASSERT_LE(ke, (s + 1) * kSplitKeys);
          ASSERT_EQ(kb, next);
          covered += ke - std::max(kb, lo);
          next = ke;
        }
        ASSERT_EQ(covered, n_keys) << lo << " " << n_keys << " " << tile;
      }
    }
  }
}

TEST(AttentionPack, LayoutFollowsCountsOnly) {
  // Same token/sequence/table counts -> same layout, whatever the lengths (what a graph replay needs).
  const BuiltBatch a = testing::build_batch({{10, 1, AttentionMask::kCausal}, {20, 1, AttentionMask::kCausal}}, 16, 1, false);
  const BuiltBatch b = testing::build_batch({{11, 1, AttentionMask::kCausal}, {21, 1, AttentionMask::kCausal}}, 16, 2, false);
  std::vector<int32_t> pa, pb;
  const cuda::PackedAttentionLayout la = cuda::pack_attention_batch(a.batch(), &pa);
  const cuda::PackedAttentionLayout lb = cuda::pack_attention_batch(b.batch(), &pb);
  EXPECT_EQ(la.total, lb.total);
  EXPECT_EQ(la.block_tables, lb.block_tables);
  EXPECT_EQ(la.seq_table, lb.seq_table);
}

}  // namespace
}  // namespace saker
#endif  // SAKER_CUDA_ENABLED
