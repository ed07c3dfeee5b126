#pragma once
// DeviceMemory: owns device and pinned-host allocations of one model and frees them together.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "core/status.h"

namespace saker {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();

  // Device memory; errors say how much was asked and how much is free.
  Result<void*> alloc(size_t bytes, const char* what);
  // Page-locked host memory (fast, asynchronous copies; graph memcpy nodes need it).
  Result<void*> alloc_host(size_t bytes, const char* what);
  // Frees one earlier allocation (device or pinned host) now, e.g. a buffer that grew; null is a no-op.
  void release(void* p);

  template <typename T>
  Result<T*> alloc_array(size_t n, const char* what) {
    SAKER_ASSIGN_OR_RETURN(void* p, alloc(n * sizeof(T), what));
    return static_cast<T*>(p);
  }
  size_t device_bytes() const { return device_bytes_; }

 private:
  std::vector<void*> device_;
  std::vector<void*> host_;
  size_t device_bytes_ = 0;
};

}  // namespace saker
