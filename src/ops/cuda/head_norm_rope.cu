// Per-head RMSNorm + RoPE, fused: one block per token. The block first builds the token's cos/sin table
// (angles in double: at positions in the tens of thousands a float angle is off by ~1e-3 rad), then each
// warp normalises and rotates whole heads, so every head of the token shares one table.
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/norm_rope.h"
#include "ops/cuda/norm_rope.cuh"
#include "ops/cuda/reduce.cuh"

namespace saker::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxHeadDim = 512;

// x: [n_tokens, n_head, head_dim] f32 with token stride `token_stride`; norm_w: [head_dim] or null;
// positions: [n_tokens]; freq_factors: [n_rot / 2] or null.
__global__ void head_norm_rope_kernel(float* x, int64_t token_stride, int32_t n_head, int32_t head_dim,
                                      const float* __restrict__ norm_w, float eps, float bias,
                                      const int32_t* __restrict__ positions, bool neox, int32_t n_rot,
                                      float theta_base, float freq_scale, const float* __restrict__ freq_factors) {
  chain_in();
  __shared__ float2 cs[kMaxHeadDim / 2];
  __shared__ float row[kWarps][kMaxHeadDim];
  const int64_t t = blockIdx.x;
  const int32_t n_pairs = n_rot / 2;
  const double pos = static_cast<double>(positions[t]);
  norm_rope_detail::build_rope_table<kThreads>(cs, pos, n_pairs, n_rot, theta_base, freq_scale, freq_factors);
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* r = row[warp];
  for (int32_t h = warp; h < n_head; h += kWarps) {
    float* xh = x + t * token_stride + static_cast<int64_t>(h) * head_dim;
    norm_rope_detail::norm_rope_head(r, xh, head_dim, lane, norm_w, eps, bias, n_pairs, neox, cs);
    for (int i = lane; i < head_dim; i += 32) xh[i] = r[i];
    __syncwarp();  // r is reused by this warp's next head
  }
}

}  // namespace

Status head_norm_rope(float* x, int64_t n_tokens, int64_t token_stride, int32_t n_head, int32_t head_dim,
                      const float* norm_w, float eps, bool add_one, const int32_t* positions,
                      const RopeConfig& rope, cudaStream_t stream) {
  if (n_tokens <= 0 || n_head <= 0) return {};
  const int32_t n_rot = rope.n_rot == 0 ? head_dim : rope.n_rot;
  if (head_dim <= 0 || head_dim > kMaxHeadDim || n_rot < 0 || n_rot > head_dim || n_rot % 2 != 0) {
    return make_error(StatusCode::kInvalidArgument,
                      "cuda head_norm_rope: head_dim must be in [1, 512] and n_rot even and <= head_dim");
  }
  if (token_stride < static_cast<int64_t>(n_head) * head_dim || n_tokens > INT32_MAX) {
    return make_error(StatusCode::kInvalidArgument, "cuda head_norm_rope: token_stride below n_head * head_dim");
  }
  if (!(rope.theta_base > 0.0f) || !(rope.freq_scale > 0.0f) || !(eps >= 0.0f)) {
    return make_error(StatusCode::kInvalidArgument, "cuda head_norm_rope: theta_base and freq_scale must be > 0");
  }
  launch_chained(head_norm_rope_kernel, static_cast<unsigned>(n_tokens), kThreads, 0, stream, x, token_stride, n_head,
                 head_dim, norm_w, eps, add_one ? 1.0f : 0.0f, positions, rope.neox, n_rot, rope.theta_base,
                 rope.freq_scale, rope.freq_factors);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
