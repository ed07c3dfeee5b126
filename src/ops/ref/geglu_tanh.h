#pragma once
// GeGLU with the tanh approximation of GELU (Gemma's gelu_pytorch_tanh), reference version:
//   out = gelu_tanh(gate) * up,  gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3)))
// Same layout rules as swiglu.
#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

Status geglu_tanh(const TensorView& gate,  // [n_tokens, n_ff] f32
                  const TensorView& up,    // [n_tokens, n_ff] f32
                  const TensorView& out);  // [n_tokens, n_ff] f32

}  // namespace saker::ref
