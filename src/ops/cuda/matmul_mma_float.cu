// Tensor-core verify kernels for F16 and BF16 weights; see matmul_mma.cuh.
#include "ops/cuda/matmul_mma.cuh"

namespace saker::cuda::detail {

Status launch_matmul_mma_float(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                               bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kF16: return launch_mma_for<blocks::Fmt<DType::kF16>, false>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kBF16: return launch_mma_for<blocks::Fmt<DType::kBF16>, true>(w, x, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: no mma kernel for this dtype");
  }
}

}  // namespace saker::cuda::detail
