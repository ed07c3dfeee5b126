#pragma once
// How many blocks of a kernel a device holds at once, counted once per device (per_device_cache.h): what the
// persistent or slice-streaming grids (matmul_kq_mma.cu, attention_decode_mma.cu, matmul_kq_lane.cu) size
// themselves by. Neither the occupancy query nor the attribute calls are stream operations, so both are allowed
// while a graph is being captured.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/per_device_cache.h"

namespace saker::cuda::detail {

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
