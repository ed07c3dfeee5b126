// Tensor-core verify kernels for quantized weights (dequantised to f16 in shared memory); see matmul_mma.cuh.
#include "ops/cuda/matmul_mma.cuh"

namespace saker::cuda::detail {

Status launch_matmul_mma_quant(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                               bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kQ8_0: return launch_mma_for<blocks::Fmt<DType::kQ8_0>, false>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ4_0: return launch_mma_for<blocks::Fmt<DType::kQ4_0>, false>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kIQ4_XS: return launch_mma_for<blocks::Fmt<DType::kIQ4_XS>, false>(w, x, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: no mma kernel for this dtype");
  }
}

}  // namespace saker::cuda::detail
