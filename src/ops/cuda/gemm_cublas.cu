// Prefill matmuls (more token rows than the decode kernels take) through cuBLAS's GEMM (which runs cuBLASLt
// kernels underneath), and the MatmulContext that owns its handle and scratch.
//
//   F32 weights:       f32 GEMM, pedantic f32 compute (no TF32: f32 golden models need f32 accuracy)
//   F16 / BF16:        x converted to the weight's type in scratch, f32 accumulate and f32 output
//   quantized weights: dequantised to f16 in chunks of output rows, then the f16 GEMM per chunk
// Row-major out[rows, n_out] = x[rows, n_in] W^T is, in cuBLAS's column-major terms,
// out^T (n_out x rows, ld out_stride) = op_T(W as n_in x n_out, ld n_in) * (x^T as n_in x rows, ld n_in).
#include <cublas_v2.h>

#include <algorithm>
#include <string>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_canon.h"
#include "ops/cuda/matmul_internal.cuh"

namespace saker::cuda {
namespace {

constexpr int64_t kKernelRows = 64;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr size_t kWeightScratchBytes = size_t{128} << 20;  // f16 rows of dequantised weight per GEMM chunk

Status cublas_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return make_error(StatusCode::kInternal, std::string("cuBLAS error ") + cublasGetStatusString(s) + " in " + what);
}

class CudaMatmulContext final : public MatmulContext {
 public:
  ~CudaMatmulContext() override {
    if (handle_) cublasDestroy(handle_);
    cudaFree(workspace_);
    cudaFree(x_scratch_);
    cudaFree(w_scratch_);
    cudaFree(q8_.xq);
    cudaFree(q8_.xs);
    cudaFree(x16_.x);
  }
  detail::Q8Scratch q8_scratch() const { return q8_; }
  detail::X16Scratch x16_scratch() const { return x16_; }
  int64_t max_kernel_rows() const override { return kKernelRows; }
  const MatmulOptions& options() const override { return options_; }
  bool has_library() const { return handle_ != nullptr; }

