#include "core/tensor.h"

#include <fmt/format.h>

namespace saker {

const char* device_name(Device device) { return device == Device::kCuda ? "cuda" : "cpu"; }

TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device) {
  return contiguous(data, dtype, shape.begin(), static_cast<int>(shape.size()), device);
}

TensorView TensorView::contiguous(void* data, DType dtype, const int64_t* shape, int n_dims, Device device) {
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.n_dims = n_dims;
  for (int i = 0; i < n_dims; ++i) t.shape[i] = shape[i];
  const DTypeTraits& tr = traits(dtype);
  if (n_dims > 0) {
    t.stride_bytes[n_dims - 1] = tr.quantized ? 0 : tr.block_bytes;
    uint64_t stride = t.row_bytes();
    for (int i = n_dims - 2; i >= 0; --i) {
      t.stride_bytes[i] = static_cast<int64_t>(stride);
      stride *= static_cast<uint64_t>(shape[i]);
    }
  }
  return t;
}

int64_t TensorView::n_elements() const {
  int64_t n = 1;
  for (int i = 0; i < n_dims; ++i) n *= shape[i];
  return n;
}

int64_t TensorView::n_rows() const {
  int64_t n = 1;
  for (int i = 0; i + 1 < n_dims; ++i) n *= shape[i];
  return n;
}

uint64_t TensorView::row_bytes() const {
  if (n_dims == 0) return traits(dtype).block_bytes;
  return saker::row_bytes(dtype, shape[n_dims - 1]).value_or(0);
}

uint64_t TensorView::n_bytes() const { return row_bytes() * static_cast<uint64_t>(n_rows()); }

bool TensorView::is_contiguous() const {
  TensorView c = contiguous(data, dtype, shape.data(), n_dims, device);
  for (int i = 0; i < n_dims; ++i) {
    if (shape[i] > 1 && c.stride_bytes[i] != stride_bytes[i]) return false;
  }
  return true;
}

void* TensorView::row(int64_t r) const {
  // Decompose the flat row index over the outer dimensions (innermost outer dim varies fastest).
  int64_t offset = 0;
  for (int i = n_dims - 2; i >= 0; --i) {
    offset += (r % shape[i]) * stride_bytes[i];
    r /= shape[i];
  }
  return static_cast<char*>(data) + offset;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "] " + std::string(dtype_name(dtype));
}

}  // namespace saker
