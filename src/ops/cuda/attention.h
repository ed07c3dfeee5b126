#pragma once
// Paged attention on the GPU over an f16 KV cache [n_blocks, block_size, n_head_kv, head_dim], with the
// same semantics as ref::attention (causal, tree and full masks, sliding window, soft cap, GQA).
//
// The batch metadata travels as one int32 array (DeviceAttentionBatch) that the host packs and copies in
// one transfer. Launch shapes depend only on the capacities passed in AttentionLaunch (never on the
// sequence lengths, which the kernels read from device memory), so a captured CUDA graph replays for any
// lengths up to those capacities.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "ops/attention_batch.h"
#include "ops/cuda/attention_pack.h"  // PackedAttentionLayout, pack_attention_batch

namespace saker::cuda {

class MatmulContext;  // ops/cuda/matmul.h

// Device view of a packed batch: `data` points at the device copy of the packed array.
struct DeviceAttentionBatch {
  PackedAttentionLayout layout;
  const int32_t* data = nullptr;
  int32_t block_size = 16;
};

// Which kernel attention() runs. kAuto picks from the batch shape (tests and benchmarks force one).
enum class AttentionKernel : uint8_t {
  kAuto,
  kSplitK,  // f32 flash-decoding over key splits: decode, speculative verify, any batch
  kTiled,   // f16 tensor-core tiles of 64 query rows: prefill
  kDecode,  // f32 flash-decoding with whole key slices in flight (cp.async): decode and short verify rows
  kVerify,  // f16 tensor-core tiles of one KV head's GQA group x up to 64 / group rows, keys split: verify
  kTiledPair,  // kTiled with 8-warp blocks over two query heads of a GQA group sharing each K/V tile (even
               // group; otherwise kTiled). Not chosen by kAuto yet.
  kWarpDecode,  // f32 flash-decoding, one query token per block, warps streaming keys in registers with no
                // barrier (head_dim 64/128/256, GQA group <= 8; otherwise kSplitK). Not chosen by kAuto.
  kSplitFixed,   // kSplitK over fixed slices of kFixedSplitKeys absolute key slots: a query's output is the
                 // same bits whatever else is in the batch
  kVerifyFixed,  // tensor-core flash-decoding over the same fixed slices (the eight warps of a block split
                 // each 64-key tile), equally batch-independent: kAuto's choice for decode and verify (needs
                 // q 16-byte aligned and a GQA group of at most 64, else kSplitFixed)
};

// Key slots per slice of the fixed-slice kernels: slice i covers slots [i, i + 1) * fixed_split_keys(D)
// of every sequence, so where a query's keys are cut depends on nothing but the key positions and the
// model's head size. 128, or one f32 split-K tile where that is longer (head_dim 32: 256).
int32_t fixed_split_keys(int32_t head_dim);
// The longest context the fixed slices cover (the combine's split limit); beyond it kAuto falls back to
// grid-filling splits, whose bits depend on the batch.
int32_t fixed_split_max_ctx(int32_t head_dim);

// kAuto: kTiled for prefill-sized batches (sequences bring more than 64 rows on average), kVerifyFixed
// otherwise, so that decode rows and speculative verify rows (up to 64 of a sequence) give the same bits
// alone or batched. A decode row inside a prefill-sized batch takes the tiled kernel's numbers, and a step
// whose fixed-slice partials would pass 512 MiB (many rows at a long capacity) takes the grid plan.
// The switch SAKER_CUDA_ATTENTION (core/env.h) changes the automatic choices: "fixedf32" (kSplitFixed instead
// of kVerifyFixed: f32 scores and weights, slower at several rows), "grid" (the previous choice,
// whose splits fill the GPU and so depend on the batch: kVerify when a sequence brings >= 32 query vectors
// and at most 64 rows, else kSplitK), and with it "notiled", "noverify", "decode" (kDecode for 1-7 rows),
// "warp" (kWarpDecode for one token per sequence), e.g. "grid,noverify,decode".

struct AttentionLaunch {
  int32_t n_head = 0, n_head_kv = 0, head_dim = 0;
  float scale = 0.0f;          // 0: 1/sqrt(head_dim)
  float soft_cap = 0.0f;       // > 0: soft_cap * tanh(s / soft_cap)
  int32_t sliding_window = 0;  // > 0: keys with position > query position - window
  int32_t max_ctx = 0;         // capacity: no sequence of this batch has n_ctx above it
  AttentionKernel kernel = AttentionKernel::kAuto;
};

// Writes each token's k/v row ([n_tokens, n_head_kv, head_dim] f32, row stride `token_stride` floats) to
// its slot of the f16 caches.
Status kv_write(const float* k, const float* v, int64_t token_stride, __half* k_cache, __half* v_cache,
                const DeviceAttentionBatch& batch, int32_t n_head_kv, int32_t head_dim, cudaStream_t stream);

// Scratch bytes the attention kernels need for a launch of this shape (split-K partials). The workspace
// must be 16-byte aligned (the combine reads the partial sums as float4; cudaMalloc memory is).
size_t attention_workspace_bytes(const DeviceAttentionBatch& batch, const AttentionLaunch& launch);

// q: [n_tokens, n_head, head_dim] f32 (row stride `q_stride` floats between tokens); out: [n_tokens, n_head,
// head_dim] f32 packed. Chooses a decode kernel (few queries per sequence, split over the keys) or a
// prefill kernel (tiles of queries) from the batch shape.
// quant: when given, out's int8 activation blocks are also left in its scratch for matmul(..., x_quantized =
// true), as rms_norm_quantized does (the combine of a split plan writes them, other plans a quantisation launch
// after the kernel; the same bits as the matmul's own). n_head * head_dim must then be a multiple of 256 and
// the tokens within the scratch (matmul_quantizes_input held for out).
Status attention(const float* q, int64_t q_stride, const __half* k_cache, const __half* v_cache,
                 const DeviceAttentionBatch& batch, const AttentionLaunch& launch, float* out, void* workspace,
                 size_t workspace_bytes, cudaStream_t stream, MatmulContext* quant = nullptr);

}  // namespace saker::cuda
