#pragma once
// Residual add on the GPU: out[i] = a[i] + b[i] (f32). Memory-bound: 12 bytes per element.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"

namespace saker::cuda {

// a, b, out: device pointers [n]; enqueued on `stream`.
Status add_f32(const float* a, const float* b, float* out, int64_t n, cudaStream_t stream);

}  // namespace saker::cuda
