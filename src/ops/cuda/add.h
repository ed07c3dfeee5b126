#pragma once
// Adds on the GPU (f32): the residual add out[i] = a[i] + b[i] (memory-bound: 12 bytes per element), and the
// broadcast bias add of projection outputs (qwen2's q|k|v biases, one row of the fused qkv output at a time).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"

namespace saker::cuda {

// a, b, out: device pointers [n]; enqueued on `stream`.
Status add_f32(const float* a, const float* b, float* out, int64_t n, cudaStream_t stream);

// In place: x[r * stride + c] += bias[c] for r < rows, c < cols. x: device [rows, stride] (stride >= cols),
// bias: device [cols]; enqueued on `stream`. Bit-exact with ref::add_row_bias (one rounding per element).
Status add_row_bias(float* x, const float* bias, int64_t rows, int64_t cols, int64_t stride, cudaStream_t stream);

}  // namespace saker::cuda
