// The public CUDA matmul entry points: weight upload (stacking parts along n_out), dtype support, and the
// choice of path by row count: decode kernels up to max_kernel_rows(), cuBLAS GEMM beyond.
// SAKER_CUDA_MATMUL=simple (core/env.h) forces the reference kernel for every row count, to bisect;
// SAKER_CUDA_MATMUL=fma keeps verify widths on the FMA kernels instead of the tensor-core kernel, and decode
// rows of Q4_K / Q5_K / Q6_K on the f32-activation FMA kernels instead of the int8-activation dp4a kernels;
// SAKER_CUDA_MATMUL=legacy keeps rows off the width-invariant kernels (the previous dispatch: K-quants on dp4a
// up to 8 rows, the f16 tensor-core kernel up to 31, cuBLAS from 32), to compare. F16 / BF16 weights take their
// width-invariant kernel, and Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / IQ4_XS weights the int8 one, only in
// contexts made with MatmulOptions::invariant (their default kernels measured faster); Q4_K / Q6_K weights take the f16
// tensor-core kernel in contexts made with MatmulOptions::kq_f16, or in every context under
// SAKER_CUDA_MATMUL=kqf16 (kqf16k2, kqf16k1: with 2 or 1 K streams an m-tile instead of 4).
#include <string>

#include "core/env.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/float_mma_layout.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/matmul_internal.cuh"

namespace saker::cuda {

namespace detail {
Status launch_matvec_fast_float(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                                bool accumulate, cudaStream_t stream);
Status launch_matvec_fast_quant(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                                bool accumulate, cudaStream_t stream);
Status launch_matvec_fast_kquants(const DeviceMatrix& w, const float* x, int64_t rows, float* out,
                                  int64_t out_stride, bool accumulate, cudaStream_t stream);
Status launch_matmul_mma_float(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                               bool accumulate, cudaStream_t stream);
Status launch_matmul_mma_quant(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                               bool accumulate, cudaStream_t stream);
Status launch_matmul_mma_kquants(const DeviceMatrix& w, const float* x, int64_t rows, float* out,
                                 int64_t out_stride, bool accumulate, cudaStream_t stream);

bool matmul_mma_supported(const DeviceMatrix& w, const float* x, int64_t rows) {
  switch (w.type) {
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS: break;
    default: return false;
  }
  return rows >= kMmaMinRows && rows <= 64 && w.n_in % 256 == 0 && w.n_in / 256 <= 0x7FFFFFFF &&
         matvec_fast_supported(w, x);
}

Status launch_matmul_mma(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                         bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kF16:
    case DType::kBF16: return launch_matmul_mma_float(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return launch_matmul_mma_kquants(w, x, rows, out, out_stride, accumulate, stream);
    default: return launch_matmul_mma_quant(w, x, rows, out, out_stride, accumulate, stream);
  }
}

bool matvec_fast_supported(const DeviceMatrix& w, const float* x) {
  if ((reinterpret_cast<uintptr_t>(x) & 15) != 0 || (reinterpret_cast<uintptr_t>(w.data) & 15) != 0) return false;
  if (w.layout != 0 || w.n_in <= 0 || w.n_in > (int64_t{1} << 30)) return false;
  bool ok = false;
  visit_dtype(w.type, [&](auto fmt) {
    using F = decltype(fmt);
    // Whole blocks per row; vector loads need 16-byte aligned rows where the format uses them. The other
    // formats read at most 8-byte fields that their block sizes keep aligned (IQ4_XS 136, Q8_0 34 bytes).
    ok = w.n_in % F::kBlockElems == 0 && (!F::kAligned16 || matrix_row_bytes(w) % 16 == 0);
  });
  return ok;
}

Status launch_matvec_fast(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                          bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return launch_matvec_fast_float(w, x, rows, out, out_stride, accumulate, stream);
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS: return launch_matvec_fast_kquants(w, x, rows, out, out_stride, accumulate, stream);
    default: return launch_matvec_fast_quant(w, x, rows, out, out_stride, accumulate, stream);
  }
}

}  // namespace detail

