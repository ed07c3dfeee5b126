#pragma once
// Random activations and quantised random weights for the matmul tests.
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <cstring>

#include "core/env.h"
#include "formats/quant/codec.h"

namespace saker::testing {

// Whether SAKER_CUDA_MATMUL leaves the width-invariant kernels on: unset, or any mode but the older paths
// (fma, simple, legacy).
inline bool invariant_matmul_env_on() {
  const char* env = debug_env().cuda_matmul;
  return env == nullptr || (std::strcmp(env, "fma") != 0 && std::strcmp(env, "simple") != 0 &&
                            std::strcmp(env, "legacy") != 0);
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Random weights quantised row by row with the CPU quantisers: [n_out, n_in] in `type`.
inline std::vector<uint8_t> make_weights(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  const std::vector<float> f = random_floats(static_cast<size_t>(n_out * n_in), seed, 0.05f);
  const uint64_t rb = *row_bytes(type, n_in);
  std::vector<uint8_t> w(rb * static_cast<uint64_t>(n_out));
  for (int64_t r = 0; r < n_out; ++r) {
    EXPECT_TRUE(quantize_row(type, f.data() + r * n_in, w.data() + r * rb, n_in).ok());
  }
  return w;
}

}  // namespace saker::testing
