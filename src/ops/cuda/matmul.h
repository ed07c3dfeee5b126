#pragma once
// Weight-times-activation on the GPU for every weight dtype saker loads, plus the weight upload and the
// embedding lookup that share its device weight layout.
//
//   out[t, o] (+)= sum_i x[t, i] * W[o, i]      x, out f32 on the device; W in its stored (quantized) form
//
// Decode and speculative verify (1-64 rows) run hand-written kernels that read each weight byte once per
// call; wider batches (prefill) go through cuBLASLt, dequantising quantized weights into a scratch buffer
// first. Which path runs is decided here, by the row count, so callers never choose.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace saker::cuda {

// A weight matrix [n_out, n_in] resident on the device. Several host tensors of one dtype can be stacked
// along n_out into one matrix (q|k|v, gate|up) so one launch reads them all.
struct DeviceMatrix {
  DType type = DType::kF32;
  int64_t n_out = 0;
  int64_t n_in = 0;
  void* data = nullptr;  // owned; layout private to the matmul kernels (GGUF rows, or repacked)
  size_t bytes = 0;
  int32_t layout = 0;    // 0: GGUF row-major blocks as on disk; other values name a repacked layout
};

// The dtypes the CUDA matmul and embedding accept.
bool matmul_supports(DType type);

// Choices of a MatmulContext. invariant: width-invariant kernels at 1-64 rows for the weights whose default
// kernels are not: F16 / BF16 on the float tensor-core kernel (matmul_float_wi.cu) instead of cuBLAS, which picks
// its algorithm, and so its rounding, by shape; Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / IQ4_XS on the int8
// kernel of kq_canon.h instead of the FMA / f16 tensor-core / cuBLAS paths chosen by width. Slower decode.
//
// kq_f16: Q4_K / Q6_K weights of 1-64 rows on the f16 tensor-core kernel (matmul_kq_f16.cu: weights dequantised
// to f16, activations rounded to f16) instead of the int8 kernels of kq_canon.h; also width-invariant, with other
// bits.
// Opt-in until measured faster (SAKER_CUDA_MATMUL=kqf16 turns it on for every context).
struct MatmulOptions {
  bool invariant = false;
  bool kq_f16 = false;
};

// Whether matmul() of 1-64 rows gives each row the same bits whatever the row count: the K-quant kernels'
// canonical order (Q4_K / Q5_K / Q6_K rows of whole 256-element blocks), and with invariant the F16 /
// BF16 tensor-core kernel (n_in a multiple of 128) and the int8 kernel for Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 /
// IQ4_NL (n_in a multiple of 32) and IQ4_XS (of 256). Other weights take kernels whose rounding depends on the
// width, so a speculative verify row can part from plain decoding at a near-tie. False under
// SAKER_CUDA_MATMUL=simple|fma|legacy.
bool matmul_width_invariant(DType type, int64_t n_in, const MatmulOptions& options = {});

// Uploads host tensors [n_out_i, n_in] (same dtype, same n_in) stacked along n_out; synchronous.
Result<DeviceMatrix> upload_matrix(std::span<const TensorView> parts);
void free_matrix(DeviceMatrix* m);

// Scratch and library handles of the matmul paths, one per stream. max_rows bounds `rows` in matmul();
// the scratch for dequantised weights is sized for the largest matrix registered with reserve().
class MatmulContext {
 public:
  static Result<std::unique_ptr<MatmulContext>> create(int64_t max_rows, int64_t max_n_in, int64_t max_n_out,
                                                       const MatmulOptions& options = {});
  virtual ~MatmulContext() = default;
  // Rows at or under this count take the custom kernels (graph-capturable, no library calls).
  virtual int64_t max_kernel_rows() const = 0;
  virtual const MatmulOptions& options() const = 0;
};

// x: [rows, w.n_in] f32 (row stride n_in); out: [rows, w.n_out] f32 (row stride out_stride, >= n_out).
// accumulate: out += W x (residual fused into the epilogue) instead of out = W x.
// x_quantized: x's int8 blocks are already in ctx (rms_norm_quantized wrote them, and nothing has run on ctx
// since but matmuls of the same x): the width-invariant K-quant path skips its own quantisation. Other
// paths read x as always.
Status matmul(MatmulContext& ctx, const DeviceMatrix& w, const float* x, int64_t rows, float* out,
              int64_t out_stride, bool accumulate, cudaStream_t stream, bool x_quantized = false);

// Whether matmul() of these rows takes the width-invariant K-quant path, whose input quantisation a
// producer can do instead (rms_norm_quantized).
bool matmul_quantizes_input(MatmulContext& ctx, const DeviceMatrix& w, const float* x, int64_t rows);

// cuda::rms_norm (no add_one) of rows [rows, n] into out, which also leaves out's int8 blocks in ctx for
// matmul(..., x_quantized = true): the same bits as the matmul's own quantisation, one launch fewer.
// n must be a multiple of 256 and rows within ctx's int8 scratch (matmul_quantizes_input held).
Status rms_norm_quantized(MatmulContext& ctx, const float* x, const float* w, float* out, int64_t rows, int64_t n,
                          float eps, cudaStream_t stream);

// The gated unit feeding a matmul: out [n_tokens, n] = act(gate) * up (gate, up rows of in_stride, as
// cuda::swiglu / cuda::geglu_tanh compute it, same bits; out must not overlap them), which also leaves out's
// int8 blocks in ctx for matmul(..., x_quantized = true), as rms_norm_quantized does. n must be a multiple of
// 256 and n_tokens within ctx's int8 scratch (matmul_quantizes_input held).
enum class GatedKind { kSilu, kGeluTanh };
Status gated_quantized(MatmulContext& ctx, GatedKind kind, const float* gate, const float* up, int64_t in_stride,
                       float* out, int64_t n_tokens, int64_t n, cudaStream_t stream);

// out[t, :] = table[tokens[t], :] dequantised to f32 (scale multiplies every element, e.g. sqrt(n_embd)
// for Gemma). tokens: device int32 [n]; out: device f32 [n, table.n_in].
Status embedding(const DeviceMatrix& table, const int32_t* tokens, int64_t n, float scale, float* out,
                 cudaStream_t stream);

}  // namespace saker::cuda
