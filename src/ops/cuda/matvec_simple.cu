// The reference CUDA matmul kernel (any dtype, any n_in, any row count) and the element-wise passes of the
// prefill path: quantized weights dequantised to f16, activations converted to f16/bf16.
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/matmul_internal.cuh"

namespace saker::cuda::detail {
namespace {

constexpr int kSimpleThreads = 128;

// One block per (output row o, token row t): threads stride over the row's units (block types) or
// elements (plain floats), then a shared-memory tree sum. Deliberately plain: it is the oracle the fast
// kernels are bisected against (SAKER_CUDA_MATMUL=simple).
template <class F>
__global__ void __launch_bounds__(kSimpleThreads)
    matvec_simple_kernel(const uint8_t* __restrict__ w,  // [n_out, row_bytes]
                         int64_t row_bytes, DType type,
                         const float* __restrict__ x,    // [rows, n_in] f32
                         int64_t n_in,
                         float* __restrict__ out,        // [rows, out_stride] f32
                         int64_t out_stride, int accumulate) {
  chain_in();
  const int64_t o = blockIdx.x;
  const int64_t t = blockIdx.y;
  const uint8_t* row = w + o * row_bytes;
  const float* xt = x + t * n_in;
  float sum = 0.0f;
  if (type == DType::kF32 || type == DType::kF16 || type == DType::kBF16) {
    for (int64_t i = threadIdx.x; i < n_in; i += kSimpleThreads) sum += blocks::float_element(type, row, i) * xt[i];
  } else {
    const int64_t n_units = n_in / 32;
    for (int64_t u = threadIdx.x; u < n_units; u += kSimpleThreads) {
      const int64_t b = u / F::kUnits;
      const int uu = static_cast<int>(u % F::kUnits);
      float v[32];
      F::decode_unit(row + b * F::kBlockBytes, uu, v);
      for (int r = 0; r < 4; ++r) {
        const int64_t e = b * F::kBlockElems + F::run_start(uu, r);
        for (int j = 0; j < 8; ++j) sum += v[8 * r + j] * xt[e + j];
      }
    }
  }
  __shared__ float partial[kSimpleThreads];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = kSimpleThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float* dst = out + t * out_stride + o;
    *dst = accumulate ? *dst + partial[0] : partial[0];
  }
}

// One thread per 32-element unit: grid.x covers a row's units, grid.y strides over rows (no 64-bit division
// per thread). The 32 decoded values leave as four 16-byte stores, one per 8-element run (runs start at
// multiples of 8 elements and rows are whole 32-element units, so every store is aligned).
template <class F>
__global__ void __launch_bounds__(128)
    dequantize_f16_kernel(const uint8_t* __restrict__ w,  // [n_out, row_bytes], rows from row0
                          int64_t row_bytes, int64_t n_in, int64_t n_rows,
                          __half* __restrict__ dst) {  // [n_rows, n_in] f16
  chain_in();
  const int64_t n_units = n_in / 32;
  const int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (u >= n_units) return;
  const int64_t b = u / F::kUnits;
  const int uu = static_cast<int>(u % F::kUnits);
  for (int64_t r = blockIdx.y; r < n_rows; r += gridDim.y) {
    float v[32];
    F::decode_unit(w + r * row_bytes + b * F::kBlockBytes, uu, v);
    __half* d = dst + r * n_in + b * F::kBlockElems;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint4 pk;
      __half2 h;
      h = __floats2half2_rn(v[8 * q + 0], v[8 * q + 1]);
      pk.x = *reinterpret_cast<const uint32_t*>(&h);
      h = __floats2half2_rn(v[8 * q + 2], v[8 * q + 3]);
      pk.y = *reinterpret_cast<const uint32_t*>(&h);
      h = __floats2half2_rn(v[8 * q + 4], v[8 * q + 5]);
      pk.z = *reinterpret_cast<const uint32_t*>(&h);
      h = __floats2half2_rn(v[8 * q + 6], v[8 * q + 7]);
      pk.w = *reinterpret_cast<const uint32_t*>(&h);
      *reinterpret_cast<uint4*>(d + F::run_start(uu, q)) = pk;
    }
  }
}

__global__ void convert_f16_kernel(const float* __restrict__ src, int64_t n, __half* __restrict__ dst) {
  chain_in();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = __float2half_rn(src[i]);
  }
}
__global__ void convert_bf16_kernel(const float* __restrict__ src, int64_t n, __nv_bfloat16* __restrict__ dst) {
  chain_in();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = __float2bfloat16_rn(src[i]);
  }
}

unsigned grid_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 16 ? 65535 * 16 : b));
}

}  // namespace

Status launch_matvec_simple(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                            bool accumulate, cudaStream_t stream) {
  if (w.n_out > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: n_out too large");
  Status st;
  const int64_t rb = matrix_row_bytes(w);
  // Token rows go in grid.y (at most 65535 per launch): launch in chunks.
  for (int64_t t0 = 0; t0 < rows && st.ok(); t0 += 65535) {
    const int64_t nt = rows - t0 < 65535 ? rows - t0 : 65535;
    const dim3 grid(static_cast<unsigned>(w.n_out), static_cast<unsigned>(nt));
    const bool known = visit_dtype(w.type, [&](auto fmt) {
      using F = decltype(fmt);
      launch_chained(matvec_simple_kernel<F>, grid, kSimpleThreads, 0, stream, static_cast<const uint8_t*>(w.data), rb,
                     w.type, x + t0 * w.n_in, w.n_in, out + t0 * out_stride, out_stride, accumulate ? 1 : 0);
    });
    if (!known) return make_error(StatusCode::kUnsupported, "cuda matmul: weight dtype not supported");
    SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  return st;
}

Status launch_dequantize_f16(const DeviceMatrix& w, int64_t row0, int64_t n_rows, __half* dst, cudaStream_t stream) {
  if (is_float_type(w.type) || w.n_in % 32 != 0) {
    return make_error(StatusCode::kInvalidArgument, "cuda matmul: dequantize_f16 takes block-quantized weights");
  }
  const int64_t rb = matrix_row_bytes(w);
  const auto* src = static_cast<const uint8_t*>(w.data) + row0 * rb;
  if (n_rows <= 0) return {};
  constexpr int kThreads = 128;
  const int64_t gx = (w.n_in / 32 + kThreads - 1) / kThreads;
  if (gx > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: n_in too large");
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(n_rows < 65535 ? n_rows : 65535));
  const bool known = visit_dtype(w.type, [&](auto fmt) {
    using F = decltype(fmt);
    launch_chained(dequantize_f16_kernel<F>, grid, kThreads, 0, stream, src, rb, w.n_in, n_rows, dst);
  });
  if (!known) return make_error(StatusCode::kUnsupported, "cuda matmul: weight dtype not supported");
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

Status launch_convert_f32(const float* src, int64_t n, DType to, void* dst, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const unsigned grid = grid_for(n, kThreads);
  if (to == DType::kF16) {
    launch_chained(convert_f16_kernel, grid, kThreads, 0, stream, src, n, static_cast<__half*>(dst));
  } else if (to == DType::kBF16) {
    launch_chained(convert_bf16_kernel, grid, kThreads, 0, stream, src, n, static_cast<__nv_bfloat16*>(dst));
  } else {
    return make_error(StatusCode::kInvalidArgument, "cuda matmul: convert_f32 targets f16 or bf16");
  }
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda::detail
