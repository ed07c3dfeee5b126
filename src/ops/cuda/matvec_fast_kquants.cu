// Fast decode kernels for the 256-element block formats (Q4_K, Q5_K, Q6_K, IQ4_XS); see matvec_fast.cuh.
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/matvec_fast.cuh"

namespace saker::cuda::detail {

Status launch_matvec_fast_kquants(const DeviceMatrix& w, const float* x, int64_t rows, float* out,
                                  int64_t out_stride, bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kQ4_K: return launch_fast_for<blocks::Fmt<DType::kQ4_K>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_K: return launch_fast_for<blocks::Fmt<DType::kQ5_K>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ6_K: return launch_fast_for<blocks::Fmt<DType::kQ6_K>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kIQ4_XS: return launch_fast_for<blocks::Fmt<DType::kIQ4_XS>>(w, x, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: not a 256-element block type");
  }
}

}  // namespace saker::cuda::detail
