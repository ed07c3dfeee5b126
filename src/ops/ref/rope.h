#pragma once
// Rotary position embedding, reference version, in place on [n_tokens, n_head, head_dim].
//
// Pair k (0 <= k < n_rot / 2) of a head is rotated by the angle
//   a_k = position * freq_scale * theta_base^(-2k / n_rot) / freq_factors[k]
//   (x0, x1) -> (x0 cos a - x1 sin a, x0 sin a + x1 cos a)
// NeoX style (Qwen, GPT-NeoX; HF's rotate_half) pairs element k with k + n_rot / 2; the interleaved style
// (llama's GGUF "norm" rope; Meta's original layout) pairs 2k with 2k + 1. Elements n_rot .. head_dim - 1
// pass through unchanged (partial rotary). Angles and products are computed in double.
#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

enum class RopeStyle { kNeox, kInterleaved };

struct RopeParams {
  RopeStyle style = RopeStyle::kNeox;
  int64_t n_rot = 0;            // rotated dimensions, even, <= head_dim; 0 means head_dim
  double theta_base = 10000.0;  // rope.freq_base (1e6 in Qwen3)
  double freq_scale = 1.0;      // linear position interpolation: 1 / rope.scaling.factor
  const float* freq_factors = nullptr;  // [n_rot / 2] per-pair divisors (llama3's rope_freqs), or null
};

Status rope(const TensorView& x,                   // [n_tokens, n_head, head_dim] f32, rotated in place
            std::span<const int32_t> positions,    // [n_tokens] position of each token
            const RopeParams& params);

}  // namespace saker::ref
