// What the DFlash drafter added to the op surface, on the CPU backend: load_input reads kept rows;
// qk_norm_rope_kv_write with no query heads (k|v rows only) writes the same K/V pages, bit for bit, as the full q|k|v
// rows do; and the head's top-k outputs are each row's top ids and log-probabilities.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/logits.h"
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

// Kept rows: keep_rows appends host rows (contiguous, strided, or picked out of order), load_input reads the
// ones a step names by StepRequest::input_rows, tap_rows writes the step's taps columns; a step that names no
// kept rows, a device source and rows of another width are refused.
TEST(CpuBackendInput, LoadInputReadsTheKeptRowsAStepNames) {
  CpuBackend b{CpuBackendOptions{}};
  constexpr int64_t kT = 4, kCols = 5, kStride = 7;
  const ActivationSpec spec{kCols};
  AttentionSpec attn;
  attn.n_head = attn.n_head_kv = 1;
  attn.head_dim = 8;
  ASSERT_TRUE(b.reserve(std::span<const ActivationSpec>(&spec, 1), 4, attn).ok());
  auto kv = KvCache::create(kv_cache_config(1, 1, 8, 16, DType::kF32));
  ASSERT_TRUE(kv.ok());
  const std::vector<int32_t> table = {0}, tokens(kT, 0);
  const SequenceBatch batch(table, 0, kT, AttentionMask::kCausal);
  const std::vector<float> src = random_floats(6 * kStride, 1);  // 6 rows of kStride floats
  // Rows 0, 1 as they come, then rows 5, 3 picked: kept rows 0..3 = src rows 0, 1, 5, 3.
  auto first = b.keep_rows(FloatRows{.data = src.data(), .stride = kStride, .n = 2}, kCols);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(*first, 0);
  const std::vector<int32_t> pick = {5, 3};
  auto second = b.keep_rows(FloatRows{.data = src.data(), .stride = kStride, .n = 2, .pick = pick}, kCols);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(*second, 2);
  EXPECT_EQ(b.n_kept_rows(), 4);
  EXPECT_FALSE(b.keep_rows(FloatRows{.data = src.data(), .stride = kStride, .n = 1}, kCols - 1).ok());
  EXPECT_FALSE(b.keep_rows(FloatRows{.data = src.data(), .stride = kStride, .n = 1, .on_device = true}, kCols).ok());

  const std::vector<int32_t> input_rows = {3, 0, 2, 2};  // src rows 3, 0, 5, 5
  std::vector<float> got(kT * (kCols + 1), -1.0f);
  StepRequest r;
  r.tokens = tokens;
  r.attn = &batch.attn;
  r.kv = (*kv)->layers();
  r.n_vocab = 4;
  r.input_rows = input_rows;
  r.taps_out = got.data();
  r.taps_stride = kCols + 1;
  const std::vector<int32_t> layers = {0};
  r.tap_layers = layers;
  StepProgram p;
  p.body = [&] {
    const Act a = b.buffer(0, kT);
    if (Status s = b.load_input(a); !s.ok()) return s;
    return b.tap_rows(a, 1);
  };
  p.head = [](int64_t, int64_t) { return Status{}; };
  ASSERT_TRUE(b.run_step(r, p).ok());
  const int32_t want[kT] = {3, 0, 5, 5};
  for (int64_t t = 0; t < kT; ++t) {
    EXPECT_EQ(got[t * (kCols + 1)], -1.0f) << t;  // column 0 is not the copy's
    EXPECT_EQ(0, std::memcmp(got.data() + t * (kCols + 1) + 1, src.data() + want[t] * kStride, kCols * sizeof(float)))
        << t;
  }
  const std::vector<int32_t> outside = {0, 1, 2, 4};  // kept row 4 does not exist
  r.input_rows = outside;
  EXPECT_FALSE(b.run_step(r, p).ok());
  r.input_rows = {};
  const Status none = b.run_step(r, p);
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.message().find("load_input"), std::string::npos) << none.to_string();
  b.clear_kept_rows();
  EXPECT_EQ(b.n_kept_rows(), 0);
  r.taps_on_device = true;  // no device to keep them on
  EXPECT_FALSE(b.run_step(r, p).ok());
}

