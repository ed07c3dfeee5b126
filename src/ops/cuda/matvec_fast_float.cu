// Fast decode kernels for plain float weights (F32, F16, BF16); see matvec_fast.cuh.
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/matvec_fast.cuh"

namespace saker::cuda::detail {

Status launch_matvec_fast_float(const DeviceMatrix& w, const float* x, int64_t rows, float* out,
                                int64_t out_stride, bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kF32: return launch_fast_for<blocks::Fmt<DType::kF32>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kF16: return launch_fast_for<blocks::Fmt<DType::kF16>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kBF16: return launch_fast_for<blocks::Fmt<DType::kBF16>>(w, x, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: not a float weight type");
  }
}

}  // namespace saker::cuda::detail
