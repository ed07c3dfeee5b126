#pragma once
// What compute devices this build can use.
#include <string>
#include <vector>

namespace saker {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int sm_major = 0;
  int sm_minor = 0;
  size_t total_memory_bytes = 0;
};

bool cuda_compiled();  // built with the CUDA backend
// Devices the driver reports; empty without a GPU or without the CUDA backend. `why` says why none.
std::vector<CudaDeviceInfo> cuda_devices(std::string* why = nullptr);

}  // namespace saker
