#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/soft_cap.h"

namespace saker::cuda {
namespace {

__global__ void soft_cap_kernel(float* __restrict__ x, int64_t n, float cap, float inv_cap) {
  chain_in();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    x[i] = cap * tanhf(x[i] * inv_cap);
  }
}

}  // namespace

Status soft_cap(float* x, int64_t n, float cap, cudaStream_t stream) {
  if (n <= 0) return {};
  if (!(cap > 0.0f)) return make_error(StatusCode::kInvalidArgument, "soft_cap: cap must be positive");
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 4096);
  launch_chained(soft_cap_kernel, static_cast<unsigned>(blocks), 256, 0, stream, x, n, cap, 1.0f / cap);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
