// The canonical activation quantisation of the width-invariant K-quant matmul (ops/cuda/kq_canon.h), built by
// the host compiler: one scale a block, the code range and rounding, the block metadata the kernels read.
// (The kernels themselves are checked against these definitions bit for bit on the GPU, tests/ops.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cuda/kq_canon.h"

namespace saker {
namespace {

namespace kq = cuda::kq;

// A block whose sub-block j has its largest magnitude at scale[j] (the rest below it).
std::vector<float> block_with_scales(const float (&scale)[8], uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(kq::kBlock);
  for (int j = 0; j < 8; ++j) {
    for (int i = 0; i < kq::kSub; ++i) x[kq::kSub * j + i] = scale[j] * u(rng) * 0.9f;
    x[kq::kSub * j + 5] = -scale[j];  // the sub-block's max, negative
  }
  return x;
}

TEST(KqCanon, OneScaleForTheWholeBlock) {
  // Sub-blocks of very different magnitudes share the block's step d = max |x| / 127: every code within half a
  // step, the uniform shift in every sub-block's sh, and the qsums carrying it.
  const float scale[8] = {1.0f, 0.5f, 0.3f, 0.26f, 0.125f, 0.01f, 0.0f, 0.74f};
  const std::vector<float> x = block_with_scales(scale, 1);
  std::vector<int8_t> q(kq::kBlock);
  kq::KxBlock kb{};
  kq::quantize_block_host(x.data(), q.data(), &kb);
  const float d = 1.0f / 127.0f;  // max |x| = 1
  EXPECT_EQ(kb.d8, d * 0.125f);
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(kb.sh[j], kq::kMaxShift) << "sub-block " << j;
    int sum = 0;
    for (int i = 0; i < kq::kSub; ++i) {
      const int c = q[kq::kSub * j + i];
      EXPECT_LE(std::abs(c), 127);
      EXPECT_LE(std::fabs(x[kq::kSub * j + i] - d * static_cast<float>(c)), 0.5f * d * (1.0f + 1e-5f));
      sum += c;
    }
    EXPECT_EQ(kb.qsum[j], sum * (1 << kq::kMaxShift)) << "sub-block " << j;
  }
  EXPECT_EQ(q[5], -127);  // the block's largest value takes the full code range
}

TEST(KqCanon, PartialBlockLeavesAbsentSubBlocksEmpty) {
  const float scale[8] = {0.5f, 1.0f, 0.2f, 0.3f, 0.0f, 0.0f, 0.0f, 0.0f};
  const std::vector<float> x = block_with_scales(scale, 7);
  std::vector<int8_t> q(kq::kBlock, 99);
  kq::KxBlock kb{};
  kq::quantize_block_host(x.data(), q.data(), &kb, 4 * kq::kSub);
  EXPECT_EQ(kb.d8, (1.0f / 127.0f) * 0.125f);
  for (int j = 4; j < 8; ++j) EXPECT_EQ(kb.qsum[j], 0) << "sub-block " << j;
  for (int i = 4 * kq::kSub; i < kq::kBlock; ++i) EXPECT_EQ(q[i], 99) << "element " << i << " was written";
}

TEST(KqCanon, ZeroBlockIsAllZero) {
  const std::vector<float> x(kq::kBlock, 0.0f);
  std::vector<int8_t> q(kq::kBlock, 1);
  kq::KxBlock kb{};
  kq::quantize_block_host(x.data(), q.data(), &kb);
  EXPECT_EQ(kb.d8, 0.0f);
  for (int i = 0; i < kq::kBlock; ++i) EXPECT_EQ(q[i], 0);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(kb.qsum[j], 0);
}

TEST(KqCanon, StreamsCombineInTheFixedTree) {
  // Values where the order of the additions shows in the result.
  const float s[8] = {1e8f, 1.0f, -1e8f, 1.0f, 3.0f, 1e-8f, -3.0f, 0.5f};
  const float want = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  EXPECT_EQ(kq::combine_streams(s), want);
  EXPECT_NE(kq::combine_streams(s), ((((((s[0] + s[1]) + s[2]) + s[3]) + s[4]) + s[5]) + s[6]) + s[7]);
}

// A kernel that owns whole streams (the warpgroup-MMA one) walks them one after the other and folds each into the
// tree as it ends; split over 1, 2, 4 or 8 blocks of a cluster, whose subtrees meet pairwise. Every split gives
// combine_streams's bits, and span_block lists each span's blocks stream by stream.
TEST(KqCanon, StreamsFoldedOneAtATimeAndSplitAcrossBlocksGiveTheTreesBits) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    float s[kq::kStreams];
    // Magnitudes far apart, so that another order would round differently.
    for (int i = 0; i < kq::kStreams; ++i) s[i] = u(rng) * std::ldexp(1.0f, (i * 7 + trial) % 24 - 12);
    const float want = kq::combine_streams(s);
    for (const int split : {1, 2, 4, 8}) {
      const int span = kq::kStreams / split;
      float parts[kq::kStreams];
      for (int r = 0; r < split; ++r) {
        float slots[3] = {0.0f, 0.0f, 0.0f};
        float sum = 0.0f;
        int done = 0;
        for (int leaf = 0; leaf < span; ++leaf) {
          done += kq::fold_stream(
              leaf, span, s[r * span + leaf], [&](int level) -> float& { return slots[level]; }, &sum);
        }
        ASSERT_EQ(done, 1) << "the span's sum comes once, at its last stream";
        parts[r] = sum;
      }
      const float got = kq::combine_spans(parts, split);
      EXPECT_EQ(std::memcmp(&got, &want, sizeof(float)), 0) << "split " << split << " trial " << trial;
    }
  }
  // 19 blocks (streams 0-2 have three, 3-7 two) over spans of two streams: stream 2's blocks, then stream 3's.
  EXPECT_EQ(kq::span_block(0, 2, 2, 19), 2);
  EXPECT_EQ(kq::span_block(2, 2, 2, 19), 18);
  EXPECT_EQ(kq::span_block(3, 2, 2, 19), 3);
  EXPECT_EQ(kq::span_block(4, 2, 2, 19), 11);
  EXPECT_EQ(kq::span_block(5, 2, 2, 19), -1);
  // Fewer blocks than streams: the empty streams have none.
  EXPECT_EQ(kq::span_block(0, 4, 4, 3), -1);
  EXPECT_EQ(kq::span_block(2, 0, 4, 3), 2);
  EXPECT_EQ(kq::span_block(3, 0, 4, 3), -1);
}

}  // namespace
}  // namespace saker
