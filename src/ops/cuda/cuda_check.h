#pragma once
// Turns CUDA runtime errors into saker Status values (kernels never abort the process on their own).
#include <cuda_runtime.h>

#include <string>

#include "core/status.h"

#define SAKER_CUDA_RETURN_IF_ERROR(expr)                                                               \
  do {                                                                                                 \
    cudaError_t saker_cuda_err_ = (expr);                                                              \
    if (saker_cuda_err_ != cudaSuccess) {                                                              \
      return ::saker::make_error(::saker::StatusCode::kInternal,                                         \
                                 std::string("CUDA error ") + cudaGetErrorName(saker_cuda_err_) + " (" + \
                                     cudaGetErrorString(saker_cuda_err_) + ") in " #expr);             \
    }                                                                                                  \
  } while (0)
