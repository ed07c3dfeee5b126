// Row-wise top-k with log-probabilities, for a drafter's tree: k ids and their logit - log_sum_exp per row cross
// the bus instead of the row's n_vocab logits. One block per row:
//   pass 1  each thread walks its strided columns upwards keeping its own best k (sorted, highest first; a
//           strict > keeps the lower index among equal values) and its online (max, sum exp) of the row
//   merge   the block reduces (max, sum exp) to log_z; then k rounds, each taking the best head among the
//           threads' lists (larger value, then lower index) and popping it from its owner
// NaN is never chosen; a row of fewer than k comparable entries fills the rest with id -1.
#include <cfloat>

#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/top_k.h"

namespace saker::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ bool ahead(float v, int32_t i, float v2, int32_t i2) {
  // (v, i) ranks before (v2, i2): a real candidate before none, then larger value, then lower index.
  if (i2 < 0) return i >= 0;
  if (i < 0) return false;
  return v > v2 || (v == v2 && i < i2);
}

// (m, l) of exp-sum of a part of the row, merged: l = sum exp(x - m).
__device__ __forceinline__ void merge_lse(float& m, float& l, float m2, float l2) {
  if (l2 == 0.0f) return;
  if (l == 0.0f) {
    m = m2;
    l = l2;
    return;
  }
  const float mm = fmaxf(m, m2);
  l = l * __expf(m - mm) + l2 * __expf(m2 - mm);
  m = mm;
}

__global__ void top_k_kernel(const float* __restrict__ x, int64_t n, int k, int32_t* __restrict__ ids,
                             float* __restrict__ logprobs) {
  chain_in();
  __shared__ float s_m[kThreads / 32], s_l[kThreads / 32];
  __shared__ float s_v[kThreads / 32];
  __shared__ int32_t s_i[kThreads / 32], s_owner[kThreads / 32];
  __shared__ float s_log_z;
  __shared__ int32_t s_win_owner;
  const float* xr = x + blockIdx.x * n;
  float top_v[kMaxTopK];
  int32_t top_i[kMaxTopK];
  for (int j = 0; j < kMaxTopK; ++j) {
    top_v[j] = -FLT_MAX;
    top_i[j] = -1;
  }
  float m = 0.0f, l = 0.0f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float y = xr[c];
    if (isnan(y)) continue;
    merge_lse(m, l, y, 1.0f);
    if (!ahead(y, static_cast<int32_t>(c), top_v[k - 1], top_i[k - 1])) continue;
    int j = k - 1;  // insertion: shift the worse ones down
    while (j > 0 && ahead(y, static_cast<int32_t>(c), top_v[j - 1], top_i[j - 1])) {
      top_v[j] = top_v[j - 1];
      top_i[j] = top_i[j - 1];
      --j;
    }
    top_v[j] = y;
    top_i[j] = static_cast<int32_t>(c);
  }
  // log_z over the block.
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), l2 = __shfl_xor_sync(0xffffffffu, l, o);
    merge_lse(m, l, m2, l2);
  }
  if (lane == 0) {
    s_m[warp] = m;
    s_l[warp] = l;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float mb = 0.0f, lb = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) merge_lse(mb, lb, s_m[w], s_l[w]);
    s_log_z = lb > 0.0f ? mb + __logf(lb) : 0.0f;
  }
  __syncthreads();
  // k rounds of the block's best head.
  int head = 0;
  for (int r = 0; r < k; ++r) {
    float v = head < k ? top_v[head] : -FLT_MAX;
    int32_t i = head < k ? top_i[head] : -1;
    int32_t owner = static_cast<int32_t>(threadIdx.x);
    for (int o = 16; o > 0; o >>= 1) {
      const float v2 = __shfl_xor_sync(0xffffffffu, v, o);
      const int32_t i2 = __shfl_xor_sync(0xffffffffu, i, o);
      const int32_t o2 = __shfl_xor_sync(0xffffffffu, owner, o);
      if (ahead(v2, i2, v, i)) {
        v = v2;
        i = i2;
        owner = o2;
      }
    }
    if (lane == 0) {
      s_v[warp] = v;
      s_i[warp] = i;
      s_owner[warp] = owner;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float bv = s_v[0];
      int32_t bi = s_i[0], bo = s_owner[0];
      for (int w = 1; w < kThreads / 32; ++w) {
        if (ahead(s_v[w], s_i[w], bv, bi)) {
          bv = s_v[w];
          bi = s_i[w];
          bo = s_owner[w];
        }
      }
      ids[blockIdx.x * k + r] = bi;
      logprobs[blockIdx.x * k + r] = bi >= 0 ? bv - s_log_z : -INFINITY;
      s_win_owner = bi >= 0 ? bo : -1;
    }
    __syncthreads();
    if (static_cast<int32_t>(threadIdx.x) == s_win_owner) ++head;
    __syncthreads();  // s_v / s_win_owner are rewritten by the next round
  }
}

}  // namespace

Status top_k_rows(const float* x, int64_t rows, int64_t n, int32_t k, int32_t* ids, float* logprobs,
                  cudaStream_t stream) {
  if (rows <= 0) return {};
  if (k < 1 || k > kMaxTopK) return make_error(StatusCode::kInvalidArgument, "cuda top_k_rows: k out of range");
  if (n > INT32_MAX || rows > INT32_MAX) {
    return make_error(StatusCode::kOutOfRange, "cuda top_k_rows: too many columns or rows for int32");
  }
  launch_chained(top_k_kernel, static_cast<unsigned>(rows), kThreads, 0, stream, x, n, k, ids, logprobs);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
