#include "sample/sampling_params.h"

#include <cmath>

namespace saker {

Status SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0) {
    return make_error(StatusCode::kInvalidArgument, "temperature must be >= 0 (got {})", temperature);
  }
  if (top_k < 0) return make_error(StatusCode::kInvalidArgument, "top_k must be >= 0 (got {})", top_k);
  if (!(top_p > 0 && top_p <= 1)) {
    return make_error(StatusCode::kInvalidArgument, "top_p must be in (0, 1] (got {})", top_p);
  }
  if (!(min_p >= 0 && min_p <= 1)) {
    return make_error(StatusCode::kInvalidArgument, "min_p must be in [0, 1] (got {})", min_p);
  }
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty)) {
    return make_error(StatusCode::kInvalidArgument, "repetition_penalty must be > 0 (got {})", repetition_penalty);
  }
  if (!std::isfinite(presence_penalty) || std::fabs(presence_penalty) > 2) {
    return make_error(StatusCode::kInvalidArgument, "presence_penalty must be in [-2, 2] (got {})", presence_penalty);
  }
  if (!std::isfinite(frequency_penalty) || std::fabs(frequency_penalty) > 2) {
    return make_error(StatusCode::kInvalidArgument, "frequency_penalty must be in [-2, 2] (got {})",
                      frequency_penalty);
  }
  if (penalty_last_n < -1) {
    return make_error(StatusCode::kInvalidArgument, "penalty_last_n must be >= -1 (got {})", penalty_last_n);
  }
  return {};
}

}  // namespace saker
