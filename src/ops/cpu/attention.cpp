#include "ops/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "ops/cpu/convert.h"
#include "ops/cpu/vec_dot.h"
#include "ops/ref/kv_cache.h"

namespace saker::cpu {

namespace {

void dot_rows_portable(const void* w, const float* const* x, int n_rows, int64_t n, float* out) {
  for (int r = 0; r < n_rows; ++r) out[r] = dot_f32_generic(static_cast<const float*>(w), x[r], n);
}

// Scratch of one task, reused across its (token, kv head) items.
struct Scratch {
  std::vector<int32_t> slots;
  std::vector<float> scores;  // [group, n_keys]
  std::vector<float> acc;     // [group, head_dim_v]
  std::vector<float> row;     // one K or V row converted to f32
  std::vector<float> sums;    // [group] softmax denominators
};

}  // namespace

Status attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                 const AttentionBatch& batch, const ref::AttentionParams& params, const TensorView& out,
                 const AttentionOptions& options) {
  SAKER_RETURN_IF_ERROR(ref::check_attention_args(q, k_cache, v_cache, batch, params, out, "cpu::attention"));
  const int64_t n_tokens = batch.n_tokens(), n_head = q.dim(1), block_size = k_cache.dim(1);
  const int64_t n_head_kv = k_cache.dim(2), head_dim = k_cache.dim(3), head_dim_v = v_cache.dim(3);
  const int64_t group = n_head / n_head_kv;
  const float scale = params.scale != 0.0f ? params.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  const bool simd = options.simd && have_avx2();
  // Key rows are read in the cache dtype by the AVX2 kernels; the portable path converts them first.
  const FloatDotFn k_dot = simd ? avx2_float_dot(k_cache.dtype) : dot_rows_portable;
  const bool convert_k = !simd && k_cache.dtype != DType::kF32;

  ThreadPool::current().parallel_for(n_tokens * n_head_kv, [&](int64_t begin, int64_t end) {
    Scratch s;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / n_head_kv, g = item % n_head_kv;
      const AttentionSequence& seq = batch.sequences[batch.token_seq[t]];
      batch.visible_slots(t, params.sliding_window, &s.slots);
      const int64_t n_keys = static_cast<int64_t>(s.slots.size());
      s.scores.resize(static_cast<size_t>(group * n_keys));
      s.acc.assign(static_cast<size_t>(group * head_dim_v), 0.0f);
      s.row.resize(static_cast<size_t>(std::max(head_dim, head_dim_v)));
      const float* q_rows[kMaxDotRows];
      float dots[kMaxDotRows];

      // Scores: every key row is read once for the whole group, up to kMaxDotRows heads per kernel call.
      for (int64_t j = 0; j < n_keys; ++j) {
        const void* kr = ref::kv_row(k_cache, seq, block_size, s.slots[j], g);
        if (convert_k) {
          ref::load_kv_row(k_cache.dtype, kr, s.row.data(), head_dim);
          kr = s.row.data();
        }
        for (int64_t h0 = 0; h0 < group; h0 += kMaxDotRows) {
          const int n_rows = static_cast<int>(std::min<int64_t>(kMaxDotRows, group - h0));
          for (int r = 0; r < n_rows; ++r) q_rows[r] = static_cast<const float*>(q.row(t * n_head + g * group + h0 + r));
          k_dot(kr, q_rows, n_rows, head_dim, dots);
          for (int r = 0; r < n_rows; ++r) {
            float v = dots[r] * scale;
            if (params.soft_cap > 0.0f) v = params.soft_cap * std::tanh(v / params.soft_cap);
            s.scores[(h0 + r) * n_keys + j] = v;
          }
        }
      }
      // Softmax per head (with the optional sink term), probabilities left in place.
      s.sums.resize(static_cast<size_t>(group));
      for (int64_t h = 0; h < group; ++h) {
        float* sc = &s.scores[h * n_keys];
        const float sink = params.sinks ? params.sinks[g * group + h] : -INFINITY;
        float max = sink;
        for (int64_t j = 0; j < n_keys; ++j) max = std::max(max, sc[j]);
        float z = params.sinks ? std::exp(sink - max) : 0.0f;
        for (int64_t j = 0; j < n_keys; ++j) z += (sc[j] = std::exp(sc[j] - max));
        s.sums[h] = z;
      }
      // Weighted sum of the value rows, each read once for the group.
      for (int64_t j = 0; j < n_keys; ++j) {
        const void* vr = ref::kv_row(v_cache, seq, block_size, s.slots[j], g);
        const float* v = static_cast<const float*>(vr);
        if (v_cache.dtype != DType::kF32) {
          to_f32_row(v_cache.dtype, vr, s.row.data(), head_dim_v, simd);
          v = s.row.data();
        }
        for (int64_t h = 0; h < group; ++h) {
          const float p = s.scores[h * n_keys + j];
          float* a = &s.acc[h * head_dim_v];
          for (int64_t i = 0; i < head_dim_v; ++i) a[i] += p * v[i];
        }
      }
      for (int64_t h = 0; h < group; ++h) {
        float* y = static_cast<float*>(out.row(t * n_head + g * group + h));
        // No visible key and no sink: zeros. A NaN anywhere stays NaN.
        const float inv = s.sums[h] == 0.0f ? 0.0f : 1.0f / s.sums[h];
        for (int64_t i = 0; i < head_dim_v; ++i) y[i] = s.acc[h * head_dim_v + i] * inv;
      }
    }
  });
  return {};
}

}  // namespace saker::cpu
