// RMSNorm over rows: one block per row. The row is read twice (sum of squares, then the scaled write);
// the second read hits L1/L2 for the row sizes of a decoder (<= 8192 floats = 32 KB).
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/matmul.h"
#include "ops/cuda/norm_rope.h"
#include "ops/cuda/reduce.cuh"

namespace saker::cuda {
namespace {

using detail::kq_quantize_warp;

// x, out: [rows, n] f32 (may alias); w: [n] f32 or null (no weight). kQuant: then each warp quantises 256-element
// blocks of the written row for the width-invariant K-quant matmul (xq [rows, n], kx [rows, n / 256]).
template <bool kVec4, bool kQuant = false>
__global__ void rms_norm_kernel(const float* x, const float* __restrict__ w, float* out, int64_t n, float eps,
                                bool add_one, int8_t* __restrict__ xq = nullptr, kq::KxBlock* __restrict__ kx = nullptr) {
  chain_in();
  __shared__ float scratch[32];
  const float* xr = x + blockIdx.x * n;
  float* yr = out + blockIdx.x * n;
  float ss = 0.0f;
  if constexpr (kVec4) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    for (int64_t i = threadIdx.x; i < n / 4; i += blockDim.x) {
      const float4 v = x4[i];
      ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
  }
  const float inv = rsqrtf(block_sum(ss, scratch) / static_cast<float>(n) + eps);
  const float bias = add_one ? 1.0f : 0.0f;
  if constexpr (kVec4) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* y4 = reinterpret_cast<float4*>(yr);
    for (int64_t i = threadIdx.x; i < n / 4; i += blockDim.x) {
      const float4 v = x4[i];
      const float4 g = w ? w4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const float b = w ? bias : 1.0f;
      y4[i] = make_float4(v.x * inv * (g.x + b), v.y * inv * (g.y + b), v.z * inv * (g.z + b), v.w * inv * (g.w + b));
    }
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = xr[i] * inv * (w ? w[i] + bias : 1.0f);
  }
  if constexpr (kQuant) {
    __syncthreads();  // the row's values are written (and visible to the block) before any warp reads them
    const int64_t n_blk = n / kq::kBlock;
    for (int64_t b = threadIdx.x >> 5; b < n_blk; b += blockDim.x >> 5) {
      kq_quantize_warp(yr + b * kq::kBlock, xq + blockIdx.x * n + b * kq::kBlock, kx + blockIdx.x * n_blk + b,
                       threadIdx.x & 31);
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

Status rms_norm(const float* x, const float* w, float* out, int64_t rows, int64_t n, float eps, bool add_one,
                cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return {};
  if (rows > INT32_MAX) return make_error(StatusCode::kInvalidArgument, "cuda rms_norm: too many rows");
  if (!(eps >= 0.0f)) return make_error(StatusCode::kInvalidArgument, "cuda rms_norm: eps must be >= 0");
  const bool vec = n % 4 == 0 && aligned16(x) && aligned16(out) && (w == nullptr || aligned16(w));
  // Enough threads that each holds a few float4s of an 8192-wide row; fewer for short rows.
  const int threads = n >= 4096 ? 1024 : n >= 1024 ? 256 : 128;
  if (vec) {
    launch_chained(rms_norm_kernel<true>, static_cast<unsigned>(rows), threads, 0, stream, x, w, out, n, eps, add_one,
                   nullptr, nullptr);
  } else {
    launch_chained(rms_norm_kernel<false>, static_cast<unsigned>(rows), threads, 0, stream, x, w, out, n, eps, add_one,
                   nullptr, nullptr);
  }
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

Status rms_norm_quantized(MatmulContext& ctx, const float* x, const float* w, float* out, int64_t rows, int64_t n,
                          float eps, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return {};
  const detail::Q8Scratch q8 = detail::q8_scratch(ctx);
  if (!detail::q8_scratch_holds(q8, rows, n)) {
    return make_error(StatusCode::kInvalidArgument, "cuda rms_norm_quantized: shape outside the int8 scratch");
  }
  if (!(eps >= 0.0f)) return make_error(StatusCode::kInvalidArgument, "cuda rms_norm: eps must be >= 0");
  // The launch shape and the sum of squares exactly as rms_norm's, so `out` gets the same bits.
  const bool vec = aligned16(x) && aligned16(out) && (w == nullptr || aligned16(w));
  const int threads = n >= 4096 ? 1024 : n >= 1024 ? 256 : 128;
  auto* kx = reinterpret_cast<kq::KxBlock*>(q8.xs);
  if (vec) {
    launch_chained(rms_norm_kernel<true, true>, static_cast<unsigned>(rows), threads, 0, stream, x, w, out, n, eps,
                   false, q8.xq, kx);
  } else {
    launch_chained(rms_norm_kernel<false, true>, static_cast<unsigned>(rows), threads, 0, stream, x, w, out, n, eps,
                   false, q8.xq, kx);
  }
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
