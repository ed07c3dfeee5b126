#pragma once
// SwiGLU, reference version: out = silu(gate) * up, silu(g) = g / (1 + exp(-g)), in double.
// gate and up may be column slices of one fused [n_tokens, 2 * n_ff] gate_up projection (strided rows);
// out may alias gate or up.
#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

Status swiglu(const TensorView& gate,  // [n_tokens, n_ff] f32
              const TensorView& up,    // [n_tokens, n_ff] f32
              const TensorView& out);  // [n_tokens, n_ff] f32

}  // namespace saker::ref
