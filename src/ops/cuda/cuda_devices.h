#pragma once
// CUDA device discovery (host code only; safe to call on a machine without a GPU).
#include <string>
#include <vector>

#include "ops/device_info.h"

namespace saker::cuda {

std::vector<CudaDeviceInfo> list_devices(std::string* why);

// Makes `device` the calling thread's current CUDA device for the scope and restores the previous one after:
// the ranks of a tensor-parallel model each run on their own GPU, from threads that serve several.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  // cudaSetDevice's outcome (a device that does not exist).
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool ok_ = true;
};

}  // namespace saker::cuda
