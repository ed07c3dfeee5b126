#pragma once
// Elementwise and row-wise ops of a decoder layer on the GPU (f32, device pointers, enqueued on `stream`).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"

namespace saker::cuda {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * (w + (add_one ? 1 : 0)); rows of n elements.
// In place (out == x) is allowed. add_one is Gemma's (1 + w) convention.
Status rms_norm(const float* x, const float* w, float* out, int64_t rows, int64_t n, float eps, bool add_one,
                cudaStream_t stream);

struct RopeConfig {
  bool neox = true;                      // NeoX pairs (k, k + n_rot/2); false: interleaved (2k, 2k+1)
  int32_t n_rot = 0;                     // rotated dims (even, <= head_dim); 0 = head_dim
  float theta_base = 10000.0f;
  float freq_scale = 1.0f;
  const float* freq_factors = nullptr;   // device [n_rot/2] divisors, or null
};

// In place on x [n_tokens, n_head, head_dim] (row stride `token_stride` floats between tokens, so q and k
// can live inside one fused qkv row): optional per-head RMSNorm with weight norm_w [head_dim] (null: no
// norm; add_one as above), then RoPE at positions[t] (device int32 [n_tokens]).
Status head_norm_rope(float* x, int64_t n_tokens, int64_t token_stride, int32_t n_head, int32_t head_dim,
                      const float* norm_w, float eps, bool add_one, const int32_t* positions,
                      const RopeConfig& rope, cudaStream_t stream);

// out[t, i] = silu(gate[t, i]) * up[t, i] (swiglu) or gelu_tanh(gate) * up (geglu), for t < n_tokens,
// i < n; gate/up rows have stride `in_stride` (gate|up fused: gate = row, up = row + n), out stride n.
Status swiglu(const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_tokens, int64_t n,
              cudaStream_t stream);
Status geglu_tanh(const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_tokens, int64_t n,
                  cudaStream_t stream);

// idx[r] = argmax_j x[r, j] (lowest index wins ties, like ref::argmax); rows of n; idx device int32 [rows].
Status argmax_rows(const float* x, int64_t rows, int64_t n, int32_t* idx, cudaStream_t stream);

}  // namespace saker::cuda
