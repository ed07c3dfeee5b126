#pragma once
// One kernel for the attention inputs of a decoder layer: per-head RMSNorm + RoPE of q and k, and the
// f16 cache writes of k and v, all from the fused qkv projection row. Same results as head_norm_rope(q),
// head_norm_rope(k) and kv_write run in sequence (the same f32 math and double-precision angles).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "ops/cuda/attention.h"
#include "ops/cuda/norm_rope.h"

namespace saker::cuda {

// qkv: [n_tokens, token_stride] f32 with n_tokens = batch.layout.n_tokens; row t holds q [n_head, head_dim],
// then k [n_head_kv, head_dim], then v [n_head_kv, head_dim]. In place: first qkv_bias [(n_head + 2 n_head_kv)
// head_dim] (null: none; qwen2's projection bias) is added to every row, one f32 add an element as
// add_row_bias does; then q and k are normalised (weights
// q_norm_w / k_norm_w [head_dim], each null for no norm; add_one: (1 + w)) and rotated at positions[t]
// (device int32 [n_tokens]); v keeps its (biased) values. k and v are then written (rounded to nearest f16) to each
// token's slot of k_cache / v_cache [n_blocks, block_size, n_head_kv, head_dim].
Status qk_norm_rope_kv_write(float* qkv, int64_t token_stride, int32_t n_head, int32_t n_head_kv, int32_t head_dim,
                             const float* qkv_bias, const float* q_norm_w, const float* k_norm_w, float eps,
                             bool add_one, const int32_t* positions, const RopeConfig& rope, __half* k_cache,
                             __half* v_cache, const DeviceAttentionBatch& batch, cudaStream_t stream);

}  // namespace saker::cuda
