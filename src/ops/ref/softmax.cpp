#include "ops/ref/softmax.h"

#include <cmath>
#include <limits>

#include "ops/ref/check.h"

namespace saker::ref {

Status softmax(const TensorView& x, const TensorView& out) {
  constexpr const char* kOp = "ref::softmax";
  SAKER_RETURN_IF_ERROR(check_f32_rows(x, kOp, "x"));
  const int64_t n = x.dim(-1);
  SAKER_RETURN_IF_ERROR(check_f32_rows(out, kOp, "out", n));
  SAKER_RETURN_IF_ERROR(check_same_rows(x, out, kOp, "x", "out"));
  for (int64_t r = 0; r < x.n_rows(); ++r) {
    const float* xr = static_cast<const float*>(x.row(r));
    float* yr = static_cast<float*>(out.row(r));
    double max = -std::numeric_limits<double>::infinity();
    bool has_nan = false;
    for (int64_t i = 0; i < n; ++i) {
      has_nan |= std::isnan(xr[i]);
      if (xr[i] > max) max = xr[i];
    }
    if (has_nan || max == std::numeric_limits<double>::infinity()) {
      // +inf - +inf has no meaningful answer either: report it rather than guess.
      for (int64_t i = 0; i < n; ++i) yr[i] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    if (max == -std::numeric_limits<double>::infinity()) {
      for (int64_t i = 0; i < n; ++i) yr[i] = 0.0f;
      continue;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(xr[i] - max);
    // Read x again rather than storing exp values: out may alias x.
    for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<float>(std::exp(xr[i] - max) / sum);
  }
  return {};
}

}  // namespace saker::ref
