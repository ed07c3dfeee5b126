// Gated units of the feed-forward block: out = act(gate) * up, elementwise, one thread per element of a
// grid-stride loop over [n_tokens, n] (gate/up rows may be halves of one fused gate|up row).
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/matmul.h"
#include "ops/cuda/norm_rope.h"

namespace saker::cuda {
namespace {

struct Silu {
  // g / (1 + e^-g): for very negative g, e^-g is inf and the quotient -0, the right limit.
  __device__ float operator()(float g) const { return g / (1.0f + expf(-g)); }
};
struct GeluTanh {
  __device__ float operator()(float g) const {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    return 0.5f * g * (1.0f + tanhf(kSqrt2OverPi * (g + 0.044715f * g * g * g)));
  }
};

// gate, up: [n_tokens, n] with row stride in_stride; out: [n_tokens, n] packed (may alias gate or up).
template <typename Act>
__global__ void gated_kernel(const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_tokens,
                             int64_t n) {
  chain_in();
  const int64_t total = n_tokens * n, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total; e += stride) {
    const int64_t t = e / n, i = e - t * n;
    out[e] = Act()(gate[t * in_stride + i]) * up[t * in_stride + i];
  }
}

// The gated unit that also writes the K-quant kernels' activation blocks of its output (the down projection's
// input): one warp per 256-element block, lane l on elements 8l .. 8l+7, the values quantised from registers
// (kq_quantize_values). Each value is the same expression as gated_kernel's, so `out` and the blocks carry the
// same bits as gated_kernel followed by the matmul's own quantisation, one launch fewer.
constexpr int kQuantWarps = 8;

template <typename Act>
__global__ void __launch_bounds__(kQuantWarps * 32)
    gated_quantized_kernel(const float* __restrict__ gate, const float* __restrict__ up, int64_t in_stride,
                           float* __restrict__ out, int64_t n, int64_t n_blk, int8_t* __restrict__ xq,
                           kq::KxBlock* __restrict__ kx) {
  chain_in();
  const int64_t blk = static_cast<int64_t>(blockIdx.x) * kQuantWarps + (threadIdx.x >> 5);
  if (blk >= n_blk) return;  // whole warp
  const int64_t row_blocks = n / kq::kBlock, t = blk / row_blocks, b = blk - t * row_blocks;
  const int lane = threadIdx.x & 31;
  const int64_t i0 = b * kq::kBlock + 8 * lane;
  const float* g = gate + t * in_stride + i0;
  const float* u = up + t * in_stride + i0;
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = Act()(g[i]) * u[i];
  float* o = out + t * n + i0;
#pragma unroll
  for (int i = 0; i < 8; ++i) o[i] = v[i];
  detail::kq_quantize_values(v, true, xq + t * n + b * kq::kBlock, kx + blk, lane);
}

template <typename Act>
Status launch_quantized(MatmulContext& ctx, const float* gate, const float* up, int64_t in_stride, float* out,
                        int64_t n_tokens, int64_t n, cudaStream_t stream, const char* name) {
  if (n_tokens <= 0 || n <= 0) return {};
  const detail::Q8Scratch q8 = detail::q8_scratch(ctx);
  if (!detail::q8_scratch_holds(q8, n_tokens, n)) {
    return make_error(StatusCode::kInvalidArgument, std::string(name) + ": shape outside the int8 scratch");
  }
  if (in_stride < n) return make_error(StatusCode::kInvalidArgument, std::string(name) + ": in_stride below n");
  // Warps read gate/up rows that others' writes would reach if out overlapped them.
  const auto lo = [](const float* p) { return reinterpret_cast<uintptr_t>(p); };
  const uintptr_t out_end = lo(out) + static_cast<uintptr_t>(n_tokens * n) * sizeof(float);
  const uintptr_t in_lo = std::min(lo(gate), lo(up));
  const uintptr_t in_end =
      std::max(lo(gate), lo(up)) + static_cast<uintptr_t>((n_tokens - 1) * in_stride + n) * sizeof(float);
  if (lo(out) < in_end && in_lo < out_end) {
    return make_error(StatusCode::kInvalidArgument, std::string(name) + ": out overlaps gate/up");
  }
  const int64_t n_blk = n_tokens * (n / kq::kBlock);
  if (n_blk > 0x7FFFFFFFLL * kQuantWarps) {
    return make_error(StatusCode::kInvalidArgument, std::string(name) + ": too many rows");
  }
  launch_chained(gated_quantized_kernel<Act>, static_cast<unsigned>((n_blk + kQuantWarps - 1) / kQuantWarps),
                 kQuantWarps * 32, 0, stream, gate, up, in_stride, out, n, n_blk, q8.xq,
                 reinterpret_cast<kq::KxBlock*>(q8.xs));
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

template <typename Act>
Status launch(const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_tokens, int64_t n,
              cudaStream_t stream, const char* name) {
  if (n_tokens <= 0 || n <= 0) return {};
  if (in_stride < n) return make_error(StatusCode::kInvalidArgument, std::string(name) + ": in_stride below n");
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((n_tokens * n + kThreads - 1) / kThreads, 132 * 32);
  launch_chained(gated_kernel<Act>, static_cast<unsigned>(blocks), kThreads, 0, stream, gate, up, in_stride, out,
                 n_tokens, n);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace

Status gated_quantized(MatmulContext& ctx, GatedKind kind, const float* gate, const float* up, int64_t in_stride,
                       float* out, int64_t n_tokens, int64_t n, cudaStream_t stream) {
  if (kind == GatedKind::kSilu) {
    return launch_quantized<Silu>(ctx, gate, up, in_stride, out, n_tokens, n, stream, "cuda swiglu_quantized");
  }
  return launch_quantized<GeluTanh>(ctx, gate, up, in_stride, out, n_tokens, n, stream, "cuda geglu_quantized");
}

Status swiglu(const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_tokens, int64_t n,
              cudaStream_t stream) {
  return launch<Silu>(gate, up, in_stride, out, n_tokens, n, stream, "cuda swiglu");
}

Status geglu_tanh(const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_tokens, int64_t n,
                  cudaStream_t stream) {
  return launch<GeluTanh>(gate, up, in_stride, out, n_tokens, n, stream, "cuda geglu_tanh");
}

}  // namespace saker::cuda
