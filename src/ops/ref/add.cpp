#include "ops/ref/add.h"

namespace saker::ref {

void add_f32(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void add_row_bias(float* x, const float* bias, int64_t rows, int64_t cols, int64_t stride) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * stride;
    for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

}  // namespace saker::ref
