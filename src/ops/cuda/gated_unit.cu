// Gated units of the feed-forward block: out = act(gate) * up, elementwise, one thread per element of a
// grid-stride loop over [n_tokens, n] (gate/up rows may be halves of one fused gate|up row).
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
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

Status swiglu(const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_tokens, int64_t n,
              cudaStream_t stream) {
  return launch<Silu>(gate, up, in_stride, out, n_tokens, n, stream, "cuda swiglu");
}

Status geglu_tanh(const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_tokens, int64_t n,
                  cudaStream_t stream) {
  return launch<GeluTanh>(gate, up, in_stride, out, n_tokens, n, stream, "cuda geglu_tanh");
}

}  // namespace saker::cuda
