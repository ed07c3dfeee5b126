#pragma once
// Writes this step's new K and V rows into one layer's paged cache, each token at its slot through its
// sequence's block table (AttentionBatch). Runs before attention, so a token sees its own key. Values are
// rounded to the cache dtype (f32, f16 or bf16).
#include "core/status.h"
#include "core/tensor.h"
#include "ops/attention_batch.h"

namespace saker::ref {

Status kv_write(const TensorView& k,        // [n_tokens, n_head_kv, head_dim] f32
                const TensorView& v,        // [n_tokens, n_head_kv, head_dim_v] f32
                const TensorView& k_cache,  // [n_blocks, block_size, n_head_kv, head_dim]
                const TensorView& v_cache,  // [n_blocks, block_size, n_head_kv, head_dim_v]
                const AttentionBatch& batch);

}  // namespace saker::ref
