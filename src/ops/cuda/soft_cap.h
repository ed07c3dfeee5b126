#pragma once
// In place x = cap * tanh(x / cap) (Gemma's final logit soft-capping), f32 device pointer.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"

namespace saker::cuda {

Status soft_cap(float* x, int64_t n, float cap, cudaStream_t stream);

}  // namespace saker::cuda
