#pragma once
// Residual add, reference version: out[i] = a[i] + b[i] (f32). The oracle for the CUDA add.
#include <cstdint>

namespace saker::ref {

void add_f32(const float* a, const float* b, float* out, int64_t n);  // a, b, out: [n]

}  // namespace saker::ref
