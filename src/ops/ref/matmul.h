#pragma once
// Matrix multiply against a weight in any stored dtype, reference version:
//   out[t, o] = sum_i x[t, i] * W[o, i]
// The weight stays in its (possibly block-quantized) form; each weight row is dequantised once into a
// scratch row and dotted with every token row in double precision. Every output element is computed the
// same way whatever the batch holds, so a row's result does not depend on the other rows.
#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

// Checks the shapes and dtypes that every matmul backend accepts: x and out f32 with packed rows, w 2-D
// [n_out, n_in] of a dtype with a dequantiser, x [.., n_in], out [.., n_out] with as many rows as x.
Status check_matmul_args(const TensorView& x, const TensorView& w, const TensorView& out, const char* op);

Status matmul(const TensorView& x,     // [n_tokens, n_in] f32
              const TensorView& w,     // [n_out, n_in] any dtype formats/quant can dequantise
              const TensorView& out);  // [n_tokens, n_out] f32

}  // namespace saker::ref
