#pragma once
// The verify-width kernel (2-64 token rows) on tensor cores: mma.sync m16n8k16, f16 (or bf16 for BF16
// weights) inputs, f32 accumulators. Index math lives in mma_layout.h, where a host test emulates it.
//
// A block of four warps owns 16 output rows; the warps split K (warp w takes 256-element steps w, w + 4, ...).
// Per step a warp decodes its 16 rows x 256 elements once (dequant_blocks.h decoders, four 32-element units
// per lane) into a private shared tile as f16/bf16, then for each of the 16 k-slices loads one A fragment
// and runs it against every 8-row n-tile of activations, which are read as f32 pairs from global memory
// (the same few KiB of x serve every block, so they stay in L1/L2) and rounded to f16/bf16 in registers.
// Each weight byte is read from DRAM once per call whatever the row count. The four warps' partial sums are
// added through shared memory and one thread writes (or adds to) each output element.
// Numerics: x and the dequantised weights are rounded to f16 (bf16), products summed in f32, as in the
// cuBLAS prefill path, so results match the reference to the prefill tolerance rather than bit-for-bit f32.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/matmul_internal.cuh"
#include "ops/cuda/mma_f16.cuh"
#include "ops/cuda/mma_layout.h"

namespace saker::cuda::detail {

inline constexpr int kMmaWarps = 4;

template <class F, bool kBf16, int NT>
__global__ void __launch_bounds__(kMmaWarps * 32)
    matmul_mma_kernel(const uint8_t* __restrict__ w,  // [n_out, row_bytes] GGUF rows
                      int64_t row_bytes, int64_t n_out,
                      int n_steps,                    // n_in / 256
                      const float* __restrict__ x,    // [rows, n_in] f32, 8-byte aligned rows
                      int64_t n_in, int rows,         // rows <= 8 * NT
                      float* __restrict__ out,        // [rows, out_stride] f32
                      int64_t out_stride, int accumulate) {
  chain_in_late();
  using namespace mma;
  constexpr int kTileHalves = kTileRows * kTilePitch;
  // Per-warp decode tiles; reused for the cross-warp reduction at the end.
  __shared__ __align__(16) uint16_t smem[kMmaWarps * kTileHalves];
  static_assert(kMmaWarps * NT * 4 * 32 * 4 <= sizeof(smem), "reduction buffer must fit in the tiles");
  constexpr int kBlocksPerStep = kStepElems / F::kBlockElems;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kTileRows;
  uint16_t* tile = smem + warp * kTileHalves;

  // This lane's four decode units: rows past n_out re-read the last row (their results are never written).
  const int su = decode_unit_of_step(lane);
  const uint8_t* wr[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t r = o0 + decode_row(lane, i);
    wr[i] = w + (r < n_out ? r : n_out - 1) * row_bytes + static_cast<int64_t>(step_block<F>(su)) * F::kBlockBytes;
  }
  // This lane's activation rows (B column g of each n-tile).
  const float* xr[NT];
  bool xok[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int n = nt * 8 + (lane >> 2);
    xok[nt] = n < rows;
    xr[nt] = x + static_cast<int64_t>(xok[nt] ? n : 0) * n_in;
  }

  float c[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) c[nt][i] = 0.0f;
  }

