// Writes this step's K/V rows into the paged f16 cache: one block per token, threads over its
// n_head_kv * head_dim elements. __float2half_rn rounds to nearest even, like the host conversion.
#include "ops/cuda/attention.h"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"

namespace saker::cuda {
namespace {

// k, v: [n_tokens, n_head_kv, head_dim] f32, token stride `token_stride`; caches: [n_blocks, block_size,
// n_head_kv, head_dim] f16.
__global__ void kv_write_kernel(const float* __restrict__ k, const float* __restrict__ v, int64_t token_stride,
                                __half* __restrict__ k_cache, __half* __restrict__ v_cache, const int32_t* p,
                                PackedAttentionLayout L, int32_t block_size, int32_t row_elems) {
  chain_in();
  const int32_t t = blockIdx.x;
  const int32_t seq = p[L.token_seq + t], slot = p[L.token_slot + t];
  const int64_t dst = attn_cache_row(p, L, seq, slot, block_size) * row_elems;
  const int64_t src = t * token_stride;
  for (int32_t i = threadIdx.x; i < row_elems; i += blockDim.x) {
    k_cache[dst + i] = __float2half_rn(k[src + i]);
    v_cache[dst + i] = __float2half_rn(v[src + i]);
  }
}

}  // namespace

Status kv_write(const float* k, const float* v, int64_t token_stride, __half* k_cache, __half* v_cache,
                const DeviceAttentionBatch& batch, int32_t n_head_kv, int32_t head_dim, cudaStream_t stream) {
  const int32_t n_tokens = batch.layout.n_tokens;
  if (n_tokens <= 0) return {};
  const int32_t row_elems = n_head_kv * head_dim;
  if (n_head_kv <= 0 || head_dim <= 0 || token_stride < row_elems || batch.block_size <= 0) {
    return make_error(StatusCode::kInvalidArgument, "cuda kv_write: bad n_head_kv, head_dim, token_stride or block_size");
  }
  launch_chained(kv_write_kernel, static_cast<unsigned>(n_tokens), 256, 0, stream, k, v, token_stride, k_cache, v_cache,
                 batch.data, batch.layout, batch.block_size, row_elems);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
