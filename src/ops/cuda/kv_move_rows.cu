#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kv_move_rows.h"

namespace saker::cuda {
namespace {

// Thread k of group g moves word k % row_words of tensor k / row_words for each of the group's moves in
// turn. W: the widest word a row's size allows (16 bytes for every head size saker meets).
template <class W>
__global__ void move_kv_rows_kernel(uint8_t* __restrict__ base, uint64_t tensor_stride, int64_t n_tensors,
                                    int64_t row_words, const int64_t* __restrict__ moves,
                                    const int32_t* __restrict__ groups, int64_t n_groups) {
  chain_in();
  const int64_t words = n_tensors * row_words;
  for (int64_t g = blockIdx.y; g < n_groups; g += gridDim.y) {
    const int32_t begin = groups[g], end = groups[g + 1];
    for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < words;
         k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      W* tensor = reinterpret_cast<W*>(base + (k / row_words) * tensor_stride);
      const int64_t w = k % row_words;
      // Plain loads and stores through one pointer: each load stays after the stores before it.
      for (int32_t i = begin; i < end; ++i) {
        tensor[moves[2 * i + 1] * row_words + w] = tensor[moves[2 * i] * row_words + w];
      }
    }
  }
}

template <class W>
Status launch(void* base, uint64_t tensor_stride, int64_t n_tensors, uint64_t row_bytes, const int64_t* moves,
              const int32_t* groups, int64_t n_groups, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t row_words = static_cast<int64_t>(row_bytes / sizeof(W));
  const int64_t blocks = (n_tensors * row_words + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(blocks < 4096 ? blocks : 4096),
                  static_cast<unsigned>(n_groups < 65535 ? n_groups : 65535));
  launch_chained(move_kv_rows_kernel<W>, grid, dim3(kThreads), 0, stream, static_cast<uint8_t*>(base), tensor_stride,
                 n_tensors, row_words, moves, groups, n_groups);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace

Status move_kv_rows(void* base, uint64_t tensor_stride, int64_t n_tensors, uint64_t row_bytes, const int64_t* moves,
                    const int32_t* groups, int64_t n_groups, cudaStream_t stream) {
  if (n_groups <= 0 || n_tensors <= 0 || row_bytes == 0) return {};
  const auto aligned = [&](uint64_t w) {
    return row_bytes % w == 0 && tensor_stride % w == 0 && reinterpret_cast<uintptr_t>(base) % w == 0;
  };
  if (aligned(16)) return launch<uint4>(base, tensor_stride, n_tensors, row_bytes, moves, groups, n_groups, stream);
  if (aligned(4)) return launch<uint32_t>(base, tensor_stride, n_tensors, row_bytes, moves, groups, n_groups, stream);
  return launch<uint8_t>(base, tensor_stride, n_tensors, row_bytes, moves, groups, n_groups, stream);
}

}  // namespace saker::cuda
