#pragma once
// Random activations and quantised random weights for the matmul tests.
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/env.h"
#include "core/tensor.h"
#include "formats/quant/codec.h"
#include "ops/cuda/matmul.h"

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

// Activations for the int8 width-invariant kernels: 32-element sub-blocks spanning 1/16x .. 1x of their
// 256-element block's largest, so every per-sub-block shift 0..3 is taken, with an outlier (40) every 997.
inline std::vector<float> varied_activations(int64_t rows, int64_t n_in, uint32_t seed) {
  std::vector<float> x = random_floats(static_cast<size_t>(rows * n_in), seed);
  for (int64_t i = 0; i < rows * n_in; ++i) {
    x[i] *= 1.0f / static_cast<float>(1 << ((i / 32) % 5));
    if (i % 997 == 0) x[i] = 40.0f;
  }
  return x;
}

// Weight bytes [n_out, n_in] of `type` uploaded as one device matrix; data null (and a test failure) when the
// upload fails.
inline cuda::DeviceMatrix upload_weights(DType type, const std::vector<uint8_t>& bytes, int64_t n_out, int64_t n_in) {
  const TensorView part = TensorView::contiguous(const_cast<uint8_t*>(bytes.data()), type, {n_out, n_in});
  auto dm = cuda::upload_matrix(std::span<const TensorView>(&part, 1));
  EXPECT_TRUE(dm.ok()) << dm.status().message();
  return dm.ok() ? *dm : cuda::DeviceMatrix{};
}

// The host oracle of the tensor-core matmul tests: got [rows, n_out] against a double dot product of the weights as
// the kernel sees them (w [n_out, n_in]) with x [rows, n_in] rounded by round_x, plus base where accumulating.
// An output fails when off by more than 1e-4 of its sum of |w x| (+ 1e-6): accumulation order moves it far less,
// an index error by O(1) of it. The first five failures are reported, prefixed with `what`.
struct HostDotCheck {
  int64_t bad = 0;     // outputs out of tolerance
  double worst = 0;    // the largest error / sum |w x|
};
template <class RoundX>
HostDotCheck check_against_host_dot(const std::vector<float>& got, const std::vector<float>& w, const std::vector<float>& x,
                                    const std::vector<float>* base, int64_t rows, int64_t n_out, int64_t n_in,
                                    RoundX round_x, const std::string& what) {
  HostDotCheck c;
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      double want = 0, mag = 0;
      for (int64_t i = 0; i < n_in; ++i) {
        const double p = static_cast<double>(w[o * n_in + i]) * round_x(x[t * n_in + i]);
        want += p;
        mag += std::fabs(p);
      }
      if (base) want += (*base)[t * n_out + o];
      const double err = std::fabs(got[t * n_out + o] - want);
      c.worst = std::max(c.worst, err / (mag + 1e-12));
      if (!(err <= 1e-4 * mag + 1e-6) && c.bad++ < 5) {
        ADD_FAILURE() << what << ": row " << t << " out " << o << " got " << got[t * n_out + o] << " want " << want;
      }
    }
  }
  return c;
}

}  // namespace saker::testing