namespace {

bool force_simple() {
  static const bool simple = cuda_matmul_is("simple");
  return simple;
}

// SAKER_CUDA_MATMUL=fma: decode/verify rows take the FMA kernels only (no tensor-core verify kernel).
bool force_fma() {
  static const bool fma = cuda_matmul_is("fma");
  return fma;
}

// SAKER_CUDA_MATMUL=legacy: the K-quant dispatch before the width-invariant kernel.
bool force_legacy() {
  static const bool legacy = cuda_matmul_is("legacy");
  return legacy;
}

// SAKER_CUDA_MATMUL=kqf16 | kqf16k2 | kqf16k1: Q4_K / Q6_K rows on the f16 tensor-core kernel in every context, with 4
// (the kernel's default), 2 or 1 K streams an m-tile (to compare; each is its own summation order). 0: not forced.
int forced_kq_f16_streams() {
  static const int streams = cuda_matmul_is("kqf16")     ? 4
                             : cuda_matmul_is("kqf16k2") ? 2
                             : cuda_matmul_is("kqf16k1") ? 1
                                                         : 0;
  return streams;
}
constexpr int kKqF16Streams = 4;  // the K streams of MatmulOptions::kq_f16

// The width-invariant kernels (K-quant, and F16 / BF16 where the context asks for them) unless a SAKER_CUDA_MATMUL
// mode asks for the older paths.
bool invariant_kernels_on() { return !force_simple() && !force_fma() && !force_legacy(); }

// Whether the f16 Q4_K / Q6_K kernel takes this call (and its scratch fits).
bool kq_f16_takes(MatmulContext& ctx, const DeviceMatrix& w, int64_t rows) {
  if (!invariant_kernels_on() || !(ctx.options().kq_f16 || forced_kq_f16_streams() > 0)) return false;
  const detail::X16Scratch x16 = detail::x16_scratch(ctx);
  return detail::matmul_kq_f16_supported(w, rows, x16.rows, x16.n_in);
}

}  // namespace

bool matmul_supports(DType type) {
  return detail::visit_dtype(type, [](auto) {});
}

bool matmul_width_invariant(DType type, int64_t n_in, const MatmulOptions& options) {
  if (!invariant_kernels_on()) return false;
  if (type == DType::kF16 || type == DType::kBF16) return options.invariant && float_mma::n_in_supported(n_in);
  if (detail::kq_kernel_kquant(type)) return n_in % kq::kBlock == 0;
  return options.invariant && detail::kq_kernel_takes_type(type, n_in);
}

Result<DeviceMatrix> upload_matrix(std::span<const TensorView> parts) {
  if (parts.empty()) return make_error(StatusCode::kInvalidArgument, "cuda upload_matrix: no parts");
  const DType type = parts[0].dtype;
  if (!matmul_supports(type)) {
    return make_error(StatusCode::kUnsupported, std::string("cuda upload_matrix: dtype ") +
                                                    std::string(dtype_name(type)) + " not supported");
  }
  const int64_t n_in = parts[0].dim(-1);
  int64_t n_out = 0;
  for (const TensorView& p : parts) {
    if (p.dtype != type || p.n_dims != 2 || p.dim(-1) != n_in || p.device != Device::kCpu || !p.data) {
      return make_error(StatusCode::kInvalidArgument,
                        "cuda upload_matrix: parts must be host 2-D tensors of one dtype and one n_in, got " +
                            p.shape_string());
    }
    n_out += p.dim(0);
  }
  const std::optional<uint64_t> rb = row_bytes(type, n_in);
  if (!rb || n_in <= 0 || n_out <= 0) {
    return make_error(StatusCode::kInvalidArgument, "cuda upload_matrix: n_in is not a whole number of blocks");
  }
  DeviceMatrix m;
  m.type = type;
  m.n_out = n_out;
  m.n_in = n_in;
  m.bytes = static_cast<size_t>(*rb) * static_cast<size_t>(n_out);
  // Slack past the last row: decoders of 2-byte-aligned formats (Q8_0, Q6_K) read whole aligned words, which may
  // reach up to 3 bytes past a block's end, and the int8 width-invariant kernel stages a row's partial last group
  // of 32-element blocks as a whole one (up to 288 bytes from a 16-byte boundary; the extra bytes are never used).
  constexpr size_t kSlack = 512;
  SAKER_CUDA_RETURN_IF_ERROR(cudaMalloc(&m.data, m.bytes + kSlack));
  if (const cudaError_t e = cudaMemset(static_cast<uint8_t*>(m.data) + m.bytes, 0, kSlack); e != cudaSuccess) {
    cudaFree(m.data);  // defined bytes, so a memory checker's initcheck stays quiet about staged slack
    SAKER_CUDA_RETURN_IF_ERROR(e);
  }
  auto* dst = static_cast<uint8_t*>(m.data);
  for (const TensorView& p : parts) {
    const size_t src_pitch = static_cast<size_t>(p.stride_bytes[0]);
    const cudaError_t e = cudaMemcpy2D(dst, *rb, p.data, src_pitch, *rb, static_cast<size_t>(p.dim(0)),
                                       cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      cudaFree(m.data);
      SAKER_CUDA_RETURN_IF_ERROR(e);
    }
    dst += *rb * static_cast<uint64_t>(p.dim(0));
  }
  // A copy from pageable memory may return before its DMA lands, on the default stream, which the backends'
  // non-blocking streams do not wait for: the weights are complete before anything can read them.
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    cudaFree(m.data);
    SAKER_CUDA_RETURN_IF_ERROR(e);
  }
  return m;
}

void free_matrix(DeviceMatrix* m) {
  if (m == nullptr) return;
  cudaFree(m->data);
  *m = DeviceMatrix{};
}

