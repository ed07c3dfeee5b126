#pragma once
// The loop shared by the gated activations (swiglu, geglu_tanh): checks three [n_tokens, n_ff] f32 views
// and writes out = act(gate) * up element by element in double. Not a public op.
#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

using GateActivation = double (*)(double);

Status gated_unit(const TensorView& gate, const TensorView& up, const TensorView& out, GateActivation act,
                  const char* op);

}  // namespace saker::ref
