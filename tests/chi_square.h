#pragma once
// Two-sample chi-square test on category counts, for the tests that compare speculative sampling with plain
// sampling: are two samples of tokens drawn from the same distribution?
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace saker::testing {

// P(X > x) for X ~ chi-square with `df` degrees of freedom: the regularized upper incomplete gamma function
// Q(df / 2, x / 2), by its power series below a + 1 and its continued fraction (modified Lentz) above.
inline double chi_square_p_value(double x, int64_t df) {
  if (df <= 0) return 1.0;
  if (x <= 0) return 1.0;
  const double a = 0.5 * static_cast<double>(df), z = 0.5 * x;
  const double log_prefix = a * std::log(z) - z - std::lgamma(a);
  if (z < a + 1) {  // P(a, z) = e^-z z^a / Gamma(a) * sum z^n / (a (a+1) ... (a+n))
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000 && std::abs(term) > 1e-16 * std::abs(sum); ++n) {
      term *= z / (a + n);
      sum += term;
    }
    return std::max(0.0, 1.0 - std::exp(log_prefix) * sum);
  }
  // Q(a, z) = e^-z z^a / Gamma(a) * 1 / (z + 1 - a - 1 (1 - a) / (z + 3 - a - 2 (2 - a) / (z + 5 - a - ...)))
  const double tiny = 1e-300;
  double b = z + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-15) break;
  }
  return std::min(1.0, std::exp(log_prefix) * h);
}

struct ChiSquare {
  double statistic = 0;
  int64_t df = 0;
  double p_value = 1;
  int64_t categories = 0;  // after pooling
};

// Two samples of category ids (tokens). Categories whose expected count is under `min_expected` in either
// sample are pooled into one (dropped if the pool itself stays under it), as the test's approximation needs.
inline ChiSquare chi_square_two_samples(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                        double min_expected = 5.0) {
  std::map<int32_t, std::pair<double, double>> counts;
  for (int32_t x : a) counts[x].first += 1;
  for (int32_t x : b) counts[x].second += 1;
  const double share = static_cast<double>(std::min(a.size(), b.size())) / static_cast<double>(a.size() + b.size());
  std::vector<std::pair<double, double>> cells;
  std::pair<double, double> pooled{0, 0};
  for (const auto& [id, c] : counts) {
    if ((c.first + c.second) * share < min_expected) {
      pooled.first += c.first;
      pooled.second += c.second;
    } else {
      cells.push_back(c);
    }
  }
  if ((pooled.first + pooled.second) * share >= min_expected) cells.push_back(pooled);
  // The table is the cells kept: a pool too small to keep leaves the totals too.
  double na = 0, nb = 0;
  for (const auto& [ca, cb] : cells) {
    na += ca;
    nb += cb;
  }
  const double n = na + nb;
  ChiSquare r;
  r.categories = static_cast<int64_t>(cells.size());
  for (const auto& [ca, cb] : cells) {
    const double total = ca + cb;
    const double ea = total * na / n, eb = total * nb / n;
    r.statistic += (ca - ea) * (ca - ea) / ea + (cb - eb) * (cb - eb) / eb;
  }
  r.df = std::max<int64_t>(0, r.categories - 1);
  r.p_value = chi_square_p_value(r.statistic, r.df);
  return r;
}

}  // namespace saker::testing