  Status init(int64_t max_rows, int64_t max_n_in, int64_t max_n_out, const MatmulOptions& options) {
    options_ = options;
    max_rows_ = max_rows;
    max_n_in_ = max_n_in;
    // int8 activations of the dp4a decode path: codes plus a (scale, sum) per 32 elements.
    // At least kQ8MaxRows rows whatever max_rows is: the kernels read every row of their row tile (zeroed
    // here, so rows past the call's count hold finite values; their results are discarded).
    q8_.rows = std::max(std::min(max_rows, kKernelRows), detail::kQ8MaxRows);
    q8_.n_in = max_n_in;
    const size_t xq_bytes = static_cast<size_t>(q8_.rows * max_n_in);
    // The same area holds the width-invariant kernel's KxBlocks (one per 256 elements, a row's last partial).
    const size_t xs_bytes = static_cast<size_t>(q8_.rows) *
                            std::max(static_cast<size_t>((max_n_in + 31) / 32) * sizeof(q8::XBlock),
                                     static_cast<size_t>((max_n_in + kq::kBlock - 1) / kq::kBlock) * sizeof(kq::KxBlock));
    SAKER_CUDA_RETURN_IF_ERROR(cudaMalloc(&q8_.xq, xq_bytes));
    SAKER_CUDA_RETURN_IF_ERROR(cudaMalloc(&q8_.xs, xs_bytes));
    SAKER_CUDA_RETURN_IF_ERROR(cudaMemset(q8_.xq, 0, xq_bytes));
    SAKER_CUDA_RETURN_IF_ERROR(cudaMemset(q8_.xs, 0, xs_bytes));
    // The memsets run on the default stream, which the callers' non-blocking streams do not wait for.
    SAKER_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    // f16 / bf16 activations of the width-invariant float kernel and of the f16 K-quant kernel (any context may
    // take the latter under SAKER_CUDA_MATMUL=kqf16, so every context has them).
    x16_.rows = std::min(max_rows, kKernelRows);
    x16_.n_in = max_n_in;
    SAKER_CUDA_RETURN_IF_ERROR(cudaMalloc(&x16_.x, static_cast<size_t>(x16_.rows * max_n_in) * 2));
    if (max_rows <= kKernelRows) return {};  // decode-only context: no library handle, no scratch
    SAKER_RETURN_IF_ERROR(cublas_status(cublasCreate(&handle_), "cublasCreate"));
    SAKER_CUDA_RETURN_IF_ERROR(cudaMalloc(&workspace_, kWorkspaceBytes));
    SAKER_RETURN_IF_ERROR(cublas_status(cublasSetWorkspace(handle_, workspace_, kWorkspaceBytes), "cublasSetWorkspace"));
    SAKER_RETURN_IF_ERROR(cublas_status(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode"));
    SAKER_CUDA_RETURN_IF_ERROR(cudaMalloc(&x_scratch_, static_cast<size_t>(max_rows * max_n_in) * 2));
    // Chunks are whole multiples of 128 rows where the scratch allows, so every chunk's output pointer
    // (out + o) keeps cuBLAS's 16-byte alignment and tile-friendly m.
    const int64_t fit = static_cast<int64_t>(kWeightScratchBytes / 2) / max_n_in;
    w_chunk_rows_ = std::max<int64_t>(1, std::min<int64_t>(max_n_out, fit >= 128 ? fit / 128 * 128 : fit));
    SAKER_CUDA_RETURN_IF_ERROR(cudaMalloc(&w_scratch_, static_cast<size_t>(w_chunk_rows_ * max_n_in) * 2));
    return {};
  }

  Status gemm(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride, bool accumulate,
              cudaStream_t stream) {
    if (!handle_) return make_error(StatusCode::kInvalidArgument, "cuda matmul: context made for decode rows only");
    if (rows > max_rows_ || w.n_in > max_n_in_) {
      return make_error(StatusCode::kInvalidArgument, "cuda matmul: rows or n_in beyond the context's maximum");
    }
    if (rows > 0x7FFFFFFF || w.n_out > 0x7FFFFFFF || out_stride > 0x7FFFFFFF) {
      return make_error(StatusCode::kInvalidArgument, "cuda matmul: GEMM dimension beyond int32");
    }
    SAKER_RETURN_IF_ERROR(cublas_status(cublasSetStream(handle_, stream), "cublasSetStream"));
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    const int k = static_cast<int>(w.n_in), n = static_cast<int>(rows), ldc = static_cast<int>(out_stride);
    if (w.type == DType::kF32) {
      return cublas_status(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.n_out), n, k, &alpha,
                                        w.data, CUDA_R_32F, k, x, CUDA_R_32F, k, &beta, out, CUDA_R_32F, ldc,
                                        CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT),
                           "f32 GEMM");
    }
    const bool bf16 = w.type == DType::kBF16;
    const cudaDataType_t ab = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    SAKER_RETURN_IF_ERROR(detail::launch_convert_f32(x, rows * w.n_in, bf16 ? DType::kBF16 : DType::kF16, x_scratch_, stream));
    if (w.type == DType::kF16 || bf16) {
      return cublas_status(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.n_out), n, k, &alpha,
                                        w.data, ab, k, x_scratch_, ab, k, &beta, out, CUDA_R_32F, ldc,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                           "f16/bf16 GEMM");
    }
    // Equal chunks (multiples of 128 rows), e.g. 12288 rows in three of 4096 rather than 5376 + 5376 + 1536.
    const int64_t n_chunks = (w.n_out + w_chunk_rows_ - 1) / w_chunk_rows_;
    int64_t chunk = (w.n_out + n_chunks - 1) / n_chunks;
    if (w_chunk_rows_ >= 128) chunk = std::min(w_chunk_rows_, (chunk + 127) / 128 * 128);
    for (int64_t o = 0; o < w.n_out; o += chunk) {
      const int64_t m = std::min(chunk, w.n_out - o);
      SAKER_RETURN_IF_ERROR(detail::launch_dequantize_f16(w, o, m, w_scratch_, stream));
      SAKER_RETURN_IF_ERROR(cublas_status(
          cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), n, k, &alpha, w_scratch_, CUDA_R_16F,
                       k, x_scratch_, CUDA_R_16F, k, &beta, out + o, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          "dequantised f16 GEMM"));
    }
    return {};
  }

 private:
  MatmulOptions options_;
  int64_t max_rows_ = 0, max_n_in_ = 0, w_chunk_rows_ = 0;
  cublasHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  void* x_scratch_ = nullptr;   // [max_rows, max_n_in] f16 or bf16: activations in the GEMM's input type
  __half* w_scratch_ = nullptr;  // [w_chunk_rows, max_n_in] f16: a chunk of dequantised weight rows
  detail::Q8Scratch q8_;        // int8 activations for the dp4a decode kernels
  detail::X16Scratch x16_;      // f16 / bf16 activations for the width-invariant float kernel
};

}  // namespace

Result<std::unique_ptr<MatmulContext>> MatmulContext::create(int64_t max_rows, int64_t max_n_in, int64_t max_n_out,
                                                             const MatmulOptions& options) {
  if (max_rows < 1 || max_n_in < 1 || max_n_out < 1) {
    return make_error(StatusCode::kInvalidArgument, "cuda matmul: context sizes must be positive");
  }
  auto ctx = std::make_unique<CudaMatmulContext>();
  SAKER_RETURN_IF_ERROR(ctx->init(max_rows, max_n_in, max_n_out, options));
  return std::unique_ptr<MatmulContext>(std::move(ctx));
}

namespace detail {

bool gemm_available(const MatmulContext& ctx) { return static_cast<const CudaMatmulContext&>(ctx).has_library(); }

Status gemm_prefill(MatmulContext& ctx, const DeviceMatrix& w, const float* x, int64_t rows, float* out,
                    int64_t out_stride, bool accumulate, cudaStream_t stream) {
  return static_cast<CudaMatmulContext&>(ctx).gemm(w, x, rows, out, out_stride, accumulate, stream);
}

Q8Scratch q8_scratch(MatmulContext& ctx) { return static_cast<CudaMatmulContext&>(ctx).q8_scratch(); }
X16Scratch x16_scratch(MatmulContext& ctx) { return static_cast<CudaMatmulContext&>(ctx).x16_scratch(); }

}  // namespace detail
}  // namespace saker::cuda