// Measured on the H200 (saker bench, Qwen3-8B geometry, whole decode steps in CUDA graphs): cuBLAS's
// f16/bf16 GEMV/GEMM with the activations rounded to the weight's type beats the hand-written kernels on
// F16/BF16 weights at every decode and verify width (tg128 148.6 -> 174.4 tok/s, 64 rows 7.6x -> 2.4x one
// row). For Q4_K_M, dequantising to f16 and calling it loses to the tensor-core kernel at 16 rows (20.5 vs
// 13.0 ms a step), ties at 32 and wins at 64 (25.7 vs 44.4 ms). Both library paths are capture-safe: the
// handle has a fixed workspace and the scratch is preallocated.
bool library_beats_kernels(const DeviceMatrix& w, int64_t rows) {
  if (w.type == DType::kF16 || w.type == DType::kBF16) return true;
  return w.type != DType::kF32 && rows >= 32;
}

namespace {
// Whether the int8 width-invariant kernel takes this call: K-quants in every context, the other formats it
// computes where the context asks for invariance.
bool kq_takes(MatmulContext& ctx, const DeviceMatrix& w, const float* x, int64_t rows) {
  if (!invariant_kernels_on() || rows > ctx.max_kernel_rows() || rows > detail::kKqMaxRows) return false;
  if (!detail::kq_kernel_kquant(w.type) && !ctx.options().invariant) return false;
  if (kq_f16_takes(ctx, w, rows)) return false;
  const detail::Q8Scratch q8 = detail::q8_scratch(ctx);
  return detail::matmul_kq_supported(w, x, rows, q8.rows, q8.n_in);
}

// The fused producer (rms_norm_quantized) writes whole 256-element blocks only.
bool whole_blocks(const DeviceMatrix& w) { return w.n_in % kq::kBlock == 0; }
}  // namespace

bool matmul_quantizes_input(MatmulContext& ctx, const DeviceMatrix& w, const float* x, int64_t rows) {
  return kq_takes(ctx, w, x, rows) && whole_blocks(w);
}

Status matmul(MatmulContext& ctx, const DeviceMatrix& w, const float* x, int64_t rows, float* out,
              int64_t out_stride, bool accumulate, cudaStream_t stream, bool x_quantized) {
  if (rows <= 0) return {};
  if (!w.data || !x || !out) return make_error(StatusCode::kInvalidArgument, "cuda matmul: null pointer");
  if (out_stride < w.n_out) return make_error(StatusCode::kInvalidArgument, "cuda matmul: out_stride < n_out");
  if (w.layout != 0) return make_error(StatusCode::kInvalidArgument, "cuda matmul: unknown weight layout");
  if (force_simple()) return detail::launch_matvec_simple(w, x, rows, out, out_stride, accumulate, stream);
  if (rows <= ctx.max_kernel_rows()) {
    if (kq_f16_takes(ctx, w, rows)) {
      const int streams = forced_kq_f16_streams() > 0 ? forced_kq_f16_streams() : kKqF16Streams;
      return detail::launch_matmul_kq_f16(w, x, rows, out, out_stride, accumulate, detail::x16_scratch(ctx).x, streams,
                                          stream);
    }
    if (kq_takes(ctx, w, x, rows)) {
      const detail::Q8Scratch q8 = detail::q8_scratch(ctx);
      if (x_quantized && whole_blocks(w)) {  // matmul_quantizes_input held for the producer
        return detail::launch_kq_quantized(w, q8.xq, reinterpret_cast<const kq::KxBlock*>(q8.xs), rows, out,
                                           out_stride, accumulate, stream);
      }
      return detail::launch_matmul_kq(w, x, rows, out, out_stride, accumulate, q8.xq, q8.xs, stream);
    }
    if (ctx.options().invariant && invariant_kernels_on()) {
      const detail::X16Scratch x16 = detail::x16_scratch(ctx);
      if (detail::matmul_float_wi_supported(w, rows, x16.rows, x16.n_in)) {
        return detail::launch_matmul_float_wi(w, x, rows, out, out_stride, accumulate, x16.x, stream);
      }
    }
    if (!force_fma() && library_beats_kernels(w, rows) && detail::gemm_available(ctx)) {
      return detail::gemm_prefill(ctx, w, x, rows, out, out_stride, accumulate, stream);
    }
    if (!force_fma() && rows <= detail::kQ8MaxRows) {
      const detail::Q8Scratch q8 = detail::q8_scratch(ctx);
      if (detail::matvec_q8_supported(w, x, rows, q8.rows, q8.n_in)) {
        return detail::launch_matvec_q8(w, x, rows, out, out_stride, accumulate, q8.xq, q8.xs, stream);
      }
    }
    if (!force_fma() && detail::matmul_mma_supported(w, x, rows)) {
      return detail::launch_matmul_mma(w, x, rows, out, out_stride, accumulate, stream);
    }
    if (detail::matvec_fast_supported(w, x)) {
      return detail::launch_matvec_fast(w, x, rows, out, out_stride, accumulate, stream);
    }
    return detail::launch_matvec_simple(w, x, rows, out, out_stride, accumulate, stream);
  }
  return detail::gemm_prefill(ctx, w, x, rows, out, out_stride, accumulate, stream);
}

}  // namespace saker::cuda
