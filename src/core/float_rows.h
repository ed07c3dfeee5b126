#pragma once
// FloatRows: rows of floats for a backend to copy from, on the host or in a GPU's memory: the hidden states a
// target tapped (engine -> drafter), which stay on the GPU when both run there.
#include <cstdint>
#include <span>

namespace saker {

struct FloatRows {
  const float* data = nullptr;    // row r at data + r * stride
  int64_t stride = 0;             // floats between rows
  int64_t n = 0;                  // rows
  std::span<const int32_t> pick = {};  // non-empty: [n] the rows of data taken, in order; empty: rows 0 .. n - 1
  bool on_device = false;         // data is GPU memory (valid until the producer's next step)
  int64_t row(int64_t i) const { return pick.empty() ? i : pick[static_cast<size_t>(i)]; }
  const float* row_data(int64_t i) const { return data + row(i) * stride; }
};

}  // namespace saker
