// Row-wise argmax for greedy sampling: one block per row; NaN skipped, ties to the lowest index, -1 for a
// row without a comparable entry (like ref::argmax).
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/norm_rope.h"

namespace saker::cuda {
namespace {

// (value, index) of the better candidate: larger value, then lower index; index -1 means none.
__device__ __forceinline__ void better(float& v, int32_t& i, float v2, int32_t i2) {
  if (i2 < 0) return;
  if (i < 0 || v2 > v || (v2 == v && i2 < i)) {
    v = v2;
    i = i2;
  }
}

// x: [rows, n] f32; idx: [rows] int32.
__global__ void argmax_kernel(const float* __restrict__ x, int64_t n, int32_t* __restrict__ idx) {
  chain_in();
  __shared__ float sv[32];
  __shared__ int32_t si[32];
  const float* xr = x + blockIdx.x * n;
  float v = 0.0f;
  int32_t i = -1;
  // Each thread walks its indices upwards, so a strict > keeps its own first maximum.
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float y = xr[j];
    if (!isnan(y) && (i < 0 || y > v)) {
      v = y;
      i = static_cast<int32_t>(j);
    }
  }
  for (int o = 16; o > 0; o >>= 1) better(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sv[warp] = v;
    si[warp] = i;
  }
  __syncthreads();
  if (warp == 0) {
    v = 0.0f;
    i = -1;
    if (lane < static_cast<int>(blockDim.x >> 5)) {
      v = sv[lane];
      i = si[lane];
    }
    for (int o = 16; o > 0; o >>= 1) better(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
    if (lane == 0) idx[blockIdx.x] = i;
  }
}

}  // namespace

Status argmax_rows(const float* x, int64_t rows, int64_t n, int32_t* idx, cudaStream_t stream) {
  if (rows <= 0) return {};
  if (n > INT32_MAX || rows > INT32_MAX) {
    return make_error(StatusCode::kOutOfRange, "cuda argmax_rows: too many columns or rows for int32");
  }
  launch_chained(argmax_kernel, static_cast<unsigned>(rows), 1024, 0, stream, x, n, idx);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
