#include "ops/cuda/chained_launch.cuh"

#include <atomic>
#include <cstring>

#include "core/env.h"

namespace saker::cuda {
namespace {

// A kernel of this file stands for all of ops/cuda: they are compiled for the same architectures.
__global__ void chained_probe_kernel() { chain_in(); }

constexpr int kMaxDevices = 64;
std::atomic<int> g_state[kMaxDevices];   // chained launches: 0 unknown, 1 off, 2 on
std::atomic<int> g_hopper[kMaxDevices];  // hopper_code_on: 0 unknown, 1 no, 2 yes

// A per-device yes/no computed once.
template <class Probe>
bool cached(std::atomic<int> (&state)[kMaxDevices], int dev, Probe&& probe) {
  if (dev < 0 || dev >= kMaxDevices) return false;
  int s = state[dev].load(std::memory_order_acquire);
  if (s == 0) {
    s = probe() ? 2 : 1;
    state[dev].store(s, std::memory_order_release);
  }
  return s == 2;
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
  return cached(g_state, dev, [dev] {
    if (const char* e = debug_env().cuda_pdl; e && std::strcmp(e, "0") == 0) return false;
    return hopper_code_on(dev);
  });
}

}  // namespace saker::cuda
