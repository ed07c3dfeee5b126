#include "ops/cuda/chained_launch.cuh"

#include <atomic>
#include <cstring>

#include "core/env.h"
#include "ops/cuda/resident_blocks.h"

namespace saker::cuda {
namespace {

// A kernel of this file stands for all of ops/cuda: they are compiled for the same architectures.
__global__ void chained_probe_kernel() { chain_in(); }

// Per-device answers computed once (resident_blocks.h's cache): 2 yes, 1 no.
std::atomic<int64_t> g_chained[64];  // chained launches
std::atomic<int64_t> g_hopper[64];   // hopper_code_on

template <class Probe>
bool cached(std::atomic<int64_t> (&cache)[64], int dev, Probe&& probe) {
  if (dev < 0 || dev >= 64) return false;
  const Result<int64_t> v = detail::once_per_device(cache, dev, [&]() -> Result<int64_t> { return probe() ? 2 : 1; });
  return v.ok() && v.value() == 2;
}

}  // namespace

bool hopper_code_on(int dev) {
  return cached(g_hopper, dev, [dev] {
    int major = 0;
    cudaFuncAttributes fa{};
    // ptxVersion: the virtual architecture the kernels were compiled for. A build for an older target runs on
    // Hopper from its PTX, compiled there into sm_90 machine code (binaryVersion 90) whose chain_in() is still
    // empty: it must never chain.
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, chained_probe_kernel) != cudaSuccess) {
      (void)cudaGetLastError();  // a failed query is an answer here, not an error for the next launch check
      return false;
    }
    return major >= 9 && fa.ptxVersion >= 90 && fa.binaryVersion >= 90;
  });
}

bool chained_launches_enabled() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  return cached(g_chained, dev, [dev] {
    if (const char* e = debug_env().cuda_pdl; e && std::strcmp(e, "0") == 0) return false;
    return hopper_code_on(dev);
  });
}

}  // namespace saker::cuda