  // Eight lanes per row spread L2 prefetches over the row's bytes of a step (<= 512 bytes: every 128-byte
  // line is touched); step s prefetches step s + kMmaWarps, this warp's next one, and the first step is
  // prefetched before the loop.
  constexpr int kStepRowBytes = kBlocksPerStep * F::kBlockBytes;
  const int64_t pf_off = static_cast<int64_t>(su) * (kStepRowBytes - 1) / 7 -
                         static_cast<int64_t>(step_block<F>(su)) * F::kBlockBytes;  // wr[] already add this
  if (warp < n_steps) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      asm volatile("prefetch.global.L2 [%0];" ::"l"(wr[i] + static_cast<int64_t>(warp) * kStepRowBytes + pf_off));
    }
  }
  for (int s = warp; s < n_steps; s += kMmaWarps) {
    const int64_t step_off = static_cast<int64_t>(s) * kBlocksPerStep * F::kBlockBytes;
    if (s + kMmaWarps < n_steps) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(wr[i] + step_off + static_cast<int64_t>(kMmaWarps) * kStepRowBytes + pf_off));
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float v[32];
      F::decode_unit(wr[i] + step_off, step_unit<F>(su), v);
      uint16_t* trow = tile + decode_row(lane, i) * kTilePitch;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        uint4 q;
        q.x = mma_pack<kBf16>(v[8 * r + 0], v[8 * r + 1]);
        q.y = mma_pack<kBf16>(v[8 * r + 2], v[8 * r + 3]);
        q.z = mma_pack<kBf16>(v[8 * r + 4], v[8 * r + 5]);
        q.w = mma_pack<kBf16>(v[8 * r + 6], v[8 * r + 7]);
        *reinterpret_cast<uint4*>(trow + tile_col<F>(su, r)) = q;  // runs start at multiples of 8 halves
      }
    }
    __syncwarp();
    const int64_t k_step = static_cast<int64_t>(s) * kStepElems;
#pragma unroll 4
    for (int kt = 0; kt < kStepElems / 16; ++kt) {
      uint32_t a[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const RowCol rc = a_elem(lane, 2 * j);
        a[j] = *reinterpret_cast<const uint32_t*>(tile + rc.row * kTilePitch + 16 * kt + rc.col);
      }
      const int64_t k0 = k_step + 16 * kt + b_elem(lane, 0).row;  // b0 b1 at k0, k0 + 1; b2 b3 at k0 + 8, + 9
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        float2 lo = make_float2(0.0f, 0.0f), hi = make_float2(0.0f, 0.0f);
        if (xok[nt]) {
          lo = __ldg(reinterpret_cast<const float2*>(xr[nt] + k0));
          hi = __ldg(reinterpret_cast<const float2*>(xr[nt] + k0 + 8));
        }
        mma_16816<kBf16>(c[nt], a, mma_pack<kBf16>(lo.x, lo.y), mma_pack<kBf16>(hi.x, hi.y));
      }
    }
    __syncwarp();
  }

  __syncthreads();  // every warp is done with its tile: reuse the memory for the reduction
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) red[red_index(NT, warp, nt, i, lane)] = c[nt][i];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < NT * 128; e += kMmaWarps * 32) {
    float sum = 0.0f;
#pragma unroll
    for (int ww = 0; ww < kMmaWarps; ++ww) sum += red[ww * NT * 128 + e];
    const OutElem oe = red_elem(e);
    const int64_t o = o0 + oe.m;
    if (o < n_out && oe.n < rows) {
      float* dst = out + static_cast<int64_t>(oe.n) * out_stride + o;
      *dst = accumulate ? *dst + sum : sum;
    }
  }
}

template <class F, bool kBf16>
Status launch_mma_for(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                      bool accumulate, cudaStream_t stream) {
  const int64_t blocks = (w.n_out + mma::kTileRows - 1) / mma::kTileRows;
  if (blocks > 0x7FFFFFFF || rows > 64 || rows < 1) {
    return make_error(StatusCode::kInvalidArgument, "cuda matmul: mma kernel shape out of range");
  }
  const auto* wp = static_cast<const uint8_t*>(w.data);
  const int64_t rb = matrix_row_bytes(w);
  const int n_steps = static_cast<int>(w.n_in / mma::kStepElems);
  const int r = static_cast<int>(rows), acc = accumulate ? 1 : 0;
  auto launch = [&](auto tiles) {
    constexpr int NT = decltype(tiles)::value;
    launch_chained(matmul_mma_kernel<F, kBf16, NT>, static_cast<unsigned>(blocks), kMmaWarps * 32, 0, stream, wp, rb,
                   w.n_out, n_steps, x, w.n_in, r, out, out_stride, acc);
  };
  if (rows <= 8) launch(std::integral_constant<int, 1>{});
  else if (rows <= 16) launch(std::integral_constant<int, 2>{});
  else if (rows <= 32) launch(std::integral_constant<int, 4>{});
  else launch(std::integral_constant<int, 8>{});
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status{};
}

}  // namespace saker::cuda::detail
