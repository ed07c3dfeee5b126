#pragma once
// Index math of the tensor-core matmul (matmul_mma.cuh), kept in __host__ __device__ helpers so a host unit
// test can emulate the kernel lane by lane and check it against a plain dot product on a machine without a GPU.
//
// mma.sync.aligned.m16n8k16 with f16/bf16 inputs and f32 accumulators (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), groupID g = lane >> 2, threadID_in_group t = lane & 3:
//   A (16 x 16, row major), registers a0..a7 (two per 32-bit register, low half first):
//       a0 a1: row g,     cols 2t, 2t+1        a2 a3: row g + 8, cols 2t, 2t+1
//       a4 a5: row g,     cols 2t+8, 2t+9      a6 a7: row g + 8, cols 2t+8, 2t+9
//   B (16 x 8, "col": k by n), b0..b3:  b0 b1: rows (k) 2t, 2t+1, col (n) g;  b2 b3: rows 2t+8, 2t+9, col g
//   C/D (16 x 8), c0..c3:  c0 c1: row g, cols 2t, 2t+1;   c2 c3: row g + 8, cols 2t, 2t+1
// In the matmul, M is 16 weight (output) rows, K the input dimension and N 8 activation (token) rows.
#include "ops/cuda/dequant_blocks.h"

namespace saker::cuda::mma {

struct RowCol {
  int row, col;
};

SAKER_HD RowCol a_elem(int lane, int i) {  // i = 0..7
  return {(lane >> 2) + 8 * ((i >> 1) & 1), 2 * (lane & 3) + (i & 1) + 8 * (i >> 2)};
}
SAKER_HD RowCol b_elem(int lane, int i) {  // i = 0..3; row = k, col = n
  return {2 * (lane & 3) + (i & 1) + 8 * (i >> 1), lane >> 2};
}
SAKER_HD RowCol c_elem(int lane, int i) {  // i = 0..3; row = m, col = n
  return {(lane >> 2) + 8 * (i >> 1), 2 * (lane & 3) + (i & 1)};
}

// The kernel walks K in steps of 256 elements. In each step a warp decodes its 16 weight rows into a shared
// tile [16][kTilePitch] of f16/bf16: 16 rows x 8 units of 32 elements = 128 units, four per lane. Lane l's
// i-th unit (i = 0..3) is row (l >> 3) + 4 i, unit l & 7 of the step (eight lanes share one row, so they read
// one block's bytes together).
inline constexpr int kStepElems = 256;
inline constexpr int kTileRows = 16;
inline constexpr int kTilePitch = kStepElems + 8;  // halves; 132 words a row: the A loads hit 32 banks
SAKER_HD int decode_row(int lane, int i) { return (lane >> 3) + 4 * i; }
SAKER_HD int decode_unit_of_step(int lane) { return lane & 7; }

// Where unit `su` (0..7) of a step lies for format F: block su / kUnits of the step, unit su % kUnits in it.
template <class F>
SAKER_HD int step_block(int su) {
  return su / F::kUnits;
}
template <class F>
SAKER_HD int step_unit(int su) {
  return su % F::kUnits;
}
// Column in the step tile of run r of step unit su (runs are 8 consecutive elements).
template <class F>
SAKER_HD int tile_col(int su, int r) {
  return step_block<F>(su) * F::kBlockElems + F::run_start(step_unit<F>(su), r);
}

// Reduction of the four K-split warps: C register i of lane `lane`, n-tile nt, warp w, stored at
// red[red_index(w, nt, i, lane)] (lane fastest: conflict-free). The epilogue thread e (0 .. NT*128-1)
// handles red_index(*, e) and maps back with red_elem.
SAKER_HD int red_index(int nt_count, int w, int nt, int i, int lane) { return ((w * nt_count + nt) * 4 + i) * 32 + lane; }
struct OutElem {
  int m, n;  // output row within the 16-row tile, activation row
};
SAKER_HD OutElem red_elem(int e) {
  const int nt = e >> 7, i = (e >> 5) & 3, lane = e & 31;
  const RowCol rc = c_elem(lane, i);
  return {rc.row, nt * 8 + rc.col};
}

}  // namespace saker::cuda::mma
