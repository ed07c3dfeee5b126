#include "ops/ref/argmax.h"

#include <cmath>

#include "ops/ref/check.h"

namespace saker::ref {

Status argmax(const TensorView& logits, std::span<int32_t> out) {
  constexpr const char* kOp = "ref::argmax";
  SAKER_RETURN_IF_ERROR(check_f32_rows(logits, kOp, "logits"));
  if (static_cast<int64_t>(out.size()) != logits.n_rows()) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} outputs for logits {} with {} rows", kOp, out.size(),
                      logits.shape_string(), logits.n_rows());
  }
  const int64_t n = logits.dim(-1);
  if (n > INT32_MAX) return make_error(StatusCode::kOutOfRange, "{}: {} columns do not fit an int32 index", kOp, n);
  for (int64_t r = 0; r < logits.n_rows(); ++r) {
    const float* x = static_cast<const float*>(logits.row(r));
    int32_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(x[i])) continue;
      if (best < 0 || x[i] > x[best]) best = static_cast<int32_t>(i);  // strict >: the first maximum wins
    }
    out[r] = best;
  }
  return {};
}

}  // namespace saker::ref
