#include "ops/cuda/chained_launch.cuh"

#include <atomic>
#include <cstring>

#include "core/env.h"

namespace saker::cuda {
namespace {

// A kernel of this file stands for all of ops/cuda: they are compiled for the same architectures.
__global__ void chained_probe_kernel() { chain_in(); }

constexpr int kMaxDevices = 64;
std::atomic<int> g_state[kMaxDevices];  // 0 unknown, 1 off, 2 on

bool probe(int dev) {
  if (const char* e = debug_env().cuda_pdl; e && std::strcmp(e, "0") == 0) return false;
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  cudaFuncAttributes fa{};
  if (cudaFuncGetAttributes(&fa, chained_probe_kernel) != cudaSuccess) return false;
  // ptxVersion: the virtual architecture the kernels were compiled for. A build for an older target runs on
  // Hopper from its PTX, compiled there into sm_90 machine code (binaryVersion 90) whose chain_in() is still
  // empty: it must never chain.
  return major >= 9 && fa.ptxVersion >= 90 && fa.binaryVersion >= 90;
}

}  // namespace

bool chained_launches_enabled() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return false;
  int s = g_state[dev].load(std::memory_order_acquire);
  if (s == 0) {
    s = probe(dev) ? 2 : 1;
    g_state[dev].store(s, std::memory_order_release);
  }
  return s == 2;
}

}  // namespace saker::cuda
