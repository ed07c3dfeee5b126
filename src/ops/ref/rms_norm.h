#pragma once
// RMSNorm, reference version: out = x * rsqrt(mean(x^2) + eps) * w, row by row, in double precision.
// Per-head norms (Qwen3's q_norm / k_norm over head_dim) are the same op on x viewed as
// [n_tokens * n_head, head_dim]. out may alias x (in place).
#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

enum class RmsNormWeight {
  kScale,        // x_hat * w            (llama, Qwen3)
  kOnePlusScale, // x_hat * (1 + w)      (Gemma stores the weight as an offset from 1)
  kNone,         // x_hat                (no weight; `weight` is ignored)
};

Status rms_norm(const TensorView& x,       // [n_rows, n] f32
                const TensorView& weight,  // [n] any dtype formats/quant can dequantise (usually f32)
                const TensorView& out,     // [n_rows, n] f32
                float eps, RmsNormWeight mode = RmsNormWeight::kScale);

}  // namespace saker::ref
