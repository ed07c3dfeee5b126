#pragma once
// Test data and error measures shared by the quant codec tests.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace saker::testing {

// Random numbers from mt19937 (whose output the standard fixes) through our own transforms, so the data,
// and the errors the tests bound, are the same with every standard library.
class QuantTestRng {
 public:
  explicit QuantTestRng(uint32_t seed) : rng_(seed) {}
  double uniform() { return (static_cast<double>(rng_()) + 0.5) / 4294967296.0; }  // (0, 1)
  double normal() {  // Box-Muller
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
  double student_t3() {  // normal / sqrt(chi2(3) / 3)
    const double a = normal(), b = normal(), c = normal();
    return normal() / std::sqrt((a * a + b * b + c * c) / 3.0);
  }

 private:
  std::mt19937 rng_;
};

// [n_rows, n_cols] values with a per-row scale drawn log-uniformly over two decades. Heavy-tailed data uses
// Student's t with 3 degrees of freedom (like trained weights: most values small, a few large).
inline std::vector<float> quant_test_matrix(int64_t n_rows, int64_t n_cols, bool heavy_tailed, uint32_t seed) {
  QuantTestRng rng(seed);
  std::vector<float> x(static_cast<size_t>(n_rows * n_cols));
  for (int64_t r = 0; r < n_rows; ++r) {
    const double scale = std::pow(10.0, -2.0 * rng.uniform());
    for (int64_t c = 0; c < n_cols; ++c) {
      x[r * n_cols + c] = static_cast<float>(scale * (heavy_tailed ? rng.student_t3() : rng.normal()));
    }
  }
  return x;
}

// ||a - b|| / ||b|| (Frobenius), accumulated in double.
inline double relative_error(const float* a, const float* b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace saker::testing
