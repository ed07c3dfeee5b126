#pragma once
// Helpers for cross-backend tests: skip without a GPU, device buffers, error metrics.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/device_info.h"

#define SAKER_REQUIRE_GPU()                                                   \
  do {                                                                        \
    std::string why_;                                                         \
    if (::saker::cuda_devices(&why_).empty()) GTEST_SKIP() << "no GPU: " << why_; \
  } while (0)

namespace saker::testing {

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { EXPECT_EQ(cudaMalloc(&p_, n * sizeof(T)), cudaSuccess); }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { copy_from(host); }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  // host.size() == the array's size. A copy from pageable memory may return before its DMA lands, and it runs
  // on the default stream, which a cudaStreamNonBlocking stream does not wait for: a kernel launched there next
  // could read the array's tail before it is written (ChainedLaunches saw it). So the copy is waited for.
  void copy_from(const std::vector<T>& host) {
    EXPECT_EQ(host.size(), n_);
    EXPECT_EQ(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    EXPECT_EQ(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

// Normalised mean squared error sum((a-b)^2) / sum(b^2); NaN anywhere gives +inf so it never passes.
inline double nmse(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(ref[i])) return INFINITY;
    const double d = static_cast<double>(a[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den == 0 ? num : num / den;
}

}  // namespace saker::testing
