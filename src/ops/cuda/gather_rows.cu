#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/gather_rows.h"

namespace saker::cuda {
namespace {

// One block per output row; rows are n floats (n_embd), so a block-stride loop over float4 when aligned.
__global__ void gather_rows_kernel(const float* __restrict__ x, const int32_t* __restrict__ rows, int64_t n,
                                   float* __restrict__ out) {
  chain_in();
  const int64_t r = rows[blockIdx.x];
  const float* src = x + r * n;
  float* dst = out + static_cast<int64_t>(blockIdx.x) * n;
  if ((n & 3) == 0) {
    const auto* s4 = reinterpret_cast<const float4*>(src);
    auto* d4 = reinterpret_cast<float4*>(dst);
    for (int64_t i = threadIdx.x; i < n / 4; i += blockDim.x) d4[i] = s4[i];
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
  }
}

}  // namespace

Status gather_rows(const float* x, const int32_t* rows, int64_t n_rows, int64_t n, float* out, cudaStream_t stream) {
  if (n_rows <= 0 || n <= 0) return {};
  if (n_rows > 2147483647LL) return make_error(StatusCode::kInvalidArgument, "gather_rows: too many rows");
  launch_chained(gather_rows_kernel, static_cast<unsigned>(n_rows), 256, 0, stream, x, rows, n, out);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
