#pragma once
// How many blocks of a kernel a device holds at once, counted once per device: what the persistent or
// slice-streaming grids (matmul_kq_mma.cu, attention_decode_mma.cu) size themselves by. Neither the occupancy
// query nor the attribute calls are stream operations, so both are allowed while a graph is being captured.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "core/status.h"
#include "ops/cuda/cuda_check.h"

namespace saker::cuda::detail {

// A per-device figure computed once (devices 0..63), such as an instantiation's resident blocks.
template <class Compute>
Result<int64_t> once_per_device(std::atomic<int64_t> (&cache)[64], int device, Compute&& compute) {
  std::atomic<int64_t>& slot = cache[device & 63];
  if (const int64_t v = slot.load(std::memory_order_acquire); v > 0) return v;
  SAKER_ASSIGN_OR_RETURN(const int64_t v, compute());
  slot.store(v, std::memory_order_release);
  return v;
}

// Blocks of `kernel` (blockDim `threads`, `smem` bytes of dynamic shared memory, its limit already raised)
// resident on `device` at once: the occupancy per SM (at least one) times the SMs.
template <class Kernel>
Result<int64_t> resident_blocks(Kernel kernel, int threads, size_t smem, int device) {
  int per_sm = 0, sms = 0;
  SAKER_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  SAKER_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<int64_t>(per_sm > 0 ? per_sm : 1) * sms;
}

}  // namespace saker::cuda::detail