// Verify rows (AttentionSequence::verify: a draft chain sent as causal rows) stay off BLAS, so each row of a
// 16-row step gets the bits it gets alone; the same rows as a prefill run may take BLAS.
TEST(CpuBackendInput, VerifyRowsRoundAsOneRowSteps) {
  constexpr int64_t kRows = 16, kIn = 256, kOut = 64;
  const std::vector<float> w = random_floats(kOut * kIn, 4), x = random_floats(kRows * kIn, 5);
  const TensorView wv = TensorView::contiguous(const_cast<float*>(w.data()), DType::kF32, {kOut, kIn});
  CpuBackend b{CpuBackendOptions{}};
  const ActivationSpec specs[2] = {{kIn}, {kOut}};
  AttentionSpec attn;
  attn.n_head = attn.n_head_kv = 1;
  attn.head_dim = 8;
  ASSERT_TRUE(b.reserve(specs, 4, attn).ok());
  auto wm = b.prepare_matrix(std::span<const TensorView>(&wv, 1), "w");
  ASSERT_TRUE(wm.ok()) << wm.status().to_string();
  auto kv = KvCache::create(kv_cache_config(1, 1, 8, 16, DType::kF32));
  ASSERT_TRUE(kv.ok());
  const std::vector<int32_t> table = {0, 1}, tokens(kRows, 0);
  // Rows [first, first + n) of x through the matrix in one step; their outputs.
  auto run = [&](int64_t first, int64_t n, bool verify) {
    SequenceBatch batch(table, first, n, AttentionMask::kCausal);
    batch.sequence.verify = verify;
    StepRequest r;
    r.tokens = std::span<const int32_t>(tokens).subspan(0, static_cast<size_t>(n));
    r.attn = &batch.attn;
    r.kv = (*kv)->layers();
    r.n_vocab = 4;
    std::vector<float> y(static_cast<size_t>(n * kOut));
    StepProgram p;
    p.body = [&] {
      const Act in = b.buffer(0, n), out = b.buffer(1, n);
      for (int64_t t = 0; t < n; ++t) std::memcpy(in.data + t * in.stride, x.data() + (first + t) * kIn, kIn * 4);
      if (Status s = b.matmul(**wm, in, out, false); !s.ok()) return s;
      for (int64_t t = 0; t < n; ++t) std::memcpy(y.data() + t * kOut, out.data + t * out.stride, kOut * 4);
      return Status{};
    };
    p.head = [](int64_t, int64_t) { return Status{}; };
    EXPECT_TRUE(b.run_step(r, p).ok());
    return y;
  };
  const std::vector<float> verify = run(0, kRows, true);
  int differing = 0;
  for (int64_t t = 0; t < kRows; ++t) {
    const std::vector<float> alone = run(t, 1, false);
    differing += std::memcmp(alone.data(), verify.data() + t * kOut, kOut * sizeof(float)) != 0 ? 1 : 0;
  }
  EXPECT_EQ(differing, 0) << "of " << kRows << " verify rows against one-row steps";
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
      return b.qk_norm_rope_kv_write(rows, nullptr, a, heads > 0 ? *qn : nullptr, *kn, 1e-6f, rope, 0);
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

// The head's top-k outputs (what a drafter's tree asks for instead of logits): the ids of core/logits.h's
// top_ids and logit - log_sum_exp, for every output row; out-of-range k is refused.
TEST(CpuBackendInput, TopKOutputsAreTheRowsTopIdsAndLogProbabilities) {
  CpuBackend b{CpuBackendOptions{}};
  constexpr int64_t kT = 3, kVocab = 40;
  constexpr int32_t kK = 5;
  AttentionSpec attn;
  attn.n_head = attn.n_head_kv = 1;
  attn.head_dim = 8;
  ASSERT_TRUE(b.reserve({}, kVocab, attn).ok());
  auto kv = KvCache::create(kv_cache_config(1, 1, 8, 16, DType::kF32));
  ASSERT_TRUE(kv.ok());
  const std::vector<int32_t> table = {0}, tokens(kT, 0), rows = {0, 2};
  const SequenceBatch batch(table, 0, kT, AttentionMask::kCausal);
  std::vector<float> logits = random_floats(rows.size() * kVocab, 4);
  logits[7] = logits[3] = 9.0f;  // a tie at the top of row 0: id 3 first
  std::vector<int32_t> ids(rows.size() * kK, -1);
  std::vector<float> lp(rows.size() * kK, 0.0f);
  StepRequest r;
  r.tokens = tokens;
  r.attn = &batch.attn;
  r.output_rows = rows;
  r.kv = (*kv)->layers();
  r.n_vocab = kVocab;
  r.top_k = kK;
  r.top_ids = ids.data();
  r.top_logprobs = lp.data();
  StepProgram p;
  p.body = [] { return Status{}; };
  p.head = [&](int64_t first, int64_t n) {
    const Act out = b.logits(first, n);
    std::copy_n(logits.data() + first * kVocab, n * kVocab, out.data);
    return b.emit_outputs(out, first);
  };
  ASSERT_TRUE(b.run_step(r, p).ok());
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::span<const float> row(logits.data() + i * kVocab, kVocab);
    const std::vector<int32_t> want = top_ids(row, kK);
    for (int32_t j = 0; j < kK; ++j) {
      EXPECT_EQ(ids[i * kK + j], want[j]) << "row " << i << " rank " << j;
      EXPECT_EQ(lp[i * kK + j], row[want[j]] - log_sum_exp(row)) << "row " << i << " rank " << j;
    }
  }
  EXPECT_EQ(ids[0], 3);
  EXPECT_EQ(ids[1], 7);
  r.top_k = kMaxTopK + 1;
  EXPECT_FALSE(b.run_step(r, p).ok());
}

}  // namespace
}  // namespace saker
