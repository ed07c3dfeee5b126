#include "core/buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace saker {

namespace {
constexpr size_t kAlignment = 64;  // a cache line, and enough for AVX-512 loads
}

HostBuffer::HostBuffer(size_t n_bytes, bool zero) : size_bytes_(n_bytes) {
  if (n_bytes == 0) return;
  const size_t rounded = (n_bytes + kAlignment - 1) / kAlignment * kAlignment;
  data_ = std::aligned_alloc(kAlignment, rounded);
  if (!data_) throw std::bad_alloc();
  if (zero) std::memset(data_, 0, rounded);
}

HostBuffer::~HostBuffer() { std::free(data_); }

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_bytes_(std::exchange(other.size_bytes_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

}  // namespace saker
