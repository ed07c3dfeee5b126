// Device code shared by the per-head RMSNorm + RoPE kernels (head_norm_rope, qk_norm_rope_kv_write);
// internal, include only from .cu files.
#pragma once

#include <cstdint>

#include "ops/cuda/reduce.cuh"

namespace saker::cuda::norm_rope_detail {

// The block's NT threads fill cs[k] = (cos, sin) of the token's angle for each rotated pair k < n_rot / 2
// (angles in double: at positions in the tens of thousands a float angle is off by ~1e-3 rad).
template <int NT>
__device__ __forceinline__ void build_rope_table(float2* cs, double pos, int32_t n_pairs, int32_t n_rot,
                                                 float theta_base, float freq_scale,
                                                 const float* __restrict__ freq_factors) {
  for (int k = threadIdx.x; k < n_pairs; k += NT) {
    double inv_freq = static_cast<double>(freq_scale) *
                      pow(static_cast<double>(theta_base), -2.0 * static_cast<double>(k) / n_rot);
    if (freq_factors) inv_freq /= static_cast<double>(freq_factors[k]);
    double s, c;
    sincos(pos * inv_freq, &s, &c);
    cs[k] = make_float2(static_cast<float>(c), static_cast<float>(s));
  }
}

// One warp: loads head xh into its row buffer r, RMS-normalises it (when norm_w is set) and rotates its
// first n_pairs pairs by the table cs; r holds the result, synchronised across the warp, on return.
__device__ __forceinline__ void norm_rope_head(float* r, const float* xh, int32_t head_dim, int lane,
                                               const float* norm_w, float eps, float bias,
                                               int32_t n_pairs, bool neox, const float2* cs) {
  float ss = 0.0f;
  for (int i = lane; i < head_dim; i += 32) {
    const float v = xh[i];
    r[i] = v;
    ss += v * v;
  }
  if (norm_w) {
    const float inv = rsqrtf(warp_sum(ss) / static_cast<float>(head_dim) + eps);
    for (int i = lane; i < head_dim; i += 32) r[i] = r[i] * inv * (norm_w[i] + bias);
  }
  __syncwarp();
  for (int k = lane; k < n_pairs; k += 32) {
    const int i0 = neox ? k : 2 * k, i1 = neox ? k + n_pairs : 2 * k + 1;
    const float x0 = r[i0], x1 = r[i1];
    const float2 c = cs[k];
    r[i0] = x0 * c.x - x1 * c.y;
    r[i1] = x0 * c.y + x1 * c.x;
  }
  __syncwarp();
}

}  // namespace saker::cuda::norm_rope_detail
