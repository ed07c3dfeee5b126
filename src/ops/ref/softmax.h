#pragma once
// Row-wise softmax, reference version: out[r, i] = exp(x[r, i] - max_r) / sum_j exp(x[r, j] - max_r), in
// double. Subtracting the row maximum keeps exp from overflowing. -inf entries get probability 0; a row
// of only -inf comes out as zeros; NaN or +inf anywhere in a row makes that row NaN.
// out may alias x.
#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

Status softmax(const TensorView& x,     // [n_rows, n] f32
               const TensorView& out);  // [n_rows, n] f32

}  // namespace saker::ref
