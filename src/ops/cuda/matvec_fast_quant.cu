// Fast decode kernels for the 32-element block formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL); see
// matvec_fast.cuh.
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/matvec_fast.cuh"

namespace saker::cuda::detail {

Status launch_matvec_fast_quant(const DeviceMatrix& w, const float* x, int64_t rows, float* out,
                                int64_t out_stride, bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kQ8_0: return launch_fast_for<blocks::Fmt<DType::kQ8_0>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ4_0: return launch_fast_for<blocks::Fmt<DType::kQ4_0>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ4_1: return launch_fast_for<blocks::Fmt<DType::kQ4_1>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_0: return launch_fast_for<blocks::Fmt<DType::kQ5_0>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_1: return launch_fast_for<blocks::Fmt<DType::kQ5_1>>(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kIQ4_NL: return launch_fast_for<blocks::Fmt<DType::kIQ4_NL>>(w, x, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: not a 32-element block type");
  }
}

}  // namespace saker::cuda::detail
