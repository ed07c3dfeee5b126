#pragma once
// Helpers shared by the ops tests: seeded random data, tensors in std::vectors, and error measures where
// NaN never passes.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "formats/quant/codec.h"

namespace saker::testing {

// mt19937 (its output is fixed by the standard) through our own transforms, so the data is the same with
// every standard library.
class OpsRng {
 public:
  explicit OpsRng(uint32_t seed) : rng_(seed) {}
  double uniform() { return (static_cast<double>(rng_()) + 0.5) / 4294967296.0; }  // (0, 1)
  double normal() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
  int32_t below(int32_t n) { return static_cast<int32_t>(rng_() % static_cast<uint32_t>(n)); }
  std::vector<float> normals(size_t n, double scale = 1.0) {
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(scale * normal());
    return v;
  }

 private:
  std::mt19937 rng_;
};

// Normalised mean squared error sum (a - b)^2 / sum b^2; +inf when either side holds a NaN or an inf, so a
// broken kernel never passes a bound.
inline double nmse(const float* a, const float* b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return std::numeric_limits<double>::infinity();
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0.0 ? num / den : num;
}
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() ? nmse(a.data(), b.data(), a.size()) : std::numeric_limits<double>::infinity();
}

// max |a - b| / (|b| + floor); +inf on NaN/inf.
inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& b, double floor) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / (std::fabs(b[i]) + floor));
  }
  return worst;
}

inline TensorView view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return TensorView::contiguous(v.data(), DType::kF32, shape);
}

// A weight [n_out, n_in] quantised to `type` from random normal values, and its exact dequantisation.
struct QuantWeight {
  DType type;
  int64_t n_out, n_in;
  std::vector<uint8_t> bytes;
  std::vector<float> dequantized;  // [n_out, n_in]
  TensorView view() { return TensorView::contiguous(bytes.data(), type, {n_out, n_in}); }
};

inline QuantWeight make_weight(DType type, int64_t n_out, int64_t n_in, uint32_t seed, double scale = 0.05) {
  QuantWeight w{type, n_out, n_in, {}, {}};
  OpsRng rng(seed);
  std::vector<float> x = rng.normals(static_cast<size_t>(n_out * n_in), scale);
  w.bytes.resize(*row_bytes(type, n_in) * n_out);
  w.dequantized.resize(x.size());
  if (!quantize(type, x.data(), w.bytes.data(), n_out, n_in).ok() ||
      !dequantize(type, w.bytes.data(), w.dequantized.data(), n_out, n_in).ok()) {
    w.bytes.clear();
  }
  return w;
}

// out[t, o] = sum_i x[t, i] w[o, i] in double: the naive oracle of the matmul tests.
inline std::vector<float> naive_matmul(const std::vector<float>& x, const std::vector<float>& w, int64_t n_tokens,
                                       int64_t n_out, int64_t n_in) {
  std::vector<float> out(static_cast<size_t>(n_tokens * n_out));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      double acc = 0.0;
      for (int64_t i = 0; i < n_in; ++i) acc += static_cast<double>(x[t * n_in + i]) * w[o * n_in + i];
      out[t * n_out + o] = static_cast<float>(acc);
    }
  }
  return out;
}

// The dtypes formats/quant can both quantise and dequantise: the weights every matmul test covers.
inline std::vector<DType> weight_dtypes() {
  return {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,   DType::kQ4_0,  DType::kQ4_1, DType::kQ5_0,
          DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS};
}

}  // namespace saker::testing
