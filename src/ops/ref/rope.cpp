#include "ops/ref/rope.h"

#include <cmath>
#include <vector>

#include "ops/ref/check.h"

namespace saker::ref {

Status rope(const TensorView& x, std::span<const int32_t> positions, const RopeParams& params) {
  constexpr const char* kOp = "ref::rope";
  SAKER_RETURN_IF_ERROR(check_f32_rows(x, kOp, "x"));
  if (x.n_dims != 3) {
    return make_error(StatusCode::kInvalidArgument, "{}: x {} must be [n_tokens, n_head, head_dim]", kOp,
                      x.shape_string());
  }
  const int64_t n_tokens = x.dim(0), n_head = x.dim(1), head_dim = x.dim(2);
  if (static_cast<int64_t>(positions.size()) != n_tokens) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} positions for {} tokens", kOp, positions.size(),
                      n_tokens);
  }
  const int64_t n_rot = params.n_rot == 0 ? head_dim : params.n_rot;
  if (n_rot < 0 || n_rot > head_dim || n_rot % 2 != 0) {
    return make_error(StatusCode::kInvalidArgument, "{}: n_rot {} must be even and at most head_dim {}", kOp,
                      n_rot, head_dim);
  }
  if (!(params.theta_base > 0.0) || !(params.freq_scale > 0.0)) {
    return make_error(StatusCode::kInvalidArgument, "{}: theta_base {} and freq_scale {} must be positive", kOp,
                      params.theta_base, params.freq_scale);
  }
  const int64_t n_pairs = n_rot / 2;
  std::vector<double> inv_freq(static_cast<size_t>(n_pairs));
  for (int64_t k = 0; k < n_pairs; ++k) {
    inv_freq[k] = params.freq_scale * std::pow(params.theta_base, -2.0 * static_cast<double>(k) / n_rot);
    if (params.freq_factors) inv_freq[k] /= params.freq_factors[k];
  }
  // NeoX: element k pairs with k + n_pairs; interleaved: 2k with 2k + 1.
  const bool neox = params.style == RopeStyle::kNeox;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t k = 0; k < n_pairs; ++k) {
      const double angle = static_cast<double>(positions[t]) * inv_freq[k];
      const double c = std::cos(angle), s = std::sin(angle);
      const int64_t i0 = neox ? k : 2 * k;
      const int64_t i1 = neox ? k + n_pairs : 2 * k + 1;
      for (int64_t h = 0; h < n_head; ++h) {
        float* v = static_cast<float*>(x.row(t * n_head + h));
        const double x0 = v[i0], x1 = v[i1];
        v[i0] = static_cast<float>(x0 * c - x1 * s);
        v[i1] = static_cast<float>(x0 * s + x1 * c);
      }
    }
  }
  return {};
}

}  // namespace saker::ref
