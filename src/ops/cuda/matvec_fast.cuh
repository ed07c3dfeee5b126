#pragma once
// The decode / verify kernel (1-64 token rows, FMA on CUDA cores), templated on the weight format.
//
// One warp owns NR consecutive output rows; its lanes walk the rows' 32-element units (lane k
// decodes units k, k + 32, ...), so the eight lanes on one 256-element block read it with contiguous
// 16-byte loads (see dequant_blocks.h). The token rows are processed in tiles of R (a template parameter,
// so the accumulators acc[NR][R] stay in registers); tiles after the first re-read the warp's
// weight rows, which the first tile has just brought into L1/L2, so DRAM sees each weight byte once.
// x is read through the read-only path with float4 loads: one x row (<= 48 KiB f32) is shared by every
// block on an SM and stays cache resident. Sums are reduced across the warp with shuffles, and lane 0
// writes (or adds to) the output.
#include <type_traits>

#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/matmul_internal.cuh"

namespace saker::cuda::detail {

inline constexpr int kFastWarps = 4;     // warps per block
// Output rows per warp: two share each x load for small tiles; the 8-row tile keeps one so v[][] and the
// x registers fit without spills.
template <int R>
inline constexpr int kRowsPerWarp = R >= 8 ? 1 : 2;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
  return v;
}

template <class F, int R, int NR = kRowsPerWarp<R>>
__global__ void __launch_bounds__(kFastWarps * 32)
    matvec_fast_kernel(const uint8_t* __restrict__ w,  // [n_out, row_bytes] weight rows, GGUF blocks
                       int64_t row_bytes, int64_t n_out,
                       int n_units,                    // 32-element units per row (n_in / 32)
                       const float* __restrict__ x,    // [rows, n_in] f32
                       int64_t n_in, int64_t rows,
                       float* __restrict__ out,        // [rows, out_stride] f32
                       int64_t out_stride, int accumulate) {
  const int lane = threadIdx.x & 31;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kFastWarps * NR;  // the block's first output row
  const int64_t o0 = first + (threadIdx.x >> 5) * NR;
  // Ask L2 for the block's weight rows up front, before waiting for the kernel before this one
  // (chained_launch.cuh). The unit loop below is a chain of dependent load -> FMA iterations per lane; with
  // the rows already on their way to L2 only its first iteration waits for DRAM.
  prefetch_weights_l2(w, row_bytes, first, kFastWarps * NR, n_out);
  chain_in();
  if (o0 >= n_out) return;  // whole warp leaves together
  const uint8_t* wrow[NR];
#pragma unroll
  for (int n = 0; n < NR; ++n) {
    // Rows past n_out re-read the last row (results discarded) so the inner loop has no branches.
    wrow[n] = w + (o0 + n < n_out ? o0 + n : n_out - 1) * row_bytes;
  }
  for (int64_t t0 = 0; t0 < rows; t0 += R) {
    const int nt = rows - t0 < R ? static_cast<int>(rows - t0) : R;
    const float* xt = x + t0 * n_in;
    float acc[NR][R];
#pragma unroll
    for (int n = 0; n < NR; ++n) {
#pragma unroll
      for (int t = 0; t < R; ++t) acc[n][t] = 0.0f;
    }
    for (int u = lane; u < n_units; u += 32) {
      const int b = u / F::kUnits, uu = u % F::kUnits;
      float v[NR][32];
#pragma unroll
      for (int n = 0; n < NR; ++n) F::decode_unit(wrow[n] + static_cast<int64_t>(b) * F::kBlockBytes, uu, v[n]);
      const float* xb = xt + static_cast<int64_t>(b) * F::kBlockElems;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int e = F::run_start(uu, r);
#pragma unroll
        for (int t = 0; t < R; ++t) {
          if (t < nt) {
            const float4 a = __ldg(reinterpret_cast<const float4*>(xb + t * n_in + e));
            const float4 c = __ldg(reinterpret_cast<const float4*>(xb + t * n_in + e + 4));
#pragma unroll
            for (int n = 0; n < NR; ++n) {
              const float* vv = v[n] + 8 * r;
              float s = acc[n][t];
              s = fmaf(vv[0], a.x, s);
              s = fmaf(vv[1], a.y, s);
              s = fmaf(vv[2], a.z, s);
              s = fmaf(vv[3], a.w, s);
              s = fmaf(vv[4], c.x, s);
              s = fmaf(vv[5], c.y, s);
              s = fmaf(vv[6], c.z, s);
              s = fmaf(vv[7], c.w, s);
              acc[n][t] = s;
            }
          }
        }
      }
    }
#pragma unroll
    for (int n = 0; n < NR; ++n) {
#pragma unroll
      for (int t = 0; t < R; ++t) {
        const float s = warp_sum(acc[n][t]);
        if (lane == 0 && t < nt && o0 + n < n_out) {
          float* o = out + (t0 + t) * out_stride + o0 + n;
          *o = accumulate ? *o + s : s;
        }
      }
    }
  }
}

// Launches the kernel for format F with the smallest row tile that covers `rows` (tiles of 8 beyond).
template <class F>
Status launch_fast_for(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                       bool accumulate, cudaStream_t stream) {
  const auto* wp = static_cast<const uint8_t*>(w.data);
  const int64_t rb = matrix_row_bytes(w);
  const int n_units = static_cast<int>(w.n_in / 32);
  const int acc = accumulate ? 1 : 0;
  auto launch = [&](auto tile) -> Status {
    constexpr int R = decltype(tile)::value;
    const int64_t rows_per_block = static_cast<int64_t>(kFastWarps) * kRowsPerWarp<R>;
    const int64_t blocks = (w.n_out + rows_per_block - 1) / rows_per_block;
    if (blocks > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: n_out too large");
    launch_chained(matvec_fast_kernel<F, R>, static_cast<unsigned>(blocks), kFastWarps * 32, 0, stream, wp, rb, w.n_out,
                   n_units, x, w.n_in, rows, out, out_stride, acc);
    SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status{};
  };
  if (rows == 1) return launch(std::integral_constant<int, 1>{});
  if (rows == 2) return launch(std::integral_constant<int, 2>{});
  if (rows <= 4) return launch(std::integral_constant<int, 4>{});
  return launch(std::integral_constant<int, 8>{});
}

}  // namespace saker::cuda::detail
