#pragma once
// TensorView: a non-owning view of a tensor (pointer, dtype, shape, strides, device). Buffers own memory.
//
// Shapes are row-major, outermost first, like PyTorch: a weight matrix [n_out, n_in] has rows of n_in
// contiguous elements. (GGUF stores ne innermost-first; the GGUF reader reverses it.) For block-quantized
// dtypes the innermost dimension must be contiguous and a whole number of blocks; strides are in bytes.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"

namespace saker {

enum class Device : uint8_t { kCpu = 0, kCuda = 1 };
const char* device_name(Device device);

constexpr int kMaxDims = 4;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Device device = Device::kCpu;
  int n_dims = 0;
  std::array<int64_t, kMaxDims> shape{};         // outermost first
  std::array<int64_t, kMaxDims> stride_bytes{};  // per dimension; innermost is 0 for block types

  // A contiguous view of `shape` at `data`.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               Device device = Device::kCpu);
  static TensorView contiguous(void* data, DType dtype, const int64_t* shape, int n_dims,
                               Device device = Device::kCpu);

  int64_t dim(int i) const { return shape[i < 0 ? n_dims + i : i]; }
  int64_t n_elements() const;
  int64_t n_rows() const;  // product of all but the innermost dimension
  uint64_t row_bytes() const;
  uint64_t n_bytes() const;  // bytes of a contiguous tensor of this shape
  bool is_contiguous() const;

  template <typename T>
  T* as() const { return static_cast<T*>(data); }
  // Pointer to the start of row r of a tensor flattened to [n_rows, innermost].
  void* row(int64_t r) const;

  std::string shape_string() const;  // "[4096, 1024] q4_K"
};

}  // namespace saker
