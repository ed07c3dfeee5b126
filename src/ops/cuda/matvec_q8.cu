// Decode path (1-8 token rows) for Q4_K, Q5_K and Q6_K weights with int8 activations (q8_dot.h):
//   1. quantize_x_q8: x [rows, n_in] f32 -> int8 codes + per-32-element (scale, sum) in the context's scratch;
//   2. matvec_q8_kernel: one warp per output row (two from 4 rows on); lane k takes units k, k + 32, ... of the
//      row (eight 16-byte Q4_K code runs per 256-element block, so a warp's weight loads are contiguous),
//      unpacks the codes into int32 words and dots them with the int8 x by __dp4a; R activation rows share
//      each weight load, and a warp's two output rows share each x load.
// x costs 1 byte per element instead of 4 from L1, which bounded the f32 FMA kernels well below DRAM speed.
#include <type_traits>

#include "core/env.h"

#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/matmul_internal.cuh"
#include "ops/cuda/q8_dot.h"

namespace saker::cuda::detail {
namespace {

constexpr int kQ8Warps = 4;  // warps (output rows) per block

// One warp per 32-element block of x; 8 warps per thread block.
__global__ void __launch_bounds__(256)
    quantize_x_q8_kernel(const float* __restrict__ x, int64_t n_total, int8_t* __restrict__ xq,
                         q8::XBlock* __restrict__ xs) {
  chain_in();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  const float v = i < n_total ? x[i] : 0.0f;
  float amax = fabsf(v);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
  const float d = amax / 127.0f;
  const int8_t q = q8::quantize_value(v, d);
  int qsum = q;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) qsum += __shfl_xor_sync(0xFFFFFFFFu, qsum, off);
  if (i < n_total) {
    xq[i] = q;
    if ((threadIdx.x & 31) == 0) xs[i / 32] = q8::XBlock{d, d * static_cast<float>(qsum)};
  }
}

template <DType T>
struct Q8Fmt;
template <>
struct Q8Fmt<DType::kQ4_K> {
  static constexpr int kBlockBytes = 144;
  __device__ __forceinline__ static q8::Q4KUnit load(const uint8_t* blk, int u) { return q8::q4k_load(blk, u); }
  __device__ __forceinline__ static q8::Q4KX xload(const int8_t* xb, const q8::XBlock* xs, int u) {
    return q8::q4k_xload(xb, xs, u);
  }
  __device__ __forceinline__ static float dot(const q8::Q4KUnit& w, const q8::Q4KX& x) { return q8::q4k_dot(w, x); }
};
template <>
struct Q8Fmt<DType::kQ5_K> : Q8Fmt<DType::kQ4_K> {
  static constexpr int kBlockBytes = 176;
  __device__ __forceinline__ static q8::Q4KUnit load(const uint8_t* blk, int u) { return q8::q5k_load(blk, u); }
};
template <>
struct Q8Fmt<DType::kQ6_K> {
  static constexpr int kBlockBytes = 210;
  __device__ __forceinline__ static q8::Q6KUnit load(const uint8_t* blk, int u) { return q8::q6k_load(blk, u); }
  __device__ __forceinline__ static q8::Q6KX xload(const int8_t* xb, const q8::XBlock* xs, int u) {
    return q8::q6k_xload(xb, xs, u);
  }
  __device__ __forceinline__ static float dot(const q8::Q6KUnit& w, const q8::Q6KX& x) { return q8::q6k_dot(w, x); }
};

// One warp per NO consecutive output rows, R activation rows. Each lane walks units lane, lane + 32, ...:
// for each unit it loads the NO weight units and, per activation row, the x side once, dotted with all NO.
// NO > 1 is for R >= 4: there the x loads (48 bytes of L1 per unit and row against 18 bytes of weights from
// DRAM) would bound one output row per warp by L1 bandwidth. Each output's sum runs over the same units in
// the same order for every R and NO, so a row's result does not depend on how many rows share the call.
template <DType T, int R, int NO>
__global__ void __launch_bounds__(kQ8Warps * 32)
    matvec_q8_kernel(const uint8_t* __restrict__ w,  // [n_out, row_bytes] GGUF blocks
                     int64_t row_bytes, int64_t n_out,
                     int n_units,                    // 8 units per 256-element block
                     const int8_t* __restrict__ xq,  // [rows, n_in] int8 codes
                     const q8::XBlock* __restrict__ xs,  // [rows, n_in / 32]
                     int64_t n_in, int rows,
                     float* __restrict__ out, int64_t out_stride, int accumulate) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kQ8Warps * NO;  // the block's first output row
  prefetch_weights_l2(w, row_bytes, first, kQ8Warps * NO, n_out);
  chain_in();
  using F = Q8Fmt<T>;
  using WUnit = decltype(F::load(w, 0));
  const int lane = threadIdx.x & 31;
  const int64_t o0 = first + (threadIdx.x >> 5) * NO;
  if (o0 >= n_out) return;  // whole warp leaves together
  // A last warp past n_out re-reads row n_out - 1 for its missing rows and writes none of them.
  const uint8_t* wrow[NO];
#pragma unroll
  for (int j = 0; j < NO; ++j) wrow[j] = w + (o0 + j < n_out ? o0 + j : n_out - 1) * row_bytes;
  const int64_t n_xb = n_in / 32;
  float acc[NO][R];
#pragma unroll
  for (int j = 0; j < NO; ++j) {
#pragma unroll
    for (int t = 0; t < R; ++t) acc[j][t] = 0.0f;
  }
  // All R activation rows are computed without a check against `rows`: the scratch holds at least
  // kQ8MaxRows rows (zeroed at creation), and results of rows >= `rows` are never written. A guard here would
  // keep the compiler from hoisting the x loads.
  // Batches of U units per lane whose loads are all issued before any of their arithmetic (every unit of a
  // batch is in range, so there is no branch between the loads), then the remaining units one at a time.
  constexpr int U = NO > 1 ? 1 : (R <= 2 ? 4 : 2);
  auto step = [&](const WUnit (&wu)[NO], int uk) {
    const int64_t b = uk >> 3;
#pragma unroll
    for (int t = 0; t < R; ++t) {
      const auto xu = F::xload(xq + t * n_in + b * 256, xs + t * n_xb + b * 8, uk & 7);
#pragma unroll
      for (int j = 0; j < NO; ++j) acc[j][t] += F::dot(wu[j], xu);
    }
  };
  int u = lane;
  for (; u + 32 * (U - 1) < n_units; u += 32 * U) {
    WUnit wu[U][NO];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const int uk = u + 32 * k;
#pragma unroll
      for (int j = 0; j < NO; ++j) wu[k][j] = F::load(wrow[j] + static_cast<int64_t>(uk >> 3) * F::kBlockBytes, uk & 7);
    }
#pragma unroll
    for (int k = 0; k < U; ++k) step(wu[k], u + 32 * k);
  }
  for (; u < n_units; u += 32) {
    WUnit wu[NO];
#pragma unroll
    for (int j = 0; j < NO; ++j) wu[j] = F::load(wrow[j] + static_cast<int64_t>(u >> 3) * F::kBlockBytes, u & 7);
    step(wu, u);
  }
