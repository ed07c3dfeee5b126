#pragma once
// Pieces shared by the CUDA matmul files: the kernel launchers each family exports to the dispatcher.
// Every launcher is asynchronous on `stream`; the decode launchers do nothing but launch kernels, so they
// are safe inside CUDA graph capture.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "ops/cuda/dequant_blocks.h"
#include "ops/cuda/kq_canon.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda/q8_dot.h"

namespace saker::cuda::detail {

// The dtype visitor is blocks::visit_dtype (dequant_blocks.h), shared with the CPU tests of the decoders.
using blocks::visit_dtype;

inline bool is_float_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// Bytes of one stored row of w (GGUF layout, layout == 0).
inline int64_t matrix_row_bytes(const DeviceMatrix& w) {
  return static_cast<int64_t>(w.bytes / static_cast<size_t>(w.n_out));
}

// The reference kernel: one block per (output row, token row), any n_in, every dtype. Slow and obvious.
Status launch_matvec_simple(const DeviceMatrix& w,
                            const float* x,  // [rows, n_in] f32
                            int64_t rows,
                            float* out,      // [rows, out_stride] f32
                            int64_t out_stride, bool accumulate, cudaStream_t stream);

// Whether the fast decode kernel takes this matrix and activation pointer (whole 256/32-element blocks,
// aligned rows and x); when not, the dispatcher uses the simple kernel.
bool matvec_fast_supported(const DeviceMatrix& w, const float* x);
Status launch_matvec_fast(const DeviceMatrix& w,
                          const float* x,  // [rows, n_in] f32, 16-byte aligned
                          int64_t rows,    // 1 .. 64 (any count works; tiles of 8)
                          float* out,      // [rows, out_stride] f32
                          int64_t out_stride, bool accumulate, cudaStream_t stream);

// The tensor-core kernel for verify widths (kMmaMinRows .. 64 rows; matmul_mma.cuh): F16, BF16, Q8_0, Q4_0,
// Q4_K, Q5_K, Q6_K and IQ4_XS weights with n_in a multiple of 256 and the fast kernel's alignment. It rounds
// x and the weights to f16 (bf16 for BF16), so it matches the reference to the prefill tolerance.
inline constexpr int64_t kMmaMinRows = 2;
bool matmul_mma_supported(const DeviceMatrix& w, const float* x, int64_t rows);
Status launch_matmul_mma(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                         bool accumulate, cudaStream_t stream);

// The int8-activation decode path (matvec_q8.cu) for Q4_K / Q5_K / Q6_K at 1 .. kQ8MaxRows rows: x is quantised to
// int8 codes xq [rows, n_in] and per-32-element blocks xs [rows, n_in / 32] (the context's scratch, sized for
// scratch_rows x scratch_n_in), then dotted with the weights by __dp4a. Matches the reference to the int8
// rounding of x (NMSE ~1e-5), not to f32 accuracy. Launches only: graph-capture safe.
inline constexpr int64_t kQ8MaxRows = 8;
bool matvec_q8_supported(const DeviceMatrix& w, const float* x, int64_t rows, int64_t scratch_rows,
                         int64_t scratch_n_in);
Status launch_matvec_q8(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                        bool accumulate, int8_t* xq, q8::XBlock* xs, cudaStream_t stream);

// The width-invariant K-quant kernel (matmul_kq_mma.cu) for Q4_K / Q5_K / Q6_K at 1 .. kKqMaxRows rows (and
// for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS where the dispatcher's context asks for invariance): x is
// quantised to int8 codes per 256-element block with per-32 shifts (kq_canon.h) into the context's int8
// scratch (xq, and kx_scratch for the KxBlocks, which the XBlock area holds), then multiplied on int8 tensor
// cores in the canonical order: a row's output bits never depend on how many rows share the call.
inline constexpr int64_t kKqMaxRows = 64;
bool kq_kernel_kquant(DType type);                     // Q4_K / Q5_K / Q6_K (also the dp4a kernel's)
bool kq_kernel_takes_type(DType type, int64_t n_in);  // any dtype and n_in the kernel computes
bool matmul_kq_supported(const DeviceMatrix& w, const float* x, int64_t rows, int64_t scratch_rows,
                         int64_t scratch_n_in);
Status launch_matmul_kq(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                        bool accumulate, int8_t* xq, void* kx_scratch, cudaStream_t stream);

// The width-invariant F16 / BF16 kernel (matmul_float_wi.cu) for 1 .. 64 rows with n_in a multiple of 128:
// activations rounded to the weight's type (in registers, or into x16 scratch of [rows, n_in] 16-bit values
// by one conversion launch), f32 accumulation in a fixed order, so a row's bits never depend on how many rows
// share the call. Launches only: graph-capture safe.
bool matmul_float_wi_supported(const DeviceMatrix& w, int64_t rows, int64_t scratch_rows, int64_t scratch_n_in);
Status launch_matmul_float_wi(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                              bool accumulate, void* x16, cudaStream_t stream);

// The Q4_K kernel on f16 tensor cores (matmul_kq_f16.cu) for 1 .. kKqF16MaxRows rows with n_in a multiple of
// 256: weights dequantised to f16 in registers, activations rounded to f16 (in registers at up to 8 aligned
// rows, else into x16 scratch of [rows, n_in] by one conversion launch), f32 accumulation in a fixed order, so a
// row's bits never depend on how many rows share the call. Launches only: graph-capture safe.
inline constexpr int64_t kKqF16MaxRows = 64;
bool matmul_kq_f16_supported(const DeviceMatrix& w, int64_t rows, int64_t scratch_rows, int64_t scratch_n_in);
// k_streams (1, 2, 4): K streams an m-tile of 16 rows, which fixes the summation order (one value per matrix).
Status launch_matmul_kq_f16(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                            bool accumulate, void* x16, int k_streams, cudaStream_t stream);

// Rows [row0, row0 + n_rows) of a quantized w dequantised to f16: dst [n_rows, n_in].
Status launch_dequantize_f16(const DeviceMatrix& w, int64_t row0, int64_t n_rows, __half* dst, cudaStream_t stream);
// f32 -> f16 (to == kF16) or bf16 (to == kBF16), n elements.
Status launch_convert_f32(const float* src, int64_t n, DType to, void* dst, cudaStream_t stream);

}  // namespace saker::cuda::detail

