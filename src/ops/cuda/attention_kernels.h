#pragma once
// Internal interface between the attention dispatcher and its kernels (not for callers outside ops/cuda).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "core/status.h"
#include "ops/cuda/attention_pack.h"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"

namespace saker::cuda::detail {

// Everything a split-K attention launch reads. Grid: (n_splits, n_head_kv, ceil(n_tokens / rows_per_tile)).
struct SplitAttentionArgs {
  const float* q = nullptr;          // [n_tokens, n_head, head_dim] f32, token stride q_stride
  int64_t q_stride = 0;
  const __half* k_cache = nullptr;   // [n_blocks, block_size, n_head_kv, head_dim] f16
  const __half* v_cache = nullptr;   // [n_blocks, block_size, n_head_kv, head_dim] f16
  const int32_t* packed = nullptr;   // device packed batch
  PackedAttentionLayout layout;
  int32_t block_size = 0;
  int32_t block_shift = -1;          // log2(block_size) when it is a power of two, else -1
  int32_t n_head = 0, n_head_kv = 0, head_dim = 0, group = 0;
  int32_t rows_per_tile = 0;         // query tokens per block (rows_per_tile * group <= max_queries(head_dim))
  float scale = 0.0f, soft_cap = 0.0f;
  int32_t window = 0;
  int32_t n_splits = 1;
  int32_t split_keys = 0;            // > 0: split i covers absolute key slots [i, i + 1) * split_keys (split-K only)
  float* out = nullptr;              // [n_tokens, n_head, head_dim] f32, written directly when n_splits == 1
  float2* part_ml = nullptr;         // [n_splits, n_tokens, n_head] (running max, sum) when n_splits > 1
  float* part_acc = nullptr;         // [n_splits, n_tokens, n_head, head_dim] unnormalised sums
  // Set: the K-quant matmul's activation blocks of out ([n_tokens, n_head head_dim] as one matrix row a token,
  // kq_canon.h) are written too: by the combine itself where combine_quantizes(), else by a quantisation
  // launch after the kernels (the same bits either way).
  int8_t* out_xq = nullptr;
  void* out_kx = nullptr;
};

// Whether the combine of this launch writes out's activation blocks itself: it runs (n_splits > 1), and a
// 256-element block holds whole heads of one token (head_dim divides 256, n_head head_dim a multiple of it).
inline bool combine_quantizes(const SplitAttentionArgs& a) {
  return a.out_xq != nullptr && a.n_splits > 1 && a.head_dim > 0 && 256 % a.head_dim == 0 &&
         (static_cast<int64_t>(a.n_head) * a.head_dim) % 256 == 0;
}

// Most query vectors (token rows x heads of one KV head) one split-K block holds.
constexpr int32_t split_max_queries(int32_t head_dim) { return head_dim <= 128 ? 64 : 8192 / head_dim; }
// Keys per shared-memory tile of the split-K kernel: about 16 KB of K and 16 KB of V whatever the head
// size, rounded up so that the tile's 16-byte chunks split evenly over the block's 256 threads.
constexpr int32_t split_key_tile(int32_t head_dim) {
  int32_t keys = 8192 / head_dim;
  while (keys * (head_dim / 8) % 256 != 0) ++keys;
  return keys;
}

// Head sizes the attention kernels are instantiated for (multiples of 16).
constexpr bool attention_head_dim_supported(int32_t head_dim) {
  return head_dim == 32 || head_dim == 64 || head_dim == 80 || head_dim == 96 || head_dim == 128 || head_dim == 256;
}

// Keys per split of the decode kernel: K and V of one split (about 32 KB each) land in shared memory in
// one round of cp.async, so the whole slice is in flight at once. A multiple of 32.
constexpr int32_t decode_key_tile(int32_t head_dim) { return 16384 / head_dim >= 256 ? 256 : 16384 / head_dim / 32 * 32; }
// Most query vectors (token rows x heads of one KV head) one decode block holds.
constexpr int32_t kDecodeMaxQueries = 32;

// Raises a kernel's dynamic shared memory limit to `bytes` (its largest launch) once per device, so a
// launch inside CUDA graph capture makes no attribute call.
template <typename Kernel>
Status allow_dynamic_smem(Kernel kernel, size_t bytes, std::atomic<uint64_t>* done_devices) {
  int dev = 0;
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  const uint64_t bit = 1ull << (dev & 63);
  if (done_devices->load(std::memory_order_acquire) & bit) return {};
  SAKER_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  done_devices->fetch_or(bit, std::memory_order_acq_rel);
  return {};
}

Status launch_split_combine(const SplitAttentionArgs& a, cudaStream_t stream);

// Launches `kernel` over the split-K grid (n_splits, n_head_kv, ceil(n_tokens / rows_per_tile)) with `smem`
// bytes of dynamic shared memory (the limit raised once to max_smem, the kernel's largest launch), then the
// combine, chained (chained_launch.cuh: the kernel starts with chain_in()). For .cu files (a kernel launch).
// grid_x > 0: that many blocks along the splits instead of one a split (a kernel that loops over its splits).
template <typename Kernel>
Status launch_on_split_grid(Kernel kernel, int threads, size_t smem, size_t max_smem, std::atomic<uint64_t>* smem_set,
                            const SplitAttentionArgs& a, cudaStream_t stream, int32_t grid_x = 0) {
  if (max_smem > 0) SAKER_RETURN_IF_ERROR(allow_dynamic_smem(kernel, max_smem, smem_set));
  const int32_t n_tiles = (a.layout.n_tokens + a.rows_per_tile - 1) / a.rows_per_tile;
  const dim3 grid(static_cast<unsigned>(grid_x > 0 ? grid_x : a.n_splits), static_cast<unsigned>(a.n_head_kv),
                  static_cast<unsigned>(n_tiles));
  launch_chained(kernel, grid, dim3(threads), smem, stream, a);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return launch_split_combine(a, stream);
}

// Split-K attention (+ the combine kernel when n_splits > 1). Correct for every mask and batch shape.
Status launch_split_attention(const SplitAttentionArgs& a, cudaStream_t stream);

// Most splits the combine merges.
constexpr int32_t kCombineMaxSplits = 1024;

// The combine step of split-K (declared above): out[t, h] from the n_splits partials (the (m, l) pairs and,
// for slices with m > -inf, the unnormalised sums). No-op when n_splits == 1.

// Decode attention: grid (n_splits, n_head_kv, ceil(n_tokens / rows_per_tile)), rows_per_tile * group <=
// kDecodeMaxQueries; each block streams one slice of decode_key_tile(head_dim) keys per round into shared
// memory with cp.async (K and V in two groups) and computes in f32. Same partials as split-K. Any mask.
Status launch_decode_attention(const SplitAttentionArgs& a, cudaStream_t stream);

// Warp decode attention: grid (n_splits, n_head_kv, n_tokens), one query token (rows_per_tile = 1) and one
// KV head's GQA group (<= kWarpDecodeMaxGroup heads) per block; its four warps stream interleaved chunks of
// the slice's keys into registers with no block barrier until the end. Same partials as split-K. Any mask.
// Needs q 16-byte aligned and q_stride % 4 == 0, and warp_decode_supports().
constexpr int32_t kWarpDecodeMaxGroup = 8;
bool warp_decode_supports(int32_t head_dim, int32_t group, int32_t n_tokens);
// Keys one round of the block's four warps covers (slices are whole multiples of a warp's chunk).
int32_t warp_decode_slice_keys(int32_t head_dim);
Status launch_warp_decode_attention(const SplitAttentionArgs& a, cudaStream_t stream);

// Tensor-core verify attention: grid (n_splits, n_head_kv, ceil(n_tokens / rows_per_tile)), rows_per_tile *
// group <= 64 query vectors (one KV head's GQA group over the tile's tokens) per block, keys split like
// split-K (slices rounded to 64-key tiles), same partials. Needs q 16-byte aligned and q_stride % 4 == 0.
Status launch_verify_attention(const SplitAttentionArgs& a, cudaStream_t stream);

// Tensor-core flash-decoding over fixed slices (kVerifyFixed): grid (n_splits, n_head_kv, ceil(n_tokens /
// rows_per_tile)), rows_per_tile * group <= 64 query vectors per block, split i covering absolute key slots
// [i, i + 1) * split_keys (a multiple of 64); same partials as split-K. Each vector's bits depend only on
// its own row, keys and the slices. Needs q 16-byte aligned and q_stride % 4 == 0.
Status launch_decode_mma_attention(const SplitAttentionArgs& a, cudaStream_t stream);

// Tensor-core tiled attention (64 query rows of one head per block; rows_per_tile, n_splits and the
// partials are ignored, out is written directly). Needs q 16-byte aligned and q_stride % 4 == 0.
// paired: 8 warps per block over two query heads of one GQA group (needs group % 2 == 0).
Status launch_tiled_attention(const SplitAttentionArgs& a, cudaStream_t stream, bool paired = false);

}  // namespace saker::cuda::detail
