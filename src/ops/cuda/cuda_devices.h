#pragma once
// CUDA device discovery (host code only; safe to call on a machine without a GPU).
#include <string>
#include <vector>

#include "ops/device_info.h"

namespace saker::cuda {

std::vector<CudaDeviceInfo> list_devices(std::string* why);

}  // namespace saker::cuda
