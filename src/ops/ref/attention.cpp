#include "ops/ref/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/ref/check.h"
#include "ops/ref/kv_cache.h"

namespace saker::ref {

Status check_attention_args(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                            const AttentionBatch& batch, const AttentionParams& params, const TensorView& out,
                            const char* op) {
  SAKER_RETURN_IF_ERROR(check_kv_cache(k_cache, op, "k_cache"));
  SAKER_RETURN_IF_ERROR(check_kv_cache(v_cache, op, "v_cache"));
  if (k_cache.dim(0) != v_cache.dim(0) || k_cache.dim(1) != v_cache.dim(1) || k_cache.dim(2) != v_cache.dim(2)) {
    return make_error(StatusCode::kInvalidArgument, "{}: k_cache {} and v_cache {} differ in blocks or kv heads", op,
                      k_cache.shape_string(), v_cache.shape_string());
  }
  const int64_t n_head_kv = k_cache.dim(2), head_dim = k_cache.dim(3), head_dim_v = v_cache.dim(3);
  SAKER_RETURN_IF_ERROR(check_f32_rows(q, op, "q", head_dim));
  SAKER_RETURN_IF_ERROR(check_f32_rows(out, op, "out", head_dim_v));
  if (q.n_dims != 3 || q.dim(0) != batch.n_tokens()) {
    return make_error(StatusCode::kInvalidArgument, "{}: q {} must be [{} tokens, n_head, {}]", op, q.shape_string(),
                      batch.n_tokens(), head_dim);
  }
  const int64_t n_head = q.dim(1);
  if (n_head_kv <= 0 || n_head % n_head_kv != 0) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} query heads are not a multiple of {} kv heads", op, n_head,
                      n_head_kv);
  }
  if (out.n_dims != 3 || out.dim(0) != q.dim(0) || out.dim(1) != n_head) {
    return make_error(StatusCode::kInvalidArgument, "{}: out {} must be [{}, {}, {}]", op, out.shape_string(),
                      q.dim(0), n_head, head_dim_v);
  }
  if (params.soft_cap < 0.0f || params.sliding_window < 0 || !(std::isfinite(params.scale))) {
    return make_error(StatusCode::kInvalidArgument, "{}: scale {}, soft_cap {} and sliding_window {} must be finite "
                      "and not negative", op, params.scale, params.soft_cap, params.sliding_window);
  }
  return batch.validate(k_cache.dim(0), k_cache.dim(1)).with_context(op);
}

Status attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                 const AttentionBatch& batch, const AttentionParams& params, const TensorView& out) {
  constexpr const char* kOp = "ref::attention";
  SAKER_RETURN_IF_ERROR(check_attention_args(q, k_cache, v_cache, batch, params, out, kOp));
  const int64_t n_head = q.dim(1), block_size = k_cache.dim(1), n_head_kv = k_cache.dim(2);
  const int64_t head_dim = k_cache.dim(3), head_dim_v = v_cache.dim(3);
  const int64_t group = n_head / n_head_kv;
  const double scale = params.scale != 0.0f ? params.scale : 1.0 / std::sqrt(static_cast<double>(head_dim));

  std::vector<int32_t> slots;
  std::vector<float> keys, values;  // [n_keys, head_dim], [n_keys, head_dim_v] of one kv head, as f32
  std::vector<double> scores, acc(static_cast<size_t>(head_dim_v));
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const AttentionSequence& seq = batch.sequences[batch.token_seq[t]];
    batch.visible_slots(t, params.sliding_window, &slots);
    const int64_t n_keys = static_cast<int64_t>(slots.size());
    keys.resize(static_cast<size_t>(n_keys * head_dim));
    values.resize(static_cast<size_t>(n_keys * head_dim_v));
    scores.resize(static_cast<size_t>(n_keys));
    for (int64_t g = 0; g < n_head_kv; ++g) {
      // Load this kv head's visible rows once; every query head of the group reuses them.
      for (int64_t j = 0; j < n_keys; ++j) {
        load_kv_row(k_cache.dtype, kv_row(k_cache, seq, block_size, slots[j], g), &keys[j * head_dim], head_dim);
        load_kv_row(v_cache.dtype, kv_row(v_cache, seq, block_size, slots[j], g), &values[j * head_dim_v], head_dim_v);
      }
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        const float* qh = static_cast<const float*>(q.row(t * n_head + h));
        float* yh = static_cast<float*>(out.row(t * n_head + h));
        double max = params.sinks ? static_cast<double>(params.sinks[h]) : -INFINITY;
        for (int64_t j = 0; j < n_keys; ++j) {
          double s = 0.0;
          for (int64_t i = 0; i < head_dim; ++i) s += static_cast<double>(qh[i]) * keys[j * head_dim + i];
          s *= scale;
          if (params.soft_cap > 0.0f) s = params.soft_cap * std::tanh(s / params.soft_cap);
          scores[j] = s;
          max = std::max(max, s);
        }
        double sum = params.sinks ? std::exp(params.sinks[h] - max) : 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < n_keys; ++j) {
          const double p = std::exp(scores[j] - max);
          sum += p;
          for (int64_t i = 0; i < head_dim_v; ++i) acc[i] += p * values[j * head_dim_v + i];
        }
        for (int64_t i = 0; i < head_dim_v; ++i) yh[i] = sum == 0.0 ? 0.0f : static_cast<float>(acc[i] / sum);  // NaN stays NaN
      }
    }
  }
  return {};
}

}  // namespace saker::ref
