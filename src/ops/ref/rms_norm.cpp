#include "ops/ref/rms_norm.h"

#include <cmath>
#include <vector>

#include "formats/quant/codec.h"
#include "ops/ref/check.h"

namespace saker::ref {

Status rms_norm(const TensorView& x, const TensorView& weight, const TensorView& out, float eps,
                RmsNormWeight mode) {
  constexpr const char* kOp = "ref::rms_norm";
  SAKER_RETURN_IF_ERROR(check_f32_rows(x, kOp, "x"));
  const int64_t n = x.dim(-1);
  SAKER_RETURN_IF_ERROR(check_f32_rows(out, kOp, "out", n));
  SAKER_RETURN_IF_ERROR(check_same_rows(x, out, kOp, "x", "out"));
  if (!(eps >= 0.0f)) return make_error(StatusCode::kInvalidArgument, "{}: eps {} must be >= 0", kOp, eps);

  std::vector<double> w(static_cast<size_t>(n), 1.0);
  if (mode != RmsNormWeight::kNone) {
    SAKER_RETURN_IF_ERROR(check_packed_rows(weight, kOp, "weight"));
    if (weight.n_elements() != n || weight.n_rows() != 1) {
      return make_error(StatusCode::kInvalidArgument, "{}: weight {} must hold one row of {} elements", kOp,
                        weight.shape_string(), n);
    }
    std::vector<float> wf(static_cast<size_t>(n));
    SAKER_RETURN_IF_ERROR(dequantize_row(weight.dtype, weight.data, wf.data(), n).with_context(kOp));
    for (int64_t i = 0; i < n; ++i) w[i] = mode == RmsNormWeight::kOnePlusScale ? 1.0 + wf[i] : wf[i];
  }

  for (int64_t r = 0; r < x.n_rows(); ++r) {
    const float* xr = static_cast<const float*>(x.row(r));
    float* yr = static_cast<float*>(out.row(r));
    double sum_sq = 0.0;
    for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(xr[i]) * xr[i];
    const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<float>(xr[i] * inv_rms * w[i]);
  }
  return {};
}

}  // namespace saker::ref
