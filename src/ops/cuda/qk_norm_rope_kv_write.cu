// Fused projection bias + q/k per-head RMSNorm + RoPE + KV cache write (the bias: one launch a layer fewer for
// qwen2, whose separate bias pass was one of a small model's many short kernels). Grid (n_tokens, head groups): a block
// builds its token's cos/sin table (angles in double, like head_norm_rope) once, then each of its 8 warps takes whole
// heads of the fused row (q heads, k heads, v heads in row order). Few tokens: one head per warp, so a
// decode step spreads its heads over many blocks instead of one; many tokens: a block covers every head
// of its token and the table is built once per token.
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/norm_rope.cuh"
#include "ops/cuda/qk_norm_rope_kv_write.h"
#include "ops/cuda/reduce.cuh"

namespace saker::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxHeadDim = 512;

__global__ void __launch_bounds__(kThreads)
    qk_norm_rope_kv_write_kernel(float* qkv, int64_t token_stride, int32_t n_head, int32_t n_head_kv, int32_t head_dim,
                                 int32_t heads_per_block, const float* __restrict__ qkv_bias,
                                 const float* __restrict__ q_norm_w, const float* __restrict__ k_norm_w, float eps,
                                 float bias, const int32_t* __restrict__ positions, bool neox, int32_t n_rot,
                                 float theta_base, float freq_scale, const float* __restrict__ freq_factors,
                                 __half* __restrict__ k_cache, __half* __restrict__ v_cache,
                                 const int32_t* __restrict__ p, PackedAttentionLayout L, int32_t block_size) {
  chain_in();
  __shared__ float2 cs[kMaxHeadDim / 2];
  __shared__ float rowbuf[kWarps][kMaxHeadDim];
  const int64_t t = blockIdx.x;
  const int32_t h_begin = blockIdx.y * heads_per_block;
  const int32_t h_end = min(h_begin + heads_per_block, n_head + 2 * n_head_kv);
  const int32_t n_pairs = n_rot / 2;
  if (h_begin < n_head + n_head_kv) {  // the block rotates some q or k head
    const double pos = static_cast<double>(positions[t]);
    norm_rope_detail::build_rope_table<kThreads>(cs, pos, n_pairs, n_rot, theta_base, freq_scale, freq_factors);
  }
  const int32_t seq = p[L.token_seq + t], slot = p[L.token_slot + t];
  const int64_t row_elems = static_cast<int64_t>(n_head_kv) * head_dim;
  const int64_t dst = attn_cache_row(p, L, seq, slot, block_size) * row_elems;
  __syncthreads();

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* r = rowbuf[warp];
  float* row = qkv + t * token_stride;
  for (int32_t h = h_begin + warp; h < h_end; h += kWarps) {
    float* xh = row + static_cast<int64_t>(h) * head_dim;  // q, k and v heads follow each other in the row
    if (qkv_bias) {  // x += bias, in place (f32 adds, as add_row_bias), before the norm reads the head
      const float* bh = qkv_bias + static_cast<int64_t>(h) * head_dim;
      for (int i = lane; i < head_dim; i += 32) xh[i] = xh[i] + bh[i];
      __syncwarp();
    }
    if (h >= n_head + n_head_kv) {                          // v: cache write only
      __half* vd = v_cache + dst + static_cast<int64_t>(h - n_head - n_head_kv) * head_dim;
      for (int i = lane; i < head_dim; i += 32) vd[i] = __float2half_rn(xh[i]);
      continue;
    }
    const bool is_q = h < n_head;
    const float* norm_w = is_q ? q_norm_w : k_norm_w;
    norm_rope_detail::norm_rope_head(r, xh, head_dim, lane, norm_w, eps, bias, n_pairs, neox, cs);
    if (is_q) {
      for (int i = lane; i < head_dim; i += 32) xh[i] = r[i];
    } else {
      __half* kd = k_cache + dst + static_cast<int64_t>(h - n_head) * head_dim;
      for (int i = lane; i < head_dim; i += 32) {
        xh[i] = r[i];
        kd[i] = __float2half_rn(r[i]);
      }
    }
    __syncwarp();  // r is reused by this warp's next head
  }
}

}  // namespace

Status qk_norm_rope_kv_write(float* qkv, int64_t token_stride, int32_t n_head, int32_t n_head_kv, int32_t head_dim,
                             const float* qkv_bias, const float* q_norm_w, const float* k_norm_w, float eps,
                             bool add_one, const int32_t* positions, const RopeConfig& rope, __half* k_cache,
                             __half* v_cache, const DeviceAttentionBatch& batch, cudaStream_t stream) {
  const int32_t n_tokens = batch.layout.n_tokens;
  if (n_tokens <= 0) return {};
  const int32_t n_rot = rope.n_rot == 0 ? head_dim : rope.n_rot;
  if (n_head < 0 || n_head_kv <= 0 || head_dim <= 0 || head_dim > kMaxHeadDim || n_rot < 0 || n_rot > head_dim ||
      n_rot % 2 != 0 || batch.block_size <= 0) {
    return make_error(StatusCode::kInvalidArgument,
                      "cuda qk_norm_rope_kv_write: head_dim must be in [1, 512], n_rot even and <= head_dim");
  }
  const int32_t n_all = n_head + 2 * n_head_kv;
  if (token_stride < static_cast<int64_t>(n_all) * head_dim) {
    return make_error(StatusCode::kInvalidArgument,
                      "cuda qk_norm_rope_kv_write: token_stride below (n_head + 2 n_head_kv) * head_dim");
  }
  if (!(rope.theta_base > 0.0f) || !(rope.freq_scale > 0.0f) || !(eps >= 0.0f)) {
    return make_error(StatusCode::kInvalidArgument, "cuda qk_norm_rope_kv_write: theta_base and freq_scale must be > 0");
  }
  // Few tokens: one head per warp over many blocks; many: one block per token (one table per token).
  const int32_t heads_per_block = n_tokens < 64 ? kWarps : n_all;
  const dim3 grid(static_cast<unsigned>(n_tokens), static_cast<unsigned>((n_all + heads_per_block - 1) / heads_per_block));
  launch_chained(qk_norm_rope_kv_write_kernel, grid, kThreads, 0, stream, qkv, token_stride, n_head, n_head_kv,
                 head_dim, heads_per_block, qkv_bias, q_norm_w, k_norm_w, eps, add_one ? 1.0f : 0.0f, positions,
                 rope.neox, n_rot, rope.theta_base, rope.freq_scale, rope.freq_factors, k_cache, v_cache, batch.data,
                 batch.layout, batch.block_size);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
