#include <cuda_runtime.h>

#include "ops/cuda/cuda_devices.h"

namespace saker::cuda {

std::vector<CudaDeviceInfo> list_devices(std::string* why) {
  std::vector<CudaDeviceInfo> out;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return out;
  }
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    out.push_back({i, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  if (out.empty() && why) *why = "the CUDA driver reports no devices";
  return out;
}

ScopedDevice::ScopedDevice(int device) {
  if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
  if (previous_ != device) ok_ = cudaSetDevice(device) == cudaSuccess;
}

ScopedDevice::~ScopedDevice() {
  int now = -1;
  if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

}  // namespace saker::cuda
