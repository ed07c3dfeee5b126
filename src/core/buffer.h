#pragma once
// HostBuffer: owned, 64-byte aligned host memory. Device buffers live with their backend.
#include <cstddef>
#include <cstdint>

namespace saker {

class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(size_t n_bytes, bool zero = true);
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t size_bytes() const { return size_bytes_; }
  bool empty() const { return size_bytes_ == 0; }

 private:
  void* data_ = nullptr;
  size_t size_bytes_ = 0;
};

}  // namespace saker
