// CUDA paged attention and kv_write against the ref ops on the same f16 cache. Batches come from
// unit/attention_batch_builder.h: several sequences per batch, shuffled block tables, chains, full masks
// and branching trees after a prefix. Outputs are poisoned with NaN before every run.
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "core/half.h"
#include "ops/cuda/attention.h"
#include "ops/cuda/kq_canon.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda_test_util.h"
#include "ops/matmul_test_util.h"
#include "ops/ref/attention.h"
#include "ops/ref/kv_write.h"
#include "unit/attention_batch_builder.h"

namespace saker {
namespace {

using testing::BuiltBatch;
using testing::SeqSpec;
constexpr AttentionMask kCausal = AttentionMask::kCausal;
constexpr AttentionMask kTree = AttentionMask::kTree;
constexpr AttentionMask kFull = AttentionMask::kFull;

// The f32 split-K kernel differs from the double ref by f32 rounding only; the tensor-core kernel rounds
// q and the softmax weights to f16.
constexpr double kSplitNmse = 1e-6;
constexpr double kTiledNmse = 1e-4;

struct Shape {
  int32_t n_head = 8, n_head_kv = 2, head_dim = 128;
  float scale = 0.0f, soft_cap = 0.0f;
  int32_t window = 0;
  int32_t max_ctx = 0;  // 0: the batch's longest sequence
  cuda::AttentionKernel kernel = cuda::AttentionKernel::kAuto;
};

std::vector<uint16_t> random_f16(std::mt19937& rng, size_t n) {
  std::normal_distribution<float> dist;
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = fp32_to_fp16(dist(rng));
  return v;
}

// Runs ref::attention and cuda::attention on one batch; returns the NMSE (inf on any failure).
double run_case(const BuiltBatch& b, const Shape& sh, uint32_t seed, std::string* why) {
  std::mt19937 rng(seed);
  const AttentionBatch batch = b.batch();
  const int64_t T = batch.n_tokens(), H = sh.n_head, KV = sh.n_head_kv, D = sh.head_dim;
  const int64_t cache_elems = static_cast<int64_t>(b.n_blocks) * b.block_size * KV * D;
  std::vector<uint16_t> kc = random_f16(rng, cache_elems), vc = random_f16(rng, cache_elems);
  std::normal_distribution<float> dist;
  const int64_t q_stride = H * D + 2 * KV * D;  // q inside a fused qkv row
  std::vector<float> q(T * q_stride);
  for (float& x : q) x = dist(rng);
  std::vector<float> q_packed(T * H * D), want(T * H * D);
  for (int64_t t = 0; t < T; ++t) std::memcpy(&q_packed[t * H * D], &q[t * q_stride], sizeof(float) * H * D);

  ref::AttentionParams rp;
  rp.scale = sh.scale;
  rp.soft_cap = sh.soft_cap;
  rp.sliding_window = sh.window;
  const Status rs = ref::attention(TensorView::contiguous(q_packed.data(), DType::kF32, {T, H, D}),
                                   TensorView::contiguous(kc.data(), DType::kF16, {b.n_blocks, b.block_size, KV, D}),
                                   TensorView::contiguous(vc.data(), DType::kF16, {b.n_blocks, b.block_size, KV, D}),
                                   batch, rp, TensorView::contiguous(want.data(), DType::kF32, {T, H, D}));
  if (!rs.ok()) {
    *why = "ref: " + rs.message();
    return INFINITY;
  }

  std::vector<int32_t> packed;
  cuda::DeviceAttentionBatch db;
  db.layout = cuda::pack_attention_batch(batch, &packed);
  db.block_size = b.block_size;
  testing::DeviceArray<int32_t> dpacked(packed);
  db.data = dpacked.get();
  cuda::AttentionLaunch launch;
  launch.n_head = sh.n_head;
  launch.n_head_kv = sh.n_head_kv;
  launch.head_dim = sh.head_dim;
  launch.scale = sh.scale;
  launch.soft_cap = sh.soft_cap;
  launch.sliding_window = sh.window;
  launch.max_ctx = sh.max_ctx;
  launch.kernel = sh.kernel;
  for (const AttentionSequence& s : b.seqs) launch.max_ctx = std::max(launch.max_ctx, s.n_ctx);

  testing::DeviceArray<uint16_t> dk(kc), dv(vc);
  testing::DeviceArray<float> dq(q), dout(T * H * D);
  const size_t ws = cuda::attention_workspace_bytes(db, launch);
  testing::DeviceArray<char> dws(std::max<size_t>(ws, 1));
  if (cudaMemset(dout.get(), 0xFF, sizeof(float) * T * H * D) != cudaSuccess) return INFINITY;
  const Status cs = cuda::attention(dq.get(), q_stride, reinterpret_cast<const __half*>(dk.get()),
                                    reinterpret_cast<const __half*>(dv.get()), db, launch, dout.get(), dws.get(), ws,
                                    nullptr);
  if (!cs.ok()) {
    *why = "cuda: " + cs.message();
    return INFINITY;
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    *why = std::string("cuda: ") + cudaGetErrorString(e);
    return INFINITY;
  }
  const std::vector<float> got = dout.to_host();
  // Through attention_matmul's fused path too: cuda::attention leaving out's int8 blocks for the output
  // projection writes the same out, and the projection on those blocks equals the projection's own (K-quant
  // weights, decode and verify widths).
  if ((H * D) % cuda::kq::kBlock == 0 && T <= 64 && testing::invariant_matmul_env_on()) {
    constexpr int64_t kProj = 64;
    auto ctx = cuda::MatmulContext::create(64, H * D, kProj);
    if (!ctx.ok()) {
      *why = "matmul context: " + ctx.status().message();
      return INFINITY;
    }
    const std::vector<uint8_t> wb = testing::make_weights(DType::kQ4_K, kProj, H * D, seed + 11);
    cuda::DeviceMatrix dm = testing::upload_weights(DType::kQ4_K, wb, kProj, H * D);
    if (cuda::matmul_quantizes_input(**ctx, dm, dout.get(), T)) {
      testing::DeviceArray<float> dout2(T * H * D), y_own(T * kProj), y_fused(T * kProj);
      bool ok = cudaMemset(dout2.get(), 0xFF, sizeof(float) * T * H * D) == cudaSuccess &&
                cuda::matmul(**ctx, dm, dout.get(), T, y_own.get(), kProj, false, nullptr).ok();
      const Status qs = cuda::attention(dq.get(), q_stride, reinterpret_cast<const __half*>(dk.get()),
                                        reinterpret_cast<const __half*>(dv.get()), db, launch, dout2.get(), dws.get(),
                                        ws, nullptr, ctx->get());
      ok = ok && qs.ok() &&
           cuda::matmul(**ctx, dm, dout2.get(), T, y_fused.get(), kProj, false, nullptr, /*x_quantized=*/true).ok() &&
           cudaDeviceSynchronize() == cudaSuccess;
      const std::vector<float> got2 = dout2.to_host(), a = y_own.to_host(), b2 = y_fused.to_host();
      cuda::free_matrix(&dm);
      if (!ok) {
        *why = "cuda, with the output's int8 blocks: " + (qs.ok() ? std::string("a launch failed") : qs.message());
        return INFINITY;
      }
      if (std::memcmp(got.data(), got2.data(), sizeof(float) * got.size()) != 0) {
        *why = "the output differs when its int8 blocks are written too";
        return INFINITY;
      }
      if (std::memcmp(a.data(), b2.data(), sizeof(float) * a.size()) != 0) {
        *why = "the projection of the attention's int8 blocks differs from the projection's own quantisation";
        return INFINITY;
      }
    } else {
      cuda::free_matrix(&dm);
    }
  }
  return testing::nmse(got, want);
}

void expect_case(const std::vector<SeqSpec>& specs, const Shape& sh, uint32_t seed, const std::string& what,
                 bool interleave = false, int32_t block_size = 16) {
  const BuiltBatch b = testing::build_batch(specs, block_size, seed, interleave);
  ASSERT_TRUE(b.batch().validate(b.n_blocks, b.block_size).ok()) << what;
  // Every case through the automatic choice and through each kernel forced.
  for (cuda::AttentionKernel k : {cuda::AttentionKernel::kAuto, cuda::AttentionKernel::kSplitK,
                                  cuda::AttentionKernel::kTiled, cuda::AttentionKernel::kDecode,
                                  cuda::AttentionKernel::kVerify, cuda::AttentionKernel::kTiledPair,
                                  cuda::AttentionKernel::kWarpDecode, cuda::AttentionKernel::kSplitFixed,
                                  cuda::AttentionKernel::kVerifyFixed}) {
    Shape s = sh;
    s.kernel = k;
    std::string why;
    const double e = run_case(b, s, seed * 7 + 1, &why);
    const char* name = k == cuda::AttentionKernel::kAuto     ? "auto"
                       : k == cuda::AttentionKernel::kSplitK ? "split"
                       : k == cuda::AttentionKernel::kTiled  ? "tiled"
                       : k == cuda::AttentionKernel::kDecode ? "decode"
                       : k == cuda::AttentionKernel::kVerify ? "verify"
                       : k == cuda::AttentionKernel::kWarpDecode ? "warp"
                       : k == cuda::AttentionKernel::kSplitFixed ? "fixed"
                       : k == cuda::AttentionKernel::kVerifyFixed ? "vfixed"
                                                             : "tpair";
    std::printf("[ nmse ] %-40s %-6s %.3g\n", what.c_str(), name, e);
    const bool f32 = k == cuda::AttentionKernel::kSplitK || k == cuda::AttentionKernel::kDecode ||
                     k == cuda::AttentionKernel::kWarpDecode || k == cuda::AttentionKernel::kSplitFixed;
    EXPECT_LT(e, f32 ? kSplitNmse : kTiledNmse) << what << " kernel " << name << " " << why;
  }
}

TEST(CudaAttention, DecodeRowsAgainstContexts) {
  SAKER_REQUIRE_GPU();
  uint32_t seed = 100;
  for (int32_t rows : {1, 4, 16, 64}) {
    for (int32_t ctx : {1, 17, 1000, 5000, 20000}) {  // 20000: blocks take several slices each
      expect_case({{ctx, rows, kCausal}}, Shape{}, seed++, "rows " + std::to_string(rows) + " ctx " + std::to_string(ctx));
    }
  }
}

TEST(CudaAttention, ManySequencesOneTokenEach) {
  SAKER_REQUIRE_GPU();
  expect_case({{0, 1, kCausal}, {16, 1, kCausal}, {999, 1, kCausal}, {40, 1, kCausal}, {3000, 1, kCausal}}, Shape{},
              200, "five sequences");
  Shape cap = Shape{};
  cap.max_ctx = 32768;  // capacity far above the lengths: most splits see no keys
  expect_case({{5, 1, kCausal}, {70, 1, kCausal}}, cap, 201, "capacity 32768");
  cap.max_ctx = 8192;  // several decode rounds per split (more keys than the plan's capacity share)
  expect_case({{8000, 1, kCausal}, {3, 1, kCausal}}, cap, 202, "capacity 8192 near full");
}

TEST(CudaAttention, HeadDim32Golden) {
  SAKER_REQUIRE_GPU();
  Shape s;
  s.head_dim = 32;
  s.n_head = 4;
  s.n_head_kv = 2;
  expect_case({{0, 20, kCausal}}, s, 210, "D 32 prefill");
  expect_case({{19, 1, kCausal}}, s, 211, "D 32 decode");
  expect_case({{600, 1, kCausal}, {40, 8, kCausal}}, s, 212, "D 32 decode + verify", true);
}

TEST(CudaAttention, UnsupportedHeadDimIsAnError) {
  SAKER_REQUIRE_GPU();
  Shape s;
  s.head_dim = 48;
  const BuiltBatch b = testing::build_batch({{10, 1, kCausal}}, 16, 220, false);
  std::string why;
  EXPECT_EQ(run_case(b, s, 221, &why), INFINITY);
  EXPECT_NE(why.find("head_dim"), std::string::npos) << why;
}

TEST(CudaAttention, CausalPrefillWithAndWithoutPrefix) {
  SAKER_REQUIRE_GPU();
  uint32_t seed = 300;
  for (int32_t n : {1, 7, 64, 129, 700}) {
    for (int32_t prefix : {0, 300}) {
      expect_case({{prefix, n, kCausal}}, Shape{}, seed++, "prefill " + std::to_string(n) + " prefix " + std::to_string(prefix));
    }
  }
}

TEST(CudaAttention, MixedBatchInterleaved) {
  SAKER_REQUIRE_GPU();
  expect_case({{0, 100, kCausal}, {50, 1, kCausal}, {7, 3, kCausal}, {400, 1, kCausal}}, Shape{}, 400,
              "prefill + decodes interleaved", true);
  expect_case({{0, 100, kCausal}, {50, 1, kCausal}, {7, 3, kCausal}}, Shape{}, 401, "block size 5", false, 5);
}

TEST(CudaAttention, TreeAfterPrefix) {
  SAKER_REQUIRE_GPU();
  expect_case({{100, 12, kTree}}, Shape{}, 500, "tree 12");
  expect_case({{700, 64, kTree}, {33, 1, kCausal}}, Shape{}, 501, "tree 64 + chain", true);
  expect_case({{0, 9, kTree}}, Shape{}, 502, "tree without prefix");
  Shape w = Shape{};
  w.window = 20;
  expect_case({{100, 30, kTree}}, w, 503, "tree with sliding window");
}

TEST(CudaAttention, FullMask) {
  SAKER_REQUIRE_GPU();
  expect_case({{50, 16, kFull}}, Shape{}, 600, "full");
  expect_case({{0, 40, kFull}, {10, 1, kCausal}}, Shape{}, 601, "full + chain", true);
}

TEST(CudaAttention, SlidingWindowAndSoftCap) {
  SAKER_REQUIRE_GPU();
  Shape w = Shape{};
  w.window = 64;
  expect_case({{200, 300, kCausal}}, w, 700, "window prefill");
  expect_case({{5000, 1, kCausal}, {10, 4, kCausal}}, w, 701, "window decode");
  w.window = 1;
  expect_case({{30, 5, kCausal}}, w, 702, "window 1");
  Shape c = Shape{};
  c.soft_cap = 5.0f;
  c.scale = 0.3f;
  expect_case({{100, 20, kCausal}, {1000, 1, kCausal}}, c, 703, "soft cap");
}

TEST(CudaAttention, GqaRatiosAndHeadDims) {
  SAKER_REQUIRE_GPU();
  uint32_t seed = 800;
  for (int32_t head_dim : {32, 64, 80, 96, 128, 256}) {
    for (int32_t ratio : {1, 3, 4, 8}) {
      Shape s;
      s.head_dim = head_dim;
      s.n_head_kv = 2;
      s.n_head = 2 * ratio;
      const std::string what = "D " + std::to_string(head_dim) + " ratio " + std::to_string(ratio);
      expect_case({{300, 1, kCausal}, {2000, 1, kCausal}}, s, seed++, what + " decode");
      expect_case({{40, 90, kCausal}}, s, seed++, what + " prefill");
      expect_case({{60, 10, kTree}}, s, seed++, what + " tree");
    }
  }
}

TEST(CudaAttention, WorkspaceDependsOnLayoutOnly) {
  // Every valid query sees at least its own key, so the "no key -> zeros" rule is exercised only by the
  // kernels' guards; here: the launch plan (and so a captured graph) does not depend on the lengths.
  const BuiltBatch a = testing::build_batch({{10, 1, kCausal}, {20, 1, kCausal}}, 16, 1, false);
  const BuiltBatch b = testing::build_batch({{11, 1, kCausal}, {21, 1, kCausal}}, 16, 2, false);
  std::vector<int32_t> pa, pb;
  cuda::DeviceAttentionBatch da, dbb;
  da.layout = cuda::pack_attention_batch(a.batch(), &pa);
  dbb.layout = cuda::pack_attention_batch(b.batch(), &pb);
  cuda::AttentionLaunch l;
  l.n_head = 32;
  l.n_head_kv = 8;
  l.head_dim = 128;
  l.max_ctx = 4096;
  EXPECT_EQ(cuda::attention_workspace_bytes(da, l), cuda::attention_workspace_bytes(dbb, l));
}

TEST(CudaKvWrite, MatchesRefBitExact) {
  SAKER_REQUIRE_GPU();
  const BuiltBatch b = testing::build_batch({{30, 5, kCausal}, {0, 17, kCausal}, {20, 6, kTree}}, 16, 900, true);
  const AttentionBatch batch = b.batch();
  const int64_t T = batch.n_tokens(), KV = 4, D = 128;
  std::mt19937 rng(901);
  const int64_t cache_elems = static_cast<int64_t>(b.n_blocks) * b.block_size * KV * D;
  std::vector<uint16_t> kc = random_f16(rng, cache_elems), vc = random_f16(rng, cache_elems);
  const int64_t stride = 3 * KV * D + 8;  // k and v inside a fused row
  std::normal_distribution<float> dist;
  std::vector<float> rows(T * stride);
  for (float& x : rows) x = dist(rng);
  std::vector<float> k(T * KV * D), v(T * KV * D);
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(&k[t * KV * D], &rows[t * stride], sizeof(float) * KV * D);
    std::memcpy(&v[t * KV * D], &rows[t * stride + KV * D], sizeof(float) * KV * D);
  }
  testing::DeviceArray<uint16_t> dk(kc), dv(vc);
  testing::DeviceArray<float> drows(rows);
  ASSERT_TRUE(ref::kv_write(TensorView::contiguous(k.data(), DType::kF32, {T, KV, D}),
                            TensorView::contiguous(v.data(), DType::kF32, {T, KV, D}),
                            TensorView::contiguous(kc.data(), DType::kF16, {b.n_blocks, b.block_size, KV, D}),
                            TensorView::contiguous(vc.data(), DType::kF16, {b.n_blocks, b.block_size, KV, D}), batch)
                  .ok());
  std::vector<int32_t> packed;
  cuda::DeviceAttentionBatch db;
  db.layout = cuda::pack_attention_batch(batch, &packed);
  db.block_size = b.block_size;
  testing::DeviceArray<int32_t> dpacked(packed);
  db.data = dpacked.get();
  ASSERT_TRUE(cuda::kv_write(drows.get(), drows.get() + KV * D, stride, reinterpret_cast<__half*>(dk.get()),
                             reinterpret_cast<__half*>(dv.get()), db, KV, D, nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(dk.to_host() == kc);
  EXPECT_TRUE(dv.to_host() == vc);
}

}  // namespace
}  // namespace saker
