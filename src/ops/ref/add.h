#pragma once
// Residual and bias adds, reference versions (f32). The oracles for the CUDA adds.
#include <cstdint>

namespace saker::ref {

void add_f32(const float* a, const float* b, float* out, int64_t n);  // a, b, out: [n]

// Broadcast bias add in place: x[r * stride + c] += bias[c] for r < rows, c < cols (projection biases, qwen2).
// x: [rows, stride] of which the first cols columns are touched; bias: [cols].
void add_row_bias(float* x, const float* bias, int64_t rows, int64_t cols, int64_t stride);

}  // namespace saker::ref