#pragma unroll
  for (int j = 0; j < NO; ++j) {
#pragma unroll
    for (int t = 0; t < R; ++t) {
      float s = acc[j][t];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, off);
      if (lane == 0 && t < rows && o0 + j < n_out) {
        float* p = out + t * out_stride + o0 + j;
        *p = accumulate ? *p + s : s;
      }
    }
  }
}

// SAKER_CUDA_MATMUL=q8narrow: one output row per warp at every row count (to measure what NO > 1 buys).
bool q8_narrow() {
  static const bool narrow = cuda_matmul_is("q8narrow");
  return narrow;
}

template <DType T>
Status launch_for(const DeviceMatrix& w, const int8_t* xq, const q8::XBlock* xs, int64_t rows, float* out,
                  int64_t out_stride, bool accumulate, cudaStream_t stream) {
  const auto* wp = static_cast<const uint8_t*>(w.data);
  const int64_t rb = matrix_row_bytes(w);
  const int n_units = static_cast<int>(w.n_in / 256 * 8);
  auto launch = [&](auto tile, auto outputs_per_warp) -> Status {
    constexpr int R = decltype(tile)::value, NO = decltype(outputs_per_warp)::value;
    const int64_t rows_per_block = int64_t{kQ8Warps} * NO;
    const int64_t blocks = (w.n_out + rows_per_block - 1) / rows_per_block;
    if (blocks > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: n_out too large");
    launch_chained(matvec_q8_kernel<T, R, NO>, static_cast<unsigned>(blocks), kQ8Warps * 32, 0, stream, wp, rb, w.n_out,
                   n_units, xq, xs, w.n_in, static_cast<int>(rows), out, out_stride, accumulate ? 1 : 0);
    SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status{};
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  if (rows == 1) return launch(One{}, One{});
  if (rows == 2) return launch(Two{}, One{});
  if (q8_narrow()) {
    if (rows <= 4) return launch(std::integral_constant<int, 4>{}, One{});
    return launch(std::integral_constant<int, 8>{}, One{});
  }
  if (rows <= 4) return launch(std::integral_constant<int, 4>{}, Two{});
  return launch(std::integral_constant<int, 8>{}, Two{});
}

}  // namespace

bool matvec_q8_supported(const DeviceMatrix& w, const float* x, int64_t rows, int64_t scratch_rows,
                         int64_t scratch_n_in) {
  if (w.type != DType::kQ4_K && w.type != DType::kQ5_K && w.type != DType::kQ6_K) return false;
  if (rows < 1 || rows > kQ8MaxRows || rows > scratch_rows || w.n_in > scratch_n_in) return false;
  if (w.n_in % 256 != 0 || w.n_in / 256 * 8 > 0x7FFFFFFF) return false;
  if (w.type != DType::kQ6_K && (reinterpret_cast<uintptr_t>(w.data) & 15) != 0) return false;
  if (w.type == DType::kQ6_K && (reinterpret_cast<uintptr_t>(w.data) & 1) != 0) return false;
  // x aligned as the FMA kernels want it: a misaligned x still takes the simple (reference) kernel.
  return w.layout == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0;
}

Status launch_matvec_q8(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                        bool accumulate, int8_t* xq, q8::XBlock* xs, cudaStream_t stream) {
  const int64_t n_total = rows * w.n_in;  // a multiple of 256
  launch_chained(quantize_x_q8_kernel, static_cast<unsigned>(n_total / 256), 256, 0, stream, x, n_total, xq, xs);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  switch (w.type) {
    case DType::kQ4_K: return launch_for<DType::kQ4_K>(w, xq, xs, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_K: return launch_for<DType::kQ5_K>(w, xq, xs, rows, out, out_stride, accumulate, stream);
    case DType::kQ6_K: return launch_for<DType::kQ6_K>(w, xq, xs, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: no int8-activation kernel for this dtype");
  }
}

}  // namespace saker::cuda::detail
