#pragma once
// Chained kernel launches (Hopper's programmatic dependent launch): a kernel launched with launch_chained may
// start while the kernel before it in the stream is still running, so its launch and the ramp-up of its
// blocks overlap that kernel's work instead of following it. A decode step is a few hundred short kernels,
// and each boundary otherwise leaves the GPU idle for a launch latency and a tail.
//
// The contract, for every kernel launched with launch_chained:
//   - its first statement is chain_in(): it waits there until the kernels before it have finished and their
//     writes are visible, so nothing it reads or writes can race with them; only immutable data (weights) may
//     be touched before it (prefetch_weights_l2);
//   - chain_in() then lets the next chained kernel launch, which waits in its own chain_in() for this one;
//     so at most one kernel waits ahead of the running one (chain_in_late(): the next one launches as this
//     one's blocks exit).
// A kernel launched any other way (<<< >>>, cuBLAS) simply runs after its predecessor, as before.
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "ops/cuda/chained_launch.h"

namespace saker::cuda {

// Waits for the kernels this one was chained after (griddepcontrol.wait), then allows the next chained
// kernel to launch (griddepcontrol.launch_dependents). A no-op when the launch was not chained.
__device__ __forceinline__ void chain_in() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// chain_in() for the tensor-core matmuls of 3-64 rows: waits the same way, but the next kernel launches only
// as this one's blocks exit. Letting it launch at once cost 64-row verify steps about 10% (8B Q4_K_M, H100):
// its waiting blocks sit beside these issue-bound ones for the whole kernel.
__device__ __forceinline__ void chain_in_late() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// After chain_in_late(): lets the next chained kernel launch now (griddepcontrol.launch_dependents), for a
// kernel that decides at run time to behave as chain_in() would have.
__device__ __forceinline__ void chain_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// What a chained kernel may do before chain_in(): ask L2 for its weight bytes [p, p + bytes), so their DRAM
// reads overlap the kernel it waits for. Called by every thread of the block, each asking for every
// blockDim.x-th 128-byte line the range touches; a hint only (prefetch.global.L2): nothing waits for it and
// it changes no result. Every address asked for lies inside the range (a first partial line by its start).
__device__ __forceinline__ void prefetch_weights_l2(const void* p, int64_t bytes) {
  const auto b = reinterpret_cast<uintptr_t>(p), e = b + static_cast<uintptr_t>(bytes);
  const uintptr_t stride = 128 * static_cast<uintptr_t>(blockDim.x);
  for (uintptr_t a = (b & ~uintptr_t{127}) + 128 * threadIdx.x; a < e; a += stride) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(a < b ? b : a));
  }
}

// The same for a block's weight rows [first, first + count) of a matrix of n_out rows of row_bytes each (the
// block's last rows may lie past n_out: they are not asked for).
__device__ __forceinline__ void prefetch_weights_l2(const uint8_t* w, int64_t row_bytes, int64_t first, int64_t count,
                                                    int64_t n_out) {
  prefetch_weights_l2(w + first * row_bytes, (n_out - first < count ? n_out - first : count) * row_bytes);
}

// launch_chained with the blocks in clusters of cluster_x along x (grid.x a multiple of it; 1: no clusters).
template <typename... Params, typename... Args>
void launch_chained_cluster(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                            unsigned cluster_x, Args&&... args) {
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = chained_launches_enabled() ? 1 : 0;
  attr[1].id = cudaLaunchAttributeClusterDimension;
  attr[1].val.clusterDim.x = cluster_x;
  attr[1].val.clusterDim.y = 1;
  attr[1].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = cluster_x > 1 ? 2 : 1;
  (void)cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

// kernel<<<grid, block, smem, stream>>>(args...), chained after the stream's previous kernel when enabled.
// Like <<< >>>, a failed launch is left for cudaGetLastError(), which every launch site checks next.
template <typename... Params, typename... Args>
void launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                    Args&&... args) {
  launch_chained_cluster(kernel, grid, block, smem, stream, 1u, std::forward<Args>(args)...);
}

}  // namespace saker::cuda
