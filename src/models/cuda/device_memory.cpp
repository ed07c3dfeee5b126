#include "models/cuda/device_memory.h"

#include <fmt/format.h>

#include <algorithm>

namespace saker {

DeviceMemory::~DeviceMemory() {
  for (void* p : device_) cudaFree(p);
  for (void* p : host_) cudaFreeHost(p);
}

Result<void*> DeviceMemory::alloc(size_t bytes, const char* what) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 16));
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of a failed allocation
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    return make_error(StatusCode::kOutOfRange, "GPU memory: cannot allocate {} MiB for {} ({} MiB free of {} MiB): {}",
                      bytes >> 20, what, free_b >> 20, total_b >> 20, cudaGetErrorString(e));
  }
  device_.push_back(p);
  device_bytes_ += bytes;
  return p;
}

Result<void*> DeviceMemory::alloc_host(size_t bytes, const char* what) {
  void* p = nullptr;
  const cudaError_t e = cudaMallocHost(&p, std::max<size_t>(bytes, 16));
  if (e != cudaSuccess) {
    cudaGetLastError();
    return make_error(StatusCode::kOutOfRange, "cannot allocate {} MiB of pinned host memory for {}: {}", bytes >> 20,
                      what, cudaGetErrorString(e));
  }
  host_.push_back(p);
  return p;
}

void DeviceMemory::release(void* p) {
  if (p == nullptr) return;
  if (auto it = std::find(device_.begin(), device_.end(), p); it != device_.end()) {
    cudaFree(p);
    device_.erase(it);
  } else if (auto h = std::find(host_.begin(), host_.end(), p); h != host_.end()) {
    cudaFreeHost(p);
    host_.erase(h);
  }
}

}  // namespace saker
