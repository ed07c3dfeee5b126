// The fused bias + q/k norm + RoPE + KV cache write against the ref ops run one after the other: add_row_bias
// (qwen2), per-head rms_norm, rope on q and k, then kv_write into f16 caches. q and k (f32, in the fused row) must
// agree to f32 rounding; the caches to within an f16 rounding step (v exactly: only the bias touches it).
#include <cstring>
#include <random>
#include <string>

#include "core/half.h"
#include "ops/cuda/qk_norm_rope_kv_write.h"
#include "ops/cuda_test_util.h"
#include "ops/ref/add.h"
#include "ops/ref/kv_write.h"
#include "ops/ref/rms_norm.h"
#include "ops/ref/rope.h"
#include "unit/attention_batch_builder.h"

namespace saker {
namespace {

using testing::BuiltBatch;

std::vector<float> normals(std::mt19937& rng, size_t n, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> widen(const std::vector<uint16_t>& h) {
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); ++i) f[i] = fp16_to_fp32(h[i]);
  return f;
}

void run_case(const std::vector<testing::SeqSpec>& specs, int32_t H, int32_t KV, int32_t D, bool neox, int32_t n_rot,
              int variant, uint32_t seed, bool with_bias = false) {
  const std::string what = "H " + std::to_string(H) + " KV " + std::to_string(KV) + " D " + std::to_string(D) +
                           " neox " + std::to_string(neox) + " n_rot " + std::to_string(n_rot) + " variant " +
                           std::to_string(variant) + " bias " + std::to_string(with_bias);
  const BuiltBatch b = testing::build_batch(specs, 16, seed, true);
  const AttentionBatch batch = b.batch();
  ASSERT_TRUE(batch.validate(b.n_blocks, b.block_size).ok());
  const int64_t T = batch.n_tokens();
  std::mt19937 rng(seed);
  const int64_t stride = static_cast<int64_t>(H + 2 * KV) * D + 4;
  std::vector<float> row = normals(rng, T * stride, 1.5f);
  std::vector<float> qw = normals(rng, D, 0.3f), kw = normals(rng, D, 0.3f);
  const std::vector<float> bias = normals(rng, static_cast<size_t>(H + 2 * KV) * D, 0.7f);
  const int64_t cache_elems = static_cast<int64_t>(b.n_blocks) * b.block_size * KV * D;
  std::vector<uint16_t> kc(cache_elems), vc(cache_elems);
  for (size_t i = 0; i < kc.size(); ++i) {
    kc[i] = fp32_to_fp16(static_cast<float>(i % 7));
    vc[i] = fp32_to_fp16(static_cast<float>(i % 5));
  }
  // variant 0: both norms, 1: (1 + w) norms + freq scale, 2: no norms.
  const bool norm = variant != 2;
  const float freq_scale = variant == 1 ? 0.25f : 1.0f;

  // Ref.
  std::vector<float> biased = row;
  if (with_bias) ref::add_row_bias(biased.data(), bias.data(), T, (H + 2 * KV) * D, stride);
  std::vector<float> q(T * H * D), k(T * KV * D), v(T * KV * D);
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(&q[t * H * D], &biased[t * stride], sizeof(float) * H * D);
    std::memcpy(&k[t * KV * D], &biased[t * stride + H * D], sizeof(float) * KV * D);
    std::memcpy(&v[t * KV * D], &biased[t * stride + (H + KV) * D], sizeof(float) * KV * D);
  }
  const auto mode = variant == 1 ? ref::RmsNormWeight::kOnePlusScale : ref::RmsNormWeight::kScale;
  if (norm) {
    ASSERT_TRUE(ref::rms_norm(TensorView::contiguous(q.data(), DType::kF32, {T * H, D}),
                              TensorView::contiguous(qw.data(), DType::kF32, {D}),
                              TensorView::contiguous(q.data(), DType::kF32, {T * H, D}), 1e-6f, mode).ok());
    ASSERT_TRUE(ref::rms_norm(TensorView::contiguous(k.data(), DType::kF32, {T * KV, D}),
                              TensorView::contiguous(kw.data(), DType::kF32, {D}),
                              TensorView::contiguous(k.data(), DType::kF32, {T * KV, D}), 1e-6f, mode).ok());
  }
  ref::RopeParams rp;
  rp.style = neox ? ref::RopeStyle::kNeox : ref::RopeStyle::kInterleaved;
  rp.n_rot = n_rot;
  rp.theta_base = 1e6;
  rp.freq_scale = freq_scale;
  ASSERT_TRUE(ref::rope(TensorView::contiguous(q.data(), DType::kF32, {T, H, D}), b.token_pos, rp).ok());
  ASSERT_TRUE(ref::rope(TensorView::contiguous(k.data(), DType::kF32, {T, KV, D}), b.token_pos, rp).ok());
  std::vector<uint16_t> kc_ref = kc, vc_ref = vc;
  ASSERT_TRUE(ref::kv_write(TensorView::contiguous(k.data(), DType::kF32, {T, KV, D}),
                            TensorView::contiguous(v.data(), DType::kF32, {T, KV, D}),
                            TensorView::contiguous(kc_ref.data(), DType::kF16, {b.n_blocks, b.block_size, KV, D}),
                            TensorView::contiguous(vc_ref.data(), DType::kF16, {b.n_blocks, b.block_size, KV, D}), batch)
                  .ok());

