#include "ops/ref/add.h"

namespace saker::ref {

void add_f32(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace saker::ref
