#pragma once
// Index math of the width-invariant F16 / BF16 matmul (matmul_float_wi.cu), in __host__ __device__ helpers so
// a host test can emulate the kernel lane by lane (tests/unit/cuda_float_mma_layout_test.cpp).
//
// The kernel feeds mma.m16n8k16 straight from 16-byte global loads, with no shared-memory staging: the input
// dimension is walked in chunks of 32 elements, and lane (g = lane >> 2, t = lane & 3) loads the 8 consecutive
// elements [8t, 8t + 8) of the chunk from weight rows g and g + 8 (one uint4 each) and from activation row g
// (one uint4 of f16 / bf16, or two float4 of f32 rounded in registers). Those 8 elements feed two MMAs:
// MMA h (0, 1) takes the lane's elements [4h, 4h + 4). A dot product does not care in which order the MMA sees
// K, only that A and B agree, so logical K index k of MMA h (the PTX fragment position, mma_layout.h) stands
// for physical element chunk_k(h, k) of the chunk, the same map for the weights and for the activations:
//   logical k = 2t + i + 8 hi (t = 0..3, i = 0..1, hi = 0..1)  ->  physical 8t + 4h + 2 hi + i
// Register j of the lane's uint4 holds physical elements 2j, 2j + 1 of its 8, so MMA h's A registers are
// {wa[2h], wb[2h], wa[2h + 1], wb[2h + 1]} (a0a1: row g cols 2t..; a2a3: row g + 8; a4a5 / a6a7: cols 2t + 8..)
// and its B registers {x[2h], x[2h + 1]} (b0b1: k 2t, 2t + 1; b2b3: k 2t + 8, 2t + 9).
//
// Width invariance: each output element is one accumulation chain, MMA after MMA in ascending chunk order
// over a fixed quarter of K per warp, then the four warps' partial sums added in a fixed order. Nothing in it
// depends on how many activation rows share the call, which n-tile a row falls in, or how many m-tiles a warp
// carries, so a row's bits are the same at every width.
#include "ops/cuda/dequant_blocks.h"

namespace saker::cuda::float_mma {

inline constexpr int kChunk = 32;      // input elements per chunk (two MMAs of k16)
inline constexpr int kLaneElems = 8;   // elements a lane loads per row and chunk (16 bytes of f16)
inline constexpr int kWarps = 4;       // warps of a block, each a fixed quarter of K
inline constexpr int kMaxRows = 64;    // activation rows a call takes (eight n-tiles)

// Physical element (0..31) of the chunk that MMA h's logical K index k (0..15) stands for.
SAKER_HD int chunk_k(int h, int k) { return 8 * ((k & 7) >> 1) + 4 * h + 2 * (k >> 3) + (k & 1); }

// Element (0..7) of lane's 16-byte load held in the low half of register word `word` (0..3); the high half
// holds the next one.
SAKER_HD int lane_elem(int word) { return 2 * word; }

// Which of the lane's loaded words MMA h passes as A register j (0..3): {row g or g + 8, word index}.
struct AWord {
  bool upper;  // row g + 8 (else row g)
  int word;
};
SAKER_HD AWord a_word(int h, int j) { return {(j & 1) != 0, 2 * h + (j >> 1)}; }
// Which word of the lane's activation load MMA h passes as B register j (0..1).
SAKER_HD int b_word(int h, int j) { return 2 * h + j; }

// The input range [begin, end) of warp w (0..kWarps-1): a quarter of K, in whole chunks.
SAKER_HD int64_t warp_k_begin(int64_t n_in, int w) { return n_in / kWarps * w; }

// Whether the kernel takes this input width: every warp's quarter whole chunks.
SAKER_HD bool n_in_supported(int64_t n_in) { return n_in > 0 && n_in % (kChunk * kWarps) == 0; }

}  // namespace saker::cuda::float_mma
