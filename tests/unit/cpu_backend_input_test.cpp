// The two ops the DFlash drafter's context step added to the op surface, on the CPU backend: load_input
// copies the request's host rows, and qk_norm_rope_kv_write with no query heads (k|v rows only) writes the
// same K/V pages, bit for bit, as the full q|k|v rows do.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/sequence_batch.h"
#include "models/kv_cache.h"
#include "ops/cpu/cpu_backend.h"

namespace saker {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(CpuBackendInput, LoadInputCopiesTheRequestsRowsAndSaysWhenThereAreNone) {
  CpuBackend b{CpuBackendOptions{}};
  constexpr int64_t kT = 3, kCols = 5, kStride = 7;
  const ActivationSpec spec{kCols};
  AttentionSpec attn;
  attn.n_head = attn.n_head_kv = 1;
  attn.head_dim = 8;
  ASSERT_TRUE(b.reserve(std::span<const ActivationSpec>(&spec, 1), 4, attn).ok());
  auto kv = KvCache::create(kv_cache_config(1, 1, 8, 16, DType::kF32));
  ASSERT_TRUE(kv.ok());
  const std::vector<int32_t> table = {0}, tokens(kT, 0);
  const SequenceBatch batch(table, 0, kT, AttentionMask::kCausal);
  const std::vector<float> input = random_floats(kT * kStride, 1);
  std::vector<float> got(kT * kCols, -1.0f);
  StepRequest r;
  r.tokens = tokens;
  r.attn = &batch.attn;
  r.kv = (*kv)->layers();
  r.n_vocab = 4;
  r.input = input.data();
  r.input_stride = kStride;
  StepProgram p;
  p.body = [&] {
    const Act a = b.buffer(0, kT);
    if (Status s = b.load_input(a); !s.ok()) return s;
    return b.copy_rows_to_host(a, got.data(), kCols);
  };
  p.head = [](int64_t, int64_t) { return Status{}; };
  ASSERT_TRUE(b.run_step(r, p).ok());
  for (int64_t t = 0; t < kT; ++t) {
    EXPECT_EQ(0, std::memcmp(got.data() + t * kCols, input.data() + t * kStride, kCols * sizeof(float))) << t;
  }
  r.input = nullptr;
  const Status none = b.run_step(r, p);
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.message().find("load_input"), std::string::npos) << none.to_string();
}

TEST(CpuBackendInput, KvOnlyRowsWriteTheSamePagesAsFullRows) {
  constexpr int64_t kT = 5, kHeads = 4, kKvHeads = 2, kDim = 8, kQ = kHeads * kDim, kKv = kKvHeads * kDim;
  const std::vector<float> norm = random_floats(kDim, 2);
  const TensorView norm_view = TensorView::contiguous(const_cast<float*>(norm.data()), DType::kF32, {kDim});
  const std::vector<float> qkv = random_floats(kT * (kQ + 2 * kKv), 3);  // [T, q | k | v]
  const std::vector<int32_t> table = {0}, tokens(kT, 0);
  const SequenceBatch batch(table, 2, kT, AttentionMask::kCausal);  // positions 2..6
  RopeSpec rope;
  rope.theta_base = 10000.0;

  // heads: 4 (q|k|v rows) or 0 (k|v rows); the cache's page 0 afterwards.
  auto pages = [&](int64_t heads) {
    CpuBackend b{CpuBackendOptions{}};
    AttentionSpec a;
    a.n_head = heads;
    a.n_head_kv = kKvHeads;
    a.head_dim = kDim;
    const ActivationSpec spec{heads * kDim + 2 * kKv};
    EXPECT_TRUE(b.reserve(std::span<const ActivationSpec>(&spec, 1), 4, a).ok());
    auto qn = b.prepare_vector(std::span<const TensorView>(&norm_view, 1));
    auto kn = b.prepare_vector(std::span<const TensorView>(&norm_view, 1));
    auto kv = KvCache::create(kv_cache_config(1, kKvHeads, kDim, 16, DType::kF32));
    EXPECT_TRUE(qn.ok() && kn.ok() && kv.ok());
    StepRequest r;
    r.tokens = tokens;
    r.attn = &batch.attn;
    r.kv = (*kv)->layers();
    r.n_vocab = 4;
    StepProgram p;
    p.body = [&] {
      const Act rows = b.buffer(0, kT);
      for (int64_t t = 0; t < kT; ++t) {  // the k|v columns only when there are no query heads
        const float* src = qkv.data() + t * (kQ + 2 * kKv) + (heads == 0 ? kQ : 0);
        std::memcpy(rows.data + t * rows.stride, src, rows.cols * sizeof(float));
      }
      return b.qk_norm_rope_kv_write(rows, a, heads > 0 ? *qn : nullptr, *kn, 1e-6f, rope, 0);
    };
    p.head = [](int64_t, int64_t) { return Status{}; };
    EXPECT_TRUE(b.run_step(r, p).ok());
    std::vector<uint8_t> page(static_cast<size_t>((*kv)->page_bytes()));
    EXPECT_TRUE((*kv)->read_page(0, page.data()).ok());
    return page;
  };
  const std::vector<uint8_t> full = pages(kHeads), kv_only = pages(0);
  ASSERT_EQ(full.size(), kv_only.size());
  EXPECT_EQ(0, std::memcmp(full.data(), kv_only.data(), full.size()));
}

}  // namespace
}  // namespace saker
