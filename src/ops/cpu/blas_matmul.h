#pragma once
// The OpenBLAS path of cpu::matmul (see matmul.h): weight tiles dequantised to f32, one single-threaded
// sgemm per tile, tiles spread over saker's thread pool. Not a public interface.
#include "core/status.h"
#include "core/tensor.h"

namespace saker::cpu {

// x and out must have a uniform row stride (2-D or contiguous); arguments already checked.
Status blas_matmul(const TensorView& x,     // [n_tokens, n_in] f32
                   const TensorView& w,     // [n_out, n_in]
                   const TensorView& out);  // [n_tokens, n_out] f32

}  // namespace saker::cpu
