#pragma once
// Row-wise top-k of logits with log-probabilities on the GPU (top_k.cu): what a drafter's tree needs of a row.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/logits.h"
#include "core/status.h"

namespace saker::cuda {

// For each of `rows` rows of x [rows, n] f32: ids [rows, k] the k largest values' columns (highest first, the
// lowest column among equals, NaN skipped, -1 past the row's comparable entries) and logprobs [rows, k] each
// value minus the row's log-sum-exp (-inf for -1). Device pointers; k in 1..kMaxTopK.
Status top_k_rows(const float* x, int64_t rows, int64_t n, int32_t k, int32_t* ids, float* logprobs,
                  cudaStream_t stream);

}  // namespace saker::cuda
