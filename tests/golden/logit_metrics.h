#pragma once
// Comparisons of logits against a reference, row by row ([n_rows, n_vocab] flattened).
#include <algorithm>
#include <cmath>
#include <vector>

namespace saker::testing {

// max |a - b| over a row divided by the row's max |b|: the error relative to the logits' scale.
inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& b, int64_t n_vocab) {
  double worst = 0;
  for (size_t r = 0; r * n_vocab < b.size(); ++r) {
    double scale = 0, err = 0;
    for (int64_t i = 0; i < n_vocab; ++i) {
      scale = std::max(scale, std::fabs(static_cast<double>(b[r * n_vocab + i])));
      const double d = std::fabs(static_cast<double>(a[r * n_vocab + i]) - b[r * n_vocab + i]);
      err = std::isnan(d) ? INFINITY : std::max(err, d);
    }
    worst = std::max(worst, err / scale);
  }
  return worst;
}

inline double top1_agreement(const std::vector<float>& a, const std::vector<float>& b, int64_t n_vocab) {
  int same = 0, rows = 0;
  for (size_t r = 0; r * n_vocab < b.size(); ++r, ++rows) {
    auto arg = [&](const std::vector<float>& v) {
      return std::max_element(v.begin() + r * n_vocab, v.begin() + (r + 1) * n_vocab) - (v.begin() + r * n_vocab);
    };
    same += arg(a) == arg(b);
  }
  return static_cast<double>(same) / rows;
}

// Mean KL(ref || test) over rows, in nats.
inline double mean_kl(const std::vector<float>& test, const std::vector<float>& ref, int64_t n_vocab) {
  double total = 0;
  int rows = 0;
  for (size_t r = 0; r * n_vocab < ref.size(); ++r, ++rows) {
    auto log_softmax = [&](const std::vector<float>& v) {
      std::vector<double> out(n_vocab);
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < n_vocab; ++i) mx = std::max(mx, static_cast<double>(v[r * n_vocab + i]));
      for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(v[r * n_vocab + i] - mx);
      for (int64_t i = 0; i < n_vocab; ++i) out[i] = v[r * n_vocab + i] - mx - std::log(sum);
      return out;
    };
    const auto lp = log_softmax(ref), lq = log_softmax(test);
    for (int64_t i = 0; i < n_vocab; ++i) total += std::exp(lp[i]) * (lp[i] - lq[i]);
  }
  return total / rows;
}

}  // namespace saker::testing
