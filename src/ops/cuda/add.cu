#include "ops/cuda/add.h"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"

namespace saker::cuda {
namespace {

// Vectorised by float4 where the pointers allow it; a grid-stride loop covers any n.
__global__ void add_f32_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                               int64_t n) {
  chain_in();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t n4 = n / 4;
  const auto* a4 = reinterpret_cast<const float4*>(a);
  const auto* b4 = reinterpret_cast<const float4*>(b);
  auto* o4 = reinterpret_cast<float4*>(out);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    const float4 x = a4[i], y = b4[i];
    o4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  for (int64_t i = n4 * 4 + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    out[i] = a[i] + b[i];
  }
}

// One block row per grid.y index (strided over rows), threads over the columns: each bias element is read
// once per block and reused for every row the block covers.
__global__ void add_row_bias_kernel(float* __restrict__ x, const float* __restrict__ bias, int64_t rows, int64_t cols,
                                    int64_t stride) {
  chain_in();
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  const float b = bias[c];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) x[r * stride + c] += b;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

Status add_f32(const float* a, const float* b, float* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  if (!aligned16(a) || !aligned16(b) || !aligned16(out)) {
    return make_error(StatusCode::kInvalidArgument, "cuda add_f32: pointers must be 16-byte aligned");
  }
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((n / 4 + kThreads - 1) / kThreads + 1, 65535);
  launch_chained(add_f32_kernel, static_cast<unsigned>(blocks), kThreads, 0, stream, a, b, out, n);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

Status add_row_bias(float* x, const float* bias, int64_t rows, int64_t cols, int64_t stride, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return {};
  if (stride < cols) {
    return make_error(StatusCode::kInvalidArgument, "cuda add_row_bias: row stride is smaller than the row");
  }
  constexpr int kThreads = 256;
  const int64_t col_blocks = (cols + kThreads - 1) / kThreads;
  if (col_blocks > 0x7fffffff) return make_error(StatusCode::kInvalidArgument, "cuda add_row_bias: rows too long");
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  launch_chained(add_row_bias_kernel, grid, kThreads, 0, stream, x, bias, rows, cols, stride);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