namespace saker::cuda::detail {

// Prefill (rows > max_kernel_rows()) through cuBLAS; ctx is the MatmulContext made by MatmulContext::create.
// True when the context holds a cuBLAS handle and scratch (made for more than decode rows).
bool gemm_available(const MatmulContext& ctx);
Status gemm_prefill(MatmulContext& ctx, const DeviceMatrix& w,
                    const float* x,  // [rows, n_in] f32
                    int64_t rows,
                    float* out,      // [rows, out_stride] f32
                    int64_t out_stride, bool accumulate, cudaStream_t stream);

// The context's int8-activation scratch (allocated by create() for min(max_rows, 64) x max_n_in).
struct Q8Scratch {
  int8_t* xq = nullptr;
  q8::XBlock* xs = nullptr;
  int64_t rows = 0, n_in = 0;
};
Q8Scratch q8_scratch(MatmulContext& ctx);
// Whether a producer that writes the K-quant kernels' activation blocks (rows x n, whole 256-element blocks)
// fits the scratch: the check of every such producer (the fused norm, the gated unit, the attention's combine).
inline bool q8_scratch_holds(const Q8Scratch& q8, int64_t rows, int64_t n) {
  return n % kq::kBlock == 0 && rows <= q8.rows && n <= q8.n_in;
}

// The context's f16 / bf16 activation scratch (min(max_rows, 64) x max_n_in 16-bit values).
struct X16Scratch {
  void* x = nullptr;
  int64_t rows = 0, n_in = 0;
};
X16Scratch x16_scratch(MatmulContext& ctx);

}  // namespace saker::cuda::detail
