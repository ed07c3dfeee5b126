// ref::attention over a paged cache against dense attention computed directly: several sequences of
// different lengths in one flattened, interleaved batch, block tables in shuffled order, GQA ratios 1/2/4,
// head_dim 64/128; trees, bidirectional blocks, sliding windows, soft-capping, sinks and 16-bit caches.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "ops/ref/attention.h"
#include "ops/ref/kv_cache.h"
#include "unit/ops_attention_test_util.h"

namespace saker {
namespace {

using testing::dense_attention;
using testing::OpsRng;
using testing::PagedKvFixture;
using testing::view;

// A query token for the test batches.
struct Query {
  int32_t seq, slot, pos, parent = -1;
};

struct BatchArrays {
  std::vector<int32_t> seq, slot, pos, parent;
  explicit BatchArrays(const std::vector<Query>& qs) {
    for (const Query& q : qs) {
      seq.push_back(q.seq);
      slot.push_back(q.slot);
      pos.push_back(q.pos);
      parent.push_back(q.parent);
    }
  }
  AttentionBatch batch(std::span<const AttentionSequence> sequences) const { return {sequences, seq, slot, pos, parent}; }
};

// Dense oracle for query i: the keys are the given slots of its sequence (in order).
void expect_matches_dense(PagedKvFixture& f, const std::vector<Query>& qs, const std::vector<float>& q,
                          const std::vector<float>& out, int64_t n_head, int64_t i, const std::vector<int32_t>& key_slots,
                          double soft_cap = 0.0, const float* sinks = nullptr, double tolerance = 2e-6) {
  const int64_t group = n_head / f.n_head_kv;
  for (int64_t h = 0; h < n_head; ++h) {
    const int64_t g = h / group;
    std::vector<const float*> keys, values;
    for (int32_t s : key_slots) {
      keys.push_back(&f.k_dense[qs[i].seq][s][g * f.head_dim]);
      values.push_back(&f.v_dense[qs[i].seq][s][g * f.head_dim_v]);
    }
    std::vector<float> expect(f.head_dim_v);
    dense_attention(&q[(i * n_head + h) * f.head_dim], keys, values, f.head_dim, f.head_dim_v,
                    1.0 / std::sqrt(static_cast<double>(f.head_dim)), soft_cap, sinks ? &sinks[h] : nullptr, expect.data());
    for (int64_t d = 0; d < f.head_dim_v; ++d) {
      ASSERT_NEAR(out[(i * n_head + h) * f.head_dim_v + d], expect[d], tolerance) << "query " << i << " head " << h;
    }
  }
}

std::vector<int32_t> range(int32_t begin, int32_t end) {
  std::vector<int32_t> r;
  for (int32_t s = begin; s < end; ++s) r.push_back(s);
  return r;
}

class RefAttentionGeometry : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(RefAttentionGeometry, ManySequencesMatchDenseCausalAttention) {
  const auto [gqa, head_dim] = GetParam();
  constexpr int64_t kHeadsKv = 2, kBlock = 16;
  const int64_t n_head = kHeadsKv * gqa;
  // Prefill of 37, decode at 50, a chunk of 5 ending at 21, a first token: different lengths and block counts.
  PagedKvFixture f({37, 50, 21, 1}, kBlock, kHeadsKv, head_dim, head_dim, DType::kF32, 100 + gqa + head_dim);
  ASSERT_TRUE(f.write_ok);
  std::vector<Query> qs;
  for (int32_t p = 0; p < 37; ++p) qs.push_back({0, p, p});
  qs.push_back({1, 49, 49});
  for (int32_t p = 16; p < 21; ++p) qs.push_back({2, p, p});
  qs.push_back({3, 0, 0});
  OpsRng rng(7);
  for (size_t i = qs.size() - 1; i > 0; --i) std::swap(qs[i], qs[rng.below(static_cast<int32_t>(i + 1))]);  // interleave
  const int64_t n = static_cast<int64_t>(qs.size());
  std::vector<float> q = rng.normals(static_cast<size_t>(n * n_head * head_dim), 2.0);
  std::vector<float> out(static_cast<size_t>(n * n_head * head_dim));
  BatchArrays arrays(qs);
  arrays.parent.clear();
  ASSERT_TRUE(ref::attention(view(q, {n, n_head, head_dim}), f.k_cache(), f.v_cache(), arrays.batch(f.sequences), {},
                             view(out, {n, n_head, head_dim})).ok());
  for (int64_t i = 0; i < n; ++i) expect_matches_dense(f, qs, q, out, n_head, i, range(0, qs[i].slot + 1));
}

INSTANTIATE_TEST_SUITE_P(GqaAndHeadDim, RefAttentionGeometry,
                         ::testing::Combine(::testing::Values(1, 2, 4), ::testing::Values(64, 128)));

TEST(RefAttention, TreeNodesSeePrefixAndAncestorsOnly) {
  constexpr int64_t kHeadsKv = 2, kHeads = 4, kDim = 64;
  constexpr int32_t kPrefix = 20;
  // Tree nodes with parents (batch indices); depths 0,1,1,2,2,2,3. Their slots are a permutation of
  // 20..26, as a tree builder may place them. Sequence 1 is an ordinary decode next to the tree.
  const std::vector<int32_t> parent = {-1, 0, 0, 1, 1, 2, 3};
  const std::vector<int32_t> slot_of = {20, 23, 21, 26, 22, 24, 25};
  PagedKvFixture f({kPrefix + 7, 9}, 8, kHeadsKv, kDim, kDim, DType::kF32, 5);
  ASSERT_TRUE(f.write_ok);
  f.sequences[0].mask = AttentionMask::kTree;
  f.sequences[0].tree_start = kPrefix;
  std::vector<Query> qs;
  std::vector<int32_t> depth;
  for (size_t i = 0; i < parent.size(); ++i) {
    depth.push_back(parent[i] < 0 ? 0 : depth[parent[i]] + 1);
    qs.push_back({0, slot_of[i], kPrefix + depth[i], parent[i]});
  }
  qs.push_back({1, 8, 8, -1});
  const int64_t n = static_cast<int64_t>(qs.size());
  OpsRng rng(3);
  std::vector<float> q = rng.normals(static_cast<size_t>(n * kHeads * kDim)), out(q.size());
  BatchArrays arrays(qs);
  ASSERT_TRUE(ref::attention(view(q, {n, kHeads, kDim}), f.k_cache(), f.v_cache(), arrays.batch(f.sequences), {},
                             view(out, {n, kHeads, kDim})).ok());
  for (size_t i = 0; i < parent.size(); ++i) {
    // The dense equivalent: causal attention over prefix + the path root..node (slots ascending).
    std::vector<int32_t> keys = range(0, kPrefix), path;
    for (int32_t a = static_cast<int32_t>(i); a >= 0; a = parent[a]) path.push_back(slot_of[a]);
    std::sort(path.begin(), path.end());
    keys.insert(keys.end(), path.begin(), path.end());
    expect_matches_dense(f, qs, q, out, kHeads, static_cast<int64_t>(i), keys);
  }
  expect_matches_dense(f, qs, q, out, kHeads, n - 1, range(0, 9));
}

TEST(RefAttention, FullMaskSlidingWindowSoftCapAndSinks) {
  constexpr int64_t kHeadsKv = 1, kHeads = 2, kDim = 64;
  constexpr int32_t kWindow = 6;
  PagedKvFixture f({30, 12}, 4, kHeadsKv, kDim, kDim, DType::kF32, 9);
  ASSERT_TRUE(f.write_ok);
  f.sequences[1].mask = AttentionMask::kFull;  // a draft block at slots 8..11 seeing everything
  std::vector<Query> qs = {{0, 29, 29}, {0, 3, 3}, {0, 10, 10}, {1, 8, 8}, {1, 11, 11}};
  const int64_t n = static_cast<int64_t>(qs.size());
  OpsRng rng(4);
  std::vector<float> q = rng.normals(static_cast<size_t>(n * kHeads * kDim), 3.0), out(q.size());
  BatchArrays arrays(qs);
  arrays.parent.clear();
  const AttentionBatch batch = arrays.batch(f.sequences);
  // Bidirectional, no window.
  ASSERT_TRUE(ref::attention(view(q, {n, kHeads, kDim}), f.k_cache(), f.v_cache(), batch, {}, view(out, {n, kHeads, kDim})).ok());
  expect_matches_dense(f, qs, q, out, kHeads, 3, range(0, 12));
  expect_matches_dense(f, qs, q, out, kHeads, 4, range(0, 12));
  // Window of 6 with a soft cap of 5 and per-head sinks: a causal query at p sees p-5..p.
  const float sinks[kHeads] = {0.5f, -1.0f};
  ref::AttentionParams params;
  params.sliding_window = kWindow;
  params.soft_cap = 5.0f;
  params.sinks = sinks;
  ASSERT_TRUE(ref::attention(view(q, {n, kHeads, kDim}), f.k_cache(), f.v_cache(), batch, params, view(out, {n, kHeads, kDim})).ok());
  expect_matches_dense(f, qs, q, out, kHeads, 0, range(24, 30), 5.0, sinks);
  expect_matches_dense(f, qs, q, out, kHeads, 1, range(0, 4), 5.0, sinks);
  expect_matches_dense(f, qs, q, out, kHeads, 2, range(5, 11), 5.0, sinks);
  // The full-mask query at 8 sees keys ahead of it (positions > 8 - 6), never keys 0..2.
  expect_matches_dense(f, qs, q, out, kHeads, 3, range(3, 12), 5.0, sinks);
}

TEST(RefAttention, SixteenBitCachesAndWiderValueHeads) {
  for (DType type : {DType::kF16, DType::kBF16}) {
    constexpr int64_t kHeadsKv = 2, kHeads = 4, kDim = 64, kDimV = 128;
    PagedKvFixture f({19, 40}, 16, kHeadsKv, kDim, kDimV, type, 12);
    ASSERT_TRUE(f.write_ok);
    std::vector<Query> qs = {{0, 18, 18}, {1, 39, 39}, {1, 17, 17}};
    const int64_t n = 3;
    OpsRng rng(6);
    std::vector<float> q = rng.normals(static_cast<size_t>(n * kHeads * kDim)), out(n * kHeads * kDimV);
    BatchArrays arrays(qs);
    arrays.parent.clear();
    ASSERT_TRUE(ref::attention(view(q, {n, kHeads, kDim}), f.k_cache(), f.v_cache(), arrays.batch(f.sequences), {},
                               view(out, {n, kHeads, kDimV})).ok());
    for (int64_t i = 0; i < n; ++i) expect_matches_dense(f, qs, q, out, kHeads, i, range(0, qs[i].slot + 1));
  }
}

TEST(RefKvWrite, WritesEachTokenAtItsSlotAndNothingElse) {
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    // The fixture wrote slots 0..n_ctx-1 of two sequences through shuffled block tables; the rest of the
    // cache still holds its all-ones-bits (NaN) fill.
    PagedKvFixture f({13, 6}, 4, 2, 64, 32, type, 77);
    ASSERT_TRUE(f.write_ok);
    const TensorView k = f.k_cache(), v = f.v_cache();
    std::vector<float> row(64);
    int64_t written_rows = 0;
    for (size_t s = 0; s < f.sequences.size(); ++s) {
      for (int32_t slot = 0; slot < f.sequences[s].n_ctx; ++slot) {
        for (int64_t g = 0; g < 2; ++g) {
          ref::load_kv_row(type, ref::kv_row(k, f.sequences[s], 4, slot, g), row.data(), 64);
          for (int i = 0; i < 64; ++i) ASSERT_EQ(row[i], f.k_dense[s][slot][g * 64 + i]);
          ref::load_kv_row(type, ref::kv_row(v, f.sequences[s], 4, slot, g), row.data(), 32);
          for (int i = 0; i < 32; ++i) ASSERT_EQ(row[i], f.v_dense[s][slot][g * 32 + i]);
          ++written_rows;
        }
      }
    }
    int64_t untouched_rows = 0;
    for (int64_t r = 0; r < k.n_rows(); ++r) {
      ref::load_kv_row(type, k.row(r), row.data(), 64);
      untouched_rows += std::isnan(row[0]) ? 1 : 0;
    }
    EXPECT_EQ(untouched_rows + written_rows, k.n_rows());
    // Shapes that do not match the cache are refused.
    std::vector<float> small(2 * 2 * 16);
    const std::vector<int32_t> seq = {0, 0}, slot = {0, 1};
    const AttentionBatch batch{f.sequences, seq, slot, slot, {}};
    EXPECT_EQ(ref::kv_write(view(small, {2, 2, 16}), view(small, {2, 2, 16}), k, v, batch).code(),
              StatusCode::kInvalidArgument);
  }
}

TEST(RefAttention, RejectsMalformedBatches) {
  PagedKvFixture f({10, 5}, 4, 1, 64, 64, DType::kF32, 1);
  ASSERT_TRUE(f.write_ok);
  std::vector<float> q(2 * 2 * 64), out(q.size());
  auto run = [&](std::vector<Query> qs, std::vector<AttentionSequence> seqs) {
    BatchArrays arrays(qs);
    return ref::attention(view(q, {2, 2, 64}), f.k_cache(), f.v_cache(), arrays.batch(seqs), {}, view(out, {2, 2, 64})).code();
  };
  const std::vector<AttentionSequence> ok_seqs = f.sequences;
  EXPECT_EQ(run({{0, 9, 9}, {1, 4, 4}}, ok_seqs), StatusCode::kOk);
  EXPECT_EQ(run({{0, 10, 10}, {1, 4, 4}}, ok_seqs), StatusCode::kOutOfRange);      // slot past n_ctx
  EXPECT_EQ(run({{0, 9, 9}, {2, 4, 4}}, ok_seqs), StatusCode::kOutOfRange);        // no sequence 2
  EXPECT_EQ(run({{0, 9, 8}, {1, 4, 4}}, ok_seqs), StatusCode::kInvalidArgument);   // chain position != slot
  EXPECT_EQ(run({{0, 9, 9}, {0, 9, 9}}, ok_seqs), StatusCode::kInvalidArgument);   // two tokens, one slot
  std::vector<AttentionSequence> long_seq = ok_seqs;
  long_seq[1].n_ctx = 9;  // needs 3 blocks, the table has 2
  EXPECT_EQ(run({{0, 9, 9}, {1, 4, 4}}, long_seq), StatusCode::kInvalidArgument);
  const std::vector<int32_t> bad_table = {0, 99, 1};
  std::vector<AttentionSequence> bad_block = ok_seqs;
  bad_block[0].block_table = bad_table;
  EXPECT_EQ(run({{0, 9, 9}, {1, 4, 4}}, bad_block), StatusCode::kOutOfRange);
  std::vector<AttentionSequence> tree = ok_seqs;
  tree[0].mask = AttentionMask::kTree;
  tree[0].tree_start = 8;
  EXPECT_EQ(run({{0, 8, 8, -1}, {0, 9, 9, 0}}, tree), StatusCode::kOk);
  EXPECT_EQ(run({{0, 8, 8, -1}, {0, 9, 10, 0}}, tree), StatusCode::kInvalidArgument);  // depth mismatch
  EXPECT_EQ(run({{0, 8, 8, 1}, {0, 9, 9, -1}}, tree), StatusCode::kInvalidArgument);   // parent after child
  EXPECT_EQ(run({{0, 7, 8, -1}, {0, 9, 9, 0}}, tree), StatusCode::kInvalidArgument);   // node inside prefix
  EXPECT_EQ(run({{0, 8, 9, -1}, {0, 9, 10, 0}}, tree), StatusCode::kInvalidArgument);  // root not at tree_start
}

}  // namespace
}  // namespace saker
