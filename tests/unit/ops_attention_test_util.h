#pragma once
// A paged KV cache filled with random keys and values for the attention tests, plus the dense attention
// formula they compare against: several sequences share one cache through block tables whose physical
// blocks come in shuffled order, and every cached (sequence, slot) row is also kept densely for the oracle.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/half.h"
#include "ops/attention_batch.h"
#include "ops/ref/kv_write.h"
#include "unit/ops_test_util.h"

namespace saker::testing {

struct PagedKvFixture {
  int64_t block_size, n_head_kv, head_dim, head_dim_v;
  DType cache_type;
  int64_t n_blocks = 0;
  std::vector<uint8_t> k_bytes, v_bytes;
  std::vector<std::vector<int32_t>> tables;  // per sequence
  std::vector<AttentionSequence> sequences;
  // Dense copies [seq][slot] -> [n_head_kv * head_dim] as the cache holds them (rounded to cache_type).
  std::vector<std::vector<std::vector<float>>> k_dense, v_dense;

  TensorView k_cache() { return TensorView::contiguous(k_bytes.data(), cache_type, {n_blocks, block_size, n_head_kv, head_dim}); }
  TensorView v_cache() { return TensorView::contiguous(v_bytes.data(), cache_type, {n_blocks, block_size, n_head_kv, head_dim_v}); }

  float round(float x) const {
    if (cache_type == DType::kF16) return fp16_to_fp32(fp32_to_fp16(x));
    if (cache_type == DType::kBF16) return bf16_to_fp32(fp32_to_bf16(x));
    return x;
  }

  // Allocates blocks for sequences of n_ctx slots (shuffled physical order plus a few unused blocks), then
  // writes random K/V for every slot through ref::kv_write (one chain batch over all of them).
  PagedKvFixture(std::vector<int32_t> n_ctx, int64_t block_size_, int64_t n_head_kv_, int64_t head_dim_,
                 int64_t head_dim_v_, DType type, uint32_t seed)
      : block_size(block_size_), n_head_kv(n_head_kv_), head_dim(head_dim_), head_dim_v(head_dim_v_), cache_type(type) {
    OpsRng rng(seed);
    int64_t needed = 0;
    for (int32_t n : n_ctx) needed += (n + block_size - 1) / block_size;
    n_blocks = needed + 3;
    std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
    for (int32_t i = 0; i < n_blocks; ++i) perm[i] = i;
    for (int64_t i = n_blocks - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(static_cast<int32_t>(i + 1))]);
    const size_t elem = type == DType::kF32 ? 4 : 2;
    k_bytes.assign(static_cast<size_t>(n_blocks * block_size * n_head_kv * head_dim) * elem, 0xFF);  // NaN-ish fill
    v_bytes.assign(static_cast<size_t>(n_blocks * block_size * n_head_kv * head_dim_v) * elem, 0xFF);
    size_t next = 0;
    tables.resize(n_ctx.size());
    for (size_t s = 0; s < n_ctx.size(); ++s) {
      for (int64_t b = 0; b < (n_ctx[s] + block_size - 1) / block_size; ++b) tables[s].push_back(perm[next++]);
    }
    for (size_t s = 0; s < n_ctx.size(); ++s) sequences.push_back({tables[s], n_ctx[s], AttentionMask::kCausal, 0});
    // Fill every slot with one chain batch.
    std::vector<int32_t> seq_of, slot_of;
    for (size_t s = 0; s < n_ctx.size(); ++s) {
      for (int32_t p = 0; p < n_ctx[s]; ++p) {
        seq_of.push_back(static_cast<int32_t>(s));
        slot_of.push_back(p);
      }
    }
    const int64_t n = static_cast<int64_t>(seq_of.size());
    std::vector<float> k = rng.normals(static_cast<size_t>(n * n_head_kv * head_dim));
    std::vector<float> v = rng.normals(static_cast<size_t>(n * n_head_kv * head_dim_v));
    AttentionBatch fill{sequences, seq_of, slot_of, slot_of, {}};
    write_ok = ref::kv_write(view(k, {n, n_head_kv, head_dim}), view(v, {n, n_head_kv, head_dim_v}), k_cache(),
                             v_cache(), fill).ok();
    k_dense.resize(n_ctx.size());
    v_dense.resize(n_ctx.size());
    for (int64_t t = 0; t < n; ++t) {
      const size_t kd = static_cast<size_t>(n_head_kv * head_dim), vd = static_cast<size_t>(n_head_kv * head_dim_v);
      std::vector<float> kr(k.begin() + t * kd, k.begin() + (t + 1) * kd), vr(v.begin() + t * vd, v.begin() + (t + 1) * vd);
      for (float& x : kr) x = round(x);
      for (float& x : vr) x = round(x);
      k_dense[seq_of[t]].push_back(std::move(kr));
      v_dense[seq_of[t]].push_back(std::move(vr));
    }
  }
  bool write_ok = false;
};

// softmax(scale * q.k_j, capped, with an optional sink) . v_j over the given key rows, in double.
inline void dense_attention(const float* q, const std::vector<const float*>& keys, const std::vector<const float*>& values,
                            int64_t head_dim, int64_t head_dim_v, double scale, double soft_cap, const float* sink,
                            float* out) {
  std::vector<double> s(keys.size());
  double max = sink ? *sink : -INFINITY;
  for (size_t j = 0; j < keys.size(); ++j) {
    double d = 0.0;
    for (int64_t i = 0; i < head_dim; ++i) d += static_cast<double>(q[i]) * keys[j][i];
    d *= scale;
    if (soft_cap > 0.0) d = soft_cap * std::tanh(d / soft_cap);
    s[j] = d;
    max = std::max(max, d);
  }
  double z = sink ? std::exp(*sink - max) : 0.0;
  for (double& x : s) z += (x = std::exp(x - max));
  for (int64_t i = 0; i < head_dim_v; ++i) {
    double acc = 0.0;
    for (size_t j = 0; j < keys.size(); ++j) acc += s[j] * values[j][i];
    out[i] = z > 0.0 ? static_cast<float>(acc / z) : 0.0f;
  }
}

}  // namespace saker::testing
