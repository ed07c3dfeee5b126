#pragma once
// Hopper's tensor memory accelerator (TMA) for the K-quant matmul's stages (internal; include only from .cu
// files): one instruction copies a whole box of a tensor (its shape and strides in a CUtensorMap made on the
// host, tensor_map.h) from global into shared memory, and its completion is counted in bytes on an mbarrier
// in shared memory, so a warp's stage of 16 weight rows and 16 activation rows is three instructions of one
// lane instead of thirteen 16-byte cp.async a lane. Boxes that reach past the tensor are zero-filled.
// All of it needs sm_90; below it the functions are empty (the launcher never selects them there).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/cp_async.cuh"

namespace saker::cuda::detail {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SAKER_TMA_DEVICE 1
#define SAKER_TMA_ELSE
#elif defined(__CUDA_ARCH__)
// Device code for an older target: a launch that reaches these (a driver that JIT-compiled older PTX for a
// Hopper device) stops loudly instead of reading stages nothing filled.
#define SAKER_TMA_ELSE __trap();
#else
#define SAKER_TMA_ELSE
#endif

// Initialises an mbarrier that completes a phase after `count` arrivals and the bytes they announced.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
#ifdef SAKER_TMA_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count));
#else
  SAKER_TMA_ELSE
#endif
}
// Makes the initialised barriers visible to the async proxy (the TMA unit) before any copy names them.
__device__ __forceinline__ void mbar_init_fence() {
#ifdef SAKER_TMA_DEVICE
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  SAKER_TMA_ELSE
#endif
}
// One arrival that also announces `bytes` still to land (the copies' complete_tx subtracts them).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#ifdef SAKER_TMA_DEVICE
  asm volatile(
      "{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(smem_addr(bar)),
      "r"(bytes)
      : "memory");
#else
  SAKER_TMA_ELSE
#endif
}
// Waits until the barrier's phase of parity `parity` has completed (every byte of it has landed).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#ifdef SAKER_TMA_DEVICE
  asm volatile(
      "{\n .reg .pred done;\n wait_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra wait_%=;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#else
  SAKER_TMA_ELSE
#endif
}
// Orders this thread's earlier generic-proxy accesses of shared memory (the reads of a stage) before later
// async-proxy writes to it (the next copy into the same stage).
__device__ __forceinline__ void fence_proxy_async_smem() {
#ifdef SAKER_TMA_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#else
  SAKER_TMA_ELSE
#endif
}
// Copies the box at coordinates (x, y[, z]) (elements; innermost first) of the tensor map into dst, counting
// its bytes on bar. The map is a __grid_constant__ kernel parameter (its generic address is passed).
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar) {
#ifdef SAKER_TMA_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_addr(bar))
      : "memory");
#else
  SAKER_TMA_ELSE
#endif
}
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int x, int y, int z, uint64_t* bar) {
#ifdef SAKER_TMA_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(smem_addr(bar))
      : "memory");
#else
  SAKER_TMA_ELSE
#endif
}

}  // namespace saker::cuda::detail
