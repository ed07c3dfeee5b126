#pragma once
// out[i, :] = x[rows[i], :] for the rows whose logits are wanted (f32, device pointers).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"

namespace saker::cuda {

// x: [*, n] f32; rows: device int32 [n_rows]; out: [n_rows, n] f32.
Status gather_rows(const float* x, const int32_t* rows, int64_t n_rows, int64_t n, float* out, cudaStream_t stream);

}  // namespace saker::cuda
