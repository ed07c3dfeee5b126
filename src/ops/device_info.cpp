#include "ops/device_info.h"

#include "saker/version.h"

#if SAKER_CUDA_ENABLED
#include "ops/cuda/cuda_devices.h"
#endif

namespace saker {

bool cuda_compiled() { return SAKER_CUDA_ENABLED != 0; }

std::vector<CudaDeviceInfo> cuda_devices(std::string* why) {
#if SAKER_CUDA_ENABLED
  return cuda::list_devices(why);
#else
  if (why) *why = "built without the CUDA backend (-DSAKER_CUDA=OFF or no nvcc)";
  return {};
#endif
}

}  // namespace saker
