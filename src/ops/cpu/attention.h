#pragma once
// Multi-sequence attention over a paged KV cache, fast CPU version (checked against ref::attention; same
// arguments, metadata and semantics, see ops/attention_batch.h and ops/ref/attention.h). Work is split over
// (query token, kv head) pairs on the thread pool; the query heads of one GQA group share every key and
// value row they read. Scores, softmax and the weighted sum are f32 (the AVX2 dot kernels of the matmul
// read f16 / bf16 cache rows directly).
#include "core/status.h"
#include "core/tensor.h"
#include "ops/attention_batch.h"
#include "ops/ref/attention.h"

namespace saker::cpu {

struct AttentionOptions {
  bool simd = true;  // AVX2 dot kernels when the CPU has them; false: portable loops
};

Status attention(const TensorView& q,        // [n_tokens, n_head, head_dim] f32
                 const TensorView& k_cache,  // [n_blocks, block_size, n_head_kv, head_dim] f32/f16/bf16
                 const TensorView& v_cache,  // [n_blocks, block_size, n_head_kv, head_dim_v] f32/f16/bf16
                 const AttentionBatch& batch, const ref::AttentionParams& params,
                 const TensorView& out,      // [n_tokens, n_head, head_dim_v] f32
                 const AttentionOptions& options = {});

}  // namespace saker::cpu
