// cpu::attention against ref::attention on mixed batches: prefill, decode, a speculative tree and a
// bidirectional draft block in one flattened batch, GQA ratios 1/2/4/8, head_dim 64/128, f32/f16/bf16 caches,
// sliding window + soft cap + sinks; both the AVX2 and the portable path; NaN propagation.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "ops/cpu/attention.h"
#include "ops/ref/attention.h"
#include "unit/ops_attention_test_util.h"

namespace saker {
namespace {

using testing::OpsRng;
using testing::PagedKvFixture;
using testing::view;

// f32 scores and sums against double: outputs are O(1), so an absolute bound.
constexpr double kMaxAbsError = 2e-5;

// Sequences: 0 prefill of 45, 1 decode at 70, 2 a tree of 6 nodes after a prefix of 30, 3 a bidirectional
// draft block of 8 after 12 context slots.
struct MixedBatch {
  std::vector<int32_t> seq, slot, pos, parent;
  void add(int32_t s, int32_t sl, int32_t p, int32_t par = -1) {
    seq.push_back(s);
    slot.push_back(sl);
    pos.push_back(p);
    parent.push_back(par);
  }
  explicit MixedBatch(PagedKvFixture& f) {
    f.sequences[2].mask = AttentionMask::kTree;
    f.sequences[2].tree_start = 30;
    f.sequences[3].mask = AttentionMask::kFull;
    for (int32_t p = 0; p < 45; ++p) add(0, p, p);
    add(1, 69, 69);
    const int32_t base = static_cast<int32_t>(seq.size());
    const int32_t tree_parent[6] = {-1, 0, 0, 1, 3, 2}, tree_slot[6] = {30, 32, 31, 35, 33, 34};
    for (int i = 0; i < 6; ++i) {
      const int32_t par = tree_parent[i] < 0 ? -1 : base + tree_parent[i];
      add(2, tree_slot[i], par < 0 ? 30 : pos[par] + 1, par);
    }
    for (int32_t p = 12; p < 20; ++p) add(3, p, p);
  }
  AttentionBatch batch(const PagedKvFixture& f) const { return {f.sequences, seq, slot, pos, parent}; }
  int64_t n() const { return static_cast<int64_t>(seq.size()); }
};

class CpuAttention : public ::testing::TestWithParam<std::tuple<int, int, DType>> {};

TEST_P(CpuAttention, MatchesRefOnAMixedBatch) {
  const auto [gqa, head_dim, cache_type] = GetParam();
  constexpr int64_t kHeadsKv = 2;
  const int64_t n_head = kHeadsKv * gqa;
  PagedKvFixture f({45, 70, 36, 20}, 16, kHeadsKv, head_dim, head_dim, cache_type, 200 + gqa);
  ASSERT_TRUE(f.write_ok);
  MixedBatch mb(f);
  const AttentionBatch batch = mb.batch(f);
  const int64_t n = mb.n();
  OpsRng rng(8);
  std::vector<float> q = rng.normals(static_cast<size_t>(n * n_head * head_dim), 2.0);
  std::vector<float> sinks = rng.normals(static_cast<size_t>(n_head));
  ref::AttentionParams plain, fancy;
  fancy.sliding_window = 9;
  fancy.soft_cap = 4.0f;
  fancy.sinks = sinks.data();
  for (const ref::AttentionParams& params : {plain, fancy}) {
    std::vector<float> expect(static_cast<size_t>(n * n_head * head_dim));
    ASSERT_TRUE(ref::attention(view(q, {n, n_head, head_dim}), f.k_cache(), f.v_cache(), batch, params,
                               view(expect, {n, n_head, head_dim})).ok());
    for (bool simd : {true, false}) {
      std::vector<float> got(expect.size(), -9.0f);
      ASSERT_TRUE(cpu::attention(view(q, {n, n_head, head_dim}), f.k_cache(), f.v_cache(), batch, params,
                                 view(got, {n, n_head, head_dim}), {simd}).ok());
      double worst = 0.0;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << i;
        worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - expect[i]));
      }
      EXPECT_LE(worst, kMaxAbsError) << "simd " << simd << " window " << params.sliding_window;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GqaHeadDimCache, CpuAttention,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 8), ::testing::Values(64, 128),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
                         [](const auto& info) {
                           return "gqa" + std::to_string(std::get<0>(info.param)) + "_d" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  std::string(dtype_name(std::get<2>(info.param)));
                         });

TEST(CpuAttentionTest, NanInAQueryReachesOnlyItsOutput) {
  PagedKvFixture f({10}, 4, 1, 64, 64, DType::kF32, 3);
  ASSERT_TRUE(f.write_ok);
  const std::vector<int32_t> seq = {0, 0}, slot = {8, 9};
  const AttentionBatch batch{f.sequences, seq, slot, slot, {}};
  OpsRng rng(1);
  std::vector<float> q = rng.normals(2 * 64), out(2 * 64), ref_out(2 * 64);
  q[64 + 5] = NAN;
  ASSERT_TRUE(cpu::attention(view(q, {2, 1, 64}), f.k_cache(), f.v_cache(), batch, {}, view(out, {2, 1, 64})).ok());
  ASSERT_TRUE(ref::attention(view(q, {2, 1, 64}), f.k_cache(), f.v_cache(), batch, {}, view(ref_out, {2, 1, 64})).ok());
  for (int i = 0; i < 64; ++i) {
    EXPECT_TRUE(std::isfinite(out[i]) && std::isfinite(ref_out[i]));
    EXPECT_TRUE(std::isnan(out[64 + i]) && std::isnan(ref_out[64 + i]));
  }
}

}  // namespace
}  // namespace saker
