#pragma once
// Multi-sequence attention over a paged KV cache, reference version (the oracle for every attention
// kernel). For each query token t and head h (GQA: kv head h / (n_head / n_head_kv)):
//   s_j   = scale * q[t, h] . k[j]              for every key slot j visible to t (see attention_batch.h)
//   s_j   = soft_cap * tanh(s_j / soft_cap)     when soft_cap > 0 (Gemma 2)
//   p_j   = exp(s_j) / (sum_i exp(s_i) + exp(sink_h))   (the sink term only with per-head sinks, gpt-oss)
//   out   = sum_j p_j v[j]
// in double precision, one query at a time. A query that sees no key gets zeros. K/V must already hold
// this step's rows (kv_write).
#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "ops/attention_batch.h"

namespace saker::ref {

struct AttentionParams {
  float scale = 0.0f;             // 0: 1 / sqrt(head_dim)
  float soft_cap = 0.0f;          // > 0: cap the logits with soft_cap * tanh(s / soft_cap)
  int32_t sliding_window = 0;     // > 0: only keys with position > query position - sliding_window
  const float* sinks = nullptr;   // [n_head] sink logits (an extra softmax term with no value), or null
};

// The checks every attention backend shares: shapes of q/out against the caches, GQA divisibility, the
// batch against the cache geometry.
Status check_attention_args(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                            const AttentionBatch& batch, const AttentionParams& params, const TensorView& out,
                            const char* op);

Status attention(const TensorView& q,        // [n_tokens, n_head, head_dim] f32
                 const TensorView& k_cache,  // [n_blocks, block_size, n_head_kv, head_dim] f32/f16/bf16
                 const TensorView& v_cache,  // [n_blocks, block_size, n_head_kv, head_dim_v] f32/f16/bf16
                 const AttentionBatch& batch, const AttentionParams& params,
                 const TensorView& out);     // [n_tokens, n_head, head_dim_v] f32

}  // namespace saker::ref
