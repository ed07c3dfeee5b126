#pragma once
// Tensor maps for Hopper's TMA copies (tma.cuh): the shape, strides, box and swizzle of a byte tensor in
// global memory, encoded on the host by the driver (cuTensorMapEncodeTiled, found through the runtime, so no
// link against the driver library). Encoding is host work only (no stream operation), allowed during graph
// capture; the map travels to the kernel by value as a __grid_constant__ parameter.
#include <cuda.h>

#include <cstdint>

#include "core/status.h"

namespace saker::cuda::detail {

// A rank-2 or rank-3 tensor of bytes: dims innermost first, strides (bytes) of dims 1.. (multiples of 16),
// box the elements a copy moves along each dim (box[0] a multiple of 16, at most 256 each). base must be
// 16-byte aligned. swizzle_128b: the box's 128-byte lines land with their 16-byte chunks XOR-ed by the line's
// index mod 8 within a 1024-byte span (box[0] at most 128), else dense. Elements outside dims read as zeros.
struct ByteTensor {
  const void* base = nullptr;
  int rank = 2;
  uint64_t dims[3] = {0, 0, 0};
  uint64_t strides[2] = {0, 0};
  uint32_t box[3] = {1, 1, 1};
  bool swizzle_128b = false;
};
Result<CUtensorMap> encode_tensor_map(const ByteTensor& t);

}  // namespace saker::cuda::detail
