// Tensor-core verify kernels for Q4_K, Q5_K and Q6_K weights (dequantised to f16 in shared memory); see
// matmul_mma.cuh.
#include "ops/cuda/matmul_mma.cuh"

namespace saker::cuda::detail {

Status launch_matmul_mma_kquants(const DeviceMatrix& w, const float* x, int64_t rows, float* out,
                                 int64_t out_stride, bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kQ4_K: return launch_mma_for<blocks::Fmt<DType::kQ4_K>, false>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_K: return launch_mma_for<blocks::Fmt<DType::kQ5_K>, false>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ6_K: return launch_mma_for<blocks::Fmt<DType::kQ6_K>, false>(w, x, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: no mma kernel for this dtype");
  }
}

}  // namespace saker::cuda::detail