  // CUDA.
  std::vector<int32_t> packed;
  cuda::DeviceAttentionBatch db;
  db.layout = cuda::pack_attention_batch(batch, &packed);
  db.block_size = b.block_size;
  testing::DeviceArray<int32_t> dpacked(packed), dpos(b.token_pos);
  db.data = dpacked.get();
  testing::DeviceArray<float> drow(row), dqw(qw), dkw(kw), dbias(bias);
  testing::DeviceArray<uint16_t> dkc(kc), dvc(vc);
  cuda::RopeConfig rc;
  rc.neox = neox;
  rc.n_rot = n_rot;
  rc.theta_base = 1e6f;
  rc.freq_scale = freq_scale;
  const Status s = cuda::qk_norm_rope_kv_write(drow.get(), stride, H, KV, D, with_bias ? dbias.get() : nullptr,
                                               norm ? dqw.get() : nullptr, norm ? dkw.get() : nullptr, 1e-6f,
                                               variant == 1, dpos.get(), rc, reinterpret_cast<__half*>(dkc.get()),
                                               reinterpret_cast<__half*>(dvc.get()), db, nullptr);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = drow.to_host();
  std::vector<float> gq(q.size()), gk(k.size());
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(&gq[t * H * D], &got[t * stride], sizeof(float) * H * D);
    std::memcpy(&gk[t * KV * D], &got[t * stride + H * D], sizeof(float) * KV * D);
    // v keeps its values, biased as add_row_bias biases them (bit for bit); the row's padding is untouched.
    for (int64_t i = (H + KV) * D; i < stride; ++i) ASSERT_EQ(got[t * stride + i], biased[t * stride + i]) << what;
  }
  EXPECT_LT(testing::nmse(gq, q), 1e-10) << what;
  EXPECT_LT(testing::nmse(gk, k), 1e-10) << what;
  EXPECT_LT(testing::nmse(widen(dkc.to_host()), widen(kc_ref)), 1e-6) << what;
  EXPECT_TRUE(dvc.to_host() == vc_ref) << what;
}

TEST(CudaQkNormRopeKvWrite, MatchesRefOps) {
  SAKER_REQUIRE_GPU();
  uint32_t seed = 1000;
  for (int32_t D : {32, 64, 128}) {
    for (bool neox : {true, false}) {
      for (int variant = 0; variant < 3; ++variant) {
        const int32_t n_rot = variant == 1 ? D / 2 : 0;
        // Decode (one token per sequence: one head per warp) and a prefill-sized batch (a block per token).
        run_case({{40, 1, AttentionMask::kCausal}, {7, 1, AttentionMask::kCausal}}, 32, 8, D, neox, n_rot, variant, seed++);
        run_case({{100, 70, AttentionMask::kCausal}, {3, 2, AttentionMask::kCausal}}, 12, 4, D, neox, n_rot, variant,
                 seed++);
      }
    }
  }
  run_case({{5, 1, AttentionMask::kCausal}}, 6, 2, 256, true, 0, 0, seed++);  // odd head counts per block
}

TEST(CudaQkNormRopeKvWrite, AddsTheProjectionBiasFirst) {  // qwen2: bias, no norms, then RoPE and the cache
  SAKER_REQUIRE_GPU();
  uint32_t seed = 2000;
  for (int32_t D : {64, 128}) {
    run_case({{40, 1, AttentionMask::kCausal}, {7, 1, AttentionMask::kCausal}}, 12, 2, D, true, 0, 2, seed++, true);
    run_case({{100, 70, AttentionMask::kCausal}}, 14, 2, D, true, 0, 2, seed++, true);
    run_case({{9, 3, AttentionMask::kCausal}}, 8, 4, D, false, 0, 0, seed++, true);  // with norms too
  }
  run_case({{5, 1, AttentionMask::kCausal}}, 6, 2, 128, true, 0, 2, seed++, true);  // a partial last head group
}

}  // namespace
}  // namespace saker
